"""The C hot path (lazycv/_hotpath.c) against the Python functions it mirrors: the same call
signatures, the same Node (fields, recording tokens, the memory's reader index), the same lazy
GpuMat. Skipped where the extension was not built (no C compiler at install); the rest of the
suite runs on whichever path is active."""
import weakref

import cv2
import numpy as np
import pytest

import lazycv
from lazycv import ir, recipes, runtime, streams
from lazycv.facade.gpumat import GpuMat

from .conftest import upload

hot = pytest.importorskip("lazycv._hotpath", reason="the C extension was not built (no compiler at install)")


@pytest.fixture(autouse=True)
def bound():
    """The extension bound to lazycv's classes, also when LAZYCV_HOTPATH=0 leaves it unused;
    the pending lists of threads an earlier test ended dropped (flush_alone serves a thread
    whose results are all there is, and leaves the rest to the Python path)."""
    hot.bind(ir.Node, ir.Source, GpuMat, ir.Recording, ir, runtime, recipes._PLAIN)
    hot.bind_recipes(recipes.Recipe, recipes, streams, recipes._RECIPES, recipes._MISS, recipes._RUN)
    with runtime.STATE.lock:
        runtime.live_pending(everyone=False)
    yield


def _mats():
    a = upload(np.zeros((4, 5, 3), np.uint8))
    b = upload(np.zeros((4, 5), np.float32))
    return a, b, cv2.cuda.add(a, 1)


@pytest.mark.parametrize("case", range(12))
def test_signature_equals_the_python_one(case):
    a, b, lazy = _mats()
    cases = [
        ((a, (0.5, 0.25, 0.125)), {}),
        ((a, a), {}),
        ((a, b, lazy, a), {}),
        ((a, 0.0), {}), ((a, -0.0), {}), ((a, (0.0, -0.0, 1)), {}), ((a, (False, 0, 2.5)), {}),
        ((a, 3, True, None, "x"), {"interpolation": 1, "beta": -0.0}),
        ((a, float("nan")), {}),
        ((a, [1, 2]), {}),                      # a list: not covered
        ((a, (1, [2])), {}),                    # a tuple holding a list: not covered
        ((a,), {"dst": b}),                     # a GpuMat by keyword
    ]
    args, kw = cases[case]
    want = recipes.signature(args, kw, GpuMat)
    got = hot.signature(args, kw)
    assert (got is None) == (want is None)
    if want is not None:
        assert repr(got) == repr(want)          # (repr: nan != nan)
        assert hash(got) == hash(want) or got != got


def test_a_signature_matches_exactly_the_calls_that_make_it():
    """hot_call's check of a function's last recipe (signature_matches) against the recipe
    table's key comparison: each call's arguments match another call's signature exactly when
    the two signatures are equal keys (NaN only as the same object, as a dict finds it)."""
    a, b, lazy = _mats()
    c = upload(np.zeros((4, 5, 3), np.uint8))
    big = upload(np.zeros((5, 4, 3), np.uint8))
    nan = float("nan")
    calls = [
        ((a, (0.5, 0.25, 0.125)), {}), ((a, (0.5, 0.25, 0.0)), {}), ((a, (0.5, 0.25, -0.0)), {}),
        ((a, (0.5, 0.25)), {}), ((a, (1, 0.25, 0.125)), {}), ((a, (True, 0, 2.5)), {}),
        ((a, (1, 0, 2.5)), {}), ((c, (0.5, 0.25, 0.125)), {}), ((big, (0.5, 0.25, 0.125)), {}),
        ((a, a), {}), ((a, c), {}), ((c, a), {}), ((a, b, lazy, a), {}), ((a, b, lazy, b), {}),
        ((a, 0.0), {}), ((a, -0.0), {}), ((a, 0), {}), ((a, False), {}), ((a, 1.0), {}), ((a, 1), {}),
        ((a, nan), {}), ((a, float("nan")), {}),
        ((a, 3, True, None, "x"), {"interpolation": 1, "beta": -0.0}),
        ((a, 3, True, None, "x"), {"interpolation": 1, "beta": 0.0}),
        ((a, 3, True, None, "y"), {"interpolation": 1, "beta": -0.0}),
        ((a, 3, True, None, "x"), {"beta": -0.0, "interpolation": 1}),
        ((a, 3, True, None, "x"), {"interpolation": 1}),
        ((a, 3, True, None), {"interpolation": 1, "beta": -0.0}),
        ((a,), {"dst": b}), ((a,), {"dst": c}), ((a,), {"stream": b}), ((a, b), {}),
    ]
    sigs = [recipes.signature(args, kw, GpuMat) for args, kw in calls]
    matched = 0
    for sig in sigs:
        for (args, kw), other in zip(calls, sigs):
            want = sig == other                     # (identity first, as a dict's look-up)
            assert hot.signature_matches(sig, args, kw or None) is want, (sig, args, kw)
            matched += want
    assert matched > len(calls)                 # (NaN matches its own object: not every pair differs)
    assert hot.signature_matches(sigs[0], calls[0][0] + (1,), None) is False      # an argument more
    assert hot.signature_matches(sigs[0], calls[0][0][:1], None) is False         # one fewer


def test_a_function_replays_its_last_recipe_until_the_recipes_are_forgotten():
    """The last recipe a function replayed serves its next call with the same signature, and
    only that: a call with other scalars or another size takes its own, and recipes.forget()
    (new settings) drops it with the table."""
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    big = upload(np.arange(90, dtype=np.uint8).reshape(6, 5, 3))
    host = np.arange(60, dtype=np.uint8).reshape(4, 5, 3)

    def want(h, s):
        return cv2.add(h, np.broadcast_to(np.uint8(s), h.shape))
    for i in range(8):                          # one function, two sizes and two scalars in turn
        s = (1, 2, 3) if i % 2 else (4, 5, 6)
        np.testing.assert_array_equal(cv2.cuda.add(a, s).download(), want(host, s))
        np.testing.assert_array_equal(cv2.cuda.add(big, s).download(), want(big.download(), s))
    recipes.forget()
    assert not recipes._RECIPES
    np.testing.assert_array_equal(cv2.cuda.add(a, (1, 2, 3)).download(), want(host, (1, 2, 3)))
    assert not recipes._RECIPES                 # (noted once: not replayed from a kept recipe)


def test_a_loop_of_changing_sizes_replays_each_calls_recipe_by_its_place():
    """A frame loop whose resize changes size call by call (W3's crops) replays each call's
    recipe by its place in the recording (the function's last recipe never fits; the multiply
    after it takes its last), computes
    what CPU OpenCV computes, still does when the crops come in another order (a place's
    recipe that does not fit is not taken), and forgets the places with the recipes."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: recipes are replayed in Python")
    host = np.arange(24 * 30 * 3, dtype=np.uint8).reshape(24, 30, 3)
    g = upload(host)
    rois = [(0, 0, 7, 5), (3, 2, 11, 9), (10, 4, 6, 13), (1, 8, 17, 6), (12, 10, 9, 11)]

    def frame(order):
        outs = [cv2.cuda.multiply(cv2.cuda.resize(cv2.cuda_GpuMat(g, roi), (6, 4)), (2, 2, 2)) for roi in order]
        lazycv.materialize(*outs)
        for (x, y, w, h), o in zip(order, outs):
            want = cv2.resize(host[y:y + h, x:x + w], (6, 4))
            np.testing.assert_array_equal(o.download(), cv2.multiply(want, np.full_like(want, 2)))

    def hits(order):
        before = hot.recipe_hits()
        frame(order)
        return {k: v - before[k] for k, v in hot.recipe_hits().items()}
    recipes.forget()
    for _ in range(3):                           # (each signature noted, then captured)
        frame(rois)
    steady = hits(rois)
    assert steady["place"] >= len(rois) - 1     # (two places may share a slot of the table)
    assert steady["last"] == len(rois)          # (multiply: its last recipe every call)
    moved = hits(rois[1:] + rois[:1])            # (every crop at another place)
    assert moved["place"] == 0 and moved["table"] == len(rois)
    recipes.forget()
    assert hits(rois)["place"] == 0


def _record(make, inputs_of):
    """A fresh recording; ``make`` builds three nodes over one frame; returns what they did."""
    g = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    src = g._value()
    op = cv2.cuda.add(g, 1)._node.op
    runtime.flush()
    ir.new_recording()
    rec = ir.recording()
    n1 = make(op, (src,), ("add", "ms", "i", False), (1.0, 1.0, 1.0, 1.0, 0.0), 4, 5, 0, 3)
    n2 = make(op, (n1, src), ("add", "mm", "i", False), (1.0, 0.0, 0.0, 0.0, 0.0), 4, 5, 0, 3)
    n3 = make(op, (n2,), ("add", "ms", "i", False), (1.0, 2.0, 2.0, 2.0, 0.0), 4, 5, 0, 3)
    nodes = [n1, n2, n3]
    fields = [(n.op, n.inputs == inputs_of(n, nodes, src), n.static, n.dyn, n.rows, n.cols, n.depth, n.cn,
               n.result, n.height, n.rgen == rec.gen, n.rpos) for n in nodes]
    readers = [r() for r in ir.READERS.get(id(src.buf), [])]
    return fields, [t[1:] for t in rec.tokens], [nodes.index(r) for r in readers if r in nodes], \
        [n.seq for n in nodes] == sorted(n.seq for n in nodes)


def test_node_equals_the_python_one():
    def inputs_of(n, nodes, src):
        return n.inputs
    want = _record(ir.Node, inputs_of)
    got = _record(hot.node, inputs_of)
    assert got == want
    assert want[2] == [0, 1]                   # both nodes that read the frame are its readers


def test_first_seen_numbers_memory_as_the_python_one():
    """Sources of three buffers, one read twice through two views and one whose id came back
    for new memory: the same tokens, buffer numbers and positions from the C first read."""
    def run(make):
        a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
        b = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
        op = cv2.cuda.add(a, 1)._node.op
        runtime.flush()
        ir.new_recording()
        rec = ir.recording()
        views = [GpuMat(a, (0, 0, 2, 2)), GpuMat(b, (1, 1, 2, 2)), GpuMat(a, (3, 2, 2, 2))]
        srcs = [v._value() for v in views]
        for s in srcs:
            make(op, (s,), ("add", "ms", "i", False), (1.0, 1.0, 1.0, 1.0, 0.0), 2, 2, 0, 3)
        gone = ir.Source(np.zeros((2, 6), np.uint8), 0, 0, 2, 2, 0, 3)
        rec.bufs[id(gone.buf)] = (7, weakref.ref(np.zeros(1)))      # an id whose memory is gone
        make(op, (gone,), ("add", "ms", "i", False), (1.0, 1.0, 1.0, 1.0, 0.0), 2, 2, 0, 3)
        return ([t for t in rec.tokens if len(t) == 5], rec.nbufs,
                [(s.rgen == rec.gen, s.rpos) for s in srcs + [gone]])
    want = run(ir.Node)
    assert run(hot.node) == want
    assert [t[0] for t in want[0]] == [0, 1, 0, 2] and want[1] == 3


def _field(m, name):
    """A GpuMat field, comparable between two constructions (a lazy crop's node by content)."""
    v = getattr(m, name)
    if isinstance(v, ir.Node):
        return (v.op, v.inputs, v.static, v.dyn, v.rows, v.cols, v.depth, v.cn)
    return len(v) if name == "_views" and v is not None else v


def test_crop_constructor_equals_the_python_one():
    """GpuMat(m, roi) set in C (lazycv._hotpath.Init) gives the fields the Python __init__ gives,
    and leaves to it what it does not cover (a pending parent, numpy ints, errors, empties)."""
    if not isinstance(vars(GpuMat)["__init__"], hot.Init):
        pytest.skip("LAZYCV_HOTPATH=0: GpuMat.__init__ is Python")
    python_init = GpuMat.__init__.__wrapped__
    fields = GpuMat.__slots__[:-1]
    frame = upload(np.arange(6 * 10 * 3, dtype=np.uint8).reshape(6, 10, 3))
    view = GpuMat(frame, (1, 2, 8, 4))
    pending = cv2.cuda.add(frame, 1)

    class Sub(GpuMat):
        __slots__ = ("tag",)
    cases = [(frame, (2, 1, 3, 4)), (view, (1, 1, 5, 2)), (frame, (0, 0, 10, 6)), (pending, (1, 1, 2, 2)),
             (frame, (np.int64(1), 0, 2, 2)), (frame, (1, 1, 0, 2)), (frame, (8, 1, 3, 4)), (frame, (-1, 0, 2, 2)),
             (frame, (1, 1, 2)), (frame, [1, 1, 2, 2]), (GpuMat(), (0, 0, 1, 1))]
    for m, roi in cases:
        for cls in (GpuMat, Sub):
            got, want = cls.__new__(cls), cls.__new__(cls)
            errors = []
            for obj, init in ((got, GpuMat.__init__), (want, python_init)):
                try:
                    init(obj, m, roi)
                    errors.append(None)
                except cv2.error as e:
                    errors.append(str(e))
            assert errors[0] == errors[1], (roi, errors)
            if errors[0] is None:
                assert [_field(got, f) for f in fields] == [_field(want, f) for f in fields], roi
    np.testing.assert_array_equal(GpuMat(view, (1, 1, 5, 2)).download(), frame.download()[3:5, 2:7])


def test_a_fill_read_again_in_a_recording_is_its_one_node():
    """A setTo-filled GpuMat (a std image) read by every frame of a recording is one fill node
    (the C read answers as GpuMat._constant does); a write into it ends that."""
    recipes.bind(GpuMat)
    std = GpuMat(4, 5, cv2.CV_32FC3)
    std.setTo((0.5, 0.25, 2.0))
    frames = [upload(np.full((4, 5, 3), i, np.float32)) for i in range(4)]
    runtime.flush()
    ir.new_recording()
    outs = [cv2.cuda.divide(f, std) for f in frames]
    fills = {id(o._node.inputs[1]) for o in outs}
    assert len(fills) == 1 and std._value() is outs[0]._node.inputs[1]
    first = outs[0]._node.inputs[1]
    lazycv.materialize(outs)                    # a new recording: its first read makes a new node
    again = cv2.cuda.divide(frames[1], std)
    fill = again._node.inputs[1]
    assert fill is not first and fill is std._alloc.constant[4] and std._value() is fill
    assert (fill.op, fill.inputs, fill.static, fill.dyn, fill.rows, fill.cols, fill.depth, fill.cn) == \
        (first.op, (), first.static, first.dyn, 4, 5, cv2.CV_32F, 3)
    np.testing.assert_allclose(again.download(), np.full((4, 5, 3), 1, np.float32) / np.float32([0.5, 0.25, 2.0]))
    std.setTo((1.0, 1.0, 1.0))
    after = cv2.cuda.divide(frames[0], std)
    assert after._node.inputs[1] is not fill
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.download(), np.full((4, 5, 3), i, np.float32) / np.float32([0.5, 0.25, 2.0]))
    np.testing.assert_array_equal(after.download(), np.zeros((4, 5, 3), np.float32))


def test_a_node_reading_a_computed_result_reads_its_memory():
    a = upload(np.full((3, 4), 5, np.uint8))
    r = cv2.cuda.add(a, 1)
    lazycv.materialize(r)                      # r's node now has a result
    computed = cv2.cuda.add(a, 1)._node
    lazycv.materialize(cv2.cuda.add(a, 1))
    for make in (ir.Node, hot.node):
        n = make(computed.op, (computed,), computed.static, computed.dyn, 3, 4, 0, 1)
        assert n.height == (0 if computed.result is not None else computed.height + 1)


def test_lazy_equals_the_python_one():
    a = upload(np.zeros((3, 4), np.uint8))
    nd = cv2.cuda.add(a, 1)._node
    before = len(runtime.THREAD.pending), runtime.STATE.since_flush
    m1, m2 = GpuMat._lazy(nd), hot.lazy(GpuMat, nd)
    for m in (m1, m2):
        assert (m._alloc, m._y0, m._x0, m._rows, m._cols, m._depth, m._cn, m._node, m._src, m._parent,
                m._views, m._stream) == (None, 0, 0, 3, 4, 0, 1, nd, None, None, None, None)
        assert type(m) is GpuMat
    assert len(runtime.THREAD.pending) == before[0] + 2 and runtime.STATE.since_flush == before[1] + 2
    assert runtime.THREAD.pending[-1]() is m2
    np.testing.assert_array_equal(m2.download(), np.ones((3, 4), np.uint8))


def test_lazy_flushes_past_the_auto_flush_limit(monkeypatch):
    a = upload(np.zeros((3, 4), np.uint8))
    nd = cv2.cuda.add(a, 1)._node
    flushes = []
    monkeypatch.setattr(runtime, "AUTO_FLUSH_OPS", 0)
    monkeypatch.setattr(runtime, "flush", lambda *a, **k: flushes.append(1))
    hot.lazy(GpuMat, nd)
    assert flushes == [1]


def test_a_replayed_call_reads_the_settings_as_they_are_now(monkeypatch):
    """The C replay keeps what it reads of the modules (recipes.ENABLED and CHECK,
    runtime.AUTO_FLUSH_OPS, streams.RECORD_ON, STATE.any_shared) until one of their dicts
    changes: a setting changed between two replayed calls applies to the second."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: recipes are replayed in Python")
    a = upload(np.zeros((3, 4), np.uint8))
    for _ in range(4):                                   # (noted, captured, replayed)
        cv2.cuda.add(a, 1)

    def replayed():
        before = hot.recipe_hits()
        r = cv2.cuda.add(a, 1)
        return r, sum(hot.recipe_hits().values()) - sum(before.values())
    assert replayed()[1] == 1
    monkeypatch.setattr(recipes, "CHECK", True)          # checked in Python: not replayed in C
    assert replayed()[1] == 0
    monkeypatch.setattr(recipes, "CHECK", False)
    monkeypatch.setattr(recipes, "ENABLED", False)
    assert replayed()[1] == 0
    monkeypatch.setattr(recipes, "ENABLED", True)
    assert replayed()[1] == 1
    flushes = lazycv.stats()["flushes"]
    monkeypatch.setattr(runtime, "AUTO_FLUSH_OPS", 0)    # each call flushes
    r, n = replayed()
    assert n == 1 and lazycv.stats()["flushes"] > flushes and r._node is None
    monkeypatch.setattr(runtime, "AUTO_FLUSH_OPS", 20000)
    s = cv2.cuda.Stream()
    with streams.on_stream(s):
        r, n = replayed()
    assert n == 1 and r._stream is s
    assert replayed()[0]._stream is None
    np.testing.assert_array_equal(r.download(), np.ones((3, 4), np.uint8))


def test_bad_arguments_raise_instead_of_crashing():
    with pytest.raises(TypeError):
        hot.node(None, [1], (), (), 1, 1, 0, 1)          # inputs must be a tuple
    with pytest.raises(TypeError):
        hot.node(None, (object(),), (), (), 1, 1, 0, 1)  # an input that is no value
    with pytest.raises(TypeError):
        hot.lazy(GpuMat, object())
    with pytest.raises(TypeError):
        hot.signature((1,))


def test_nodes_are_collected():
    a = upload(np.zeros((3, 4), np.uint8))
    nd = cv2.cuda.add(a, 1)._node
    n = hot.node(nd.op, (nd,), nd.static, nd.dyn, 3, 4, 0, 1)
    ref = weakref.ref(n)
    del n
    runtime.flush()
    ir.new_recording()
    import gc
    gc.collect()
    assert ref() is None


def test_replayed_calls_leave_their_acyclic_objects_out_of_the_cyclic_gc():
    """What a replay makes that cannot be in a reference cycle — the node (of plain static and
    dynamic values), its inputs tuple, its recording token and weak references — is left out
    of the cyclic GC, whose full collections those objects would otherwise trigger (issue #22:
    linear recording), and so is the lazy GpuMat of such a node; a node holding an object stays
    tracked, and so does a GpuMat that swap may hand a view's parent."""
    import gc
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: the replay runs in Python")
    recipes.bind(GpuMat)
    a = upload(np.zeros((4, 5, 3), np.uint8))
    for _ in range(3):                        # noted, captured, replayed
        m = cv2.cuda.add(a, (1, 2, 3))
    n = m._node
    rec = ir.recording()
    token = rec.tokens[n.rpos]
    assert not gc.is_tracked(n) and not gc.is_tracked(n.inputs)
    assert not gc.is_tracked(token) and not gc.is_tracked(token[-1])
    assert not gc.is_tracked(rec.objs[n.rpos])
    assert not gc.is_tracked(runtime.THREAD.pending[-1]) and runtime.THREAD.pending[-1]() is m
    assert not gc.is_tracked(m)
    held = hot.node(n.op, n.inputs, (object(),), n.dyn, 4, 5, 0, 3)
    assert gc.is_tracked(held) and gc.is_tracked(rec.tokens[held.rpos])
    assert gc.is_tracked(hot.lazy(GpuMat, held))
    np.testing.assert_array_equal(m.download(), np.broadcast_to(np.uint8([1, 2, 3]), (4, 5, 3)))
    other = cv2.cuda.add(a, (1, 2, 3))
    assert not gc.is_tracked(other)
    other.swap(m)
    assert gc.is_tracked(m) and gc.is_tracked(other)


def test_a_swap_that_makes_a_lazy_result_its_own_views_parent_is_collected():
    """A lazy result out of the cyclic GC that takes its own view's parent through swap refers
    to itself; swap tracks it again, so the cycle is collected once the user lets go."""
    import gc
    import weakref
    recipes.bind(GpuMat)
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    for _ in range(3):
        m = cv2.cuda.add(a, (1, 2, 3))
    view = cv2.cuda_GpuMat(m, (0, 0, 2, 2))
    m.swap(view)                       # m now holds the view's fields: a parent, itself
    assert m._parent is not None and m._parent[0] is m
    gone = weakref.ref(m)
    del m, view
    gc.collect()
    assert gone() is None


def _finish_state(use_c, monkeypatch):
    """A flush's end run by program._FlushProgramBase._finish (C or Python): three pending
    sinks, two sharing an output; one a fill, one with a pending view."""
    from lazycv.program import _FlushProgramBase
    monkeypatch.setattr(runtime, "HOTPATH", hot if use_c else None)
    a = upload(np.arange(12, dtype=np.uint8).reshape(3, 4))
    plain, shared = cv2.cuda.add(a, 1), cv2.cuda.add(a, 2)
    filled = GpuMat._lazy(cv2.cuda_GpuMat(3, 4, cv2.CV_8UC1, 7)._node)      # a fill's result
    view = cv2.cuda_GpuMat(shared, (1, 0, 2, 2))            # a pending view follows its parent
    mats = [plain, shared, filled]
    nodes = [m._node for m in mats]
    be = runtime.backend()
    bufs = [be.alloc(3, 4, np.uint8) for _ in range(3)]
    prog = _FlushProgramBase.__new__(_FlushProgramBase)
    prog.binds, prog.ops_fused = [(0, 0), (1, 1), (2, 2)], 0
    computed_before = list(runtime.STATE.computed)
    prog._finish(nodes, bufs, mats)
    added = runtime.STATE.computed[len(computed_before):]
    state = [(m._alloc.buf is bufs[i], m._y0, m._x0, m._node, m._src, m._parent, type(m._alloc).__name__,
              m._alloc.writers, m._alloc.exported, m._alloc.constant is not None, m._alloc.cols, m._alloc.foreign,
              m._alloc.device) for i, m in enumerate(mats)]
    results = [(n.result.buf is bufs[i], n.result.y0, n.result.x0, n.result.rows, n.result.cols, n.result.depth,
                n.result.cn, n.result.rgen) for i, n in enumerate(nodes)]
    moved = (view._alloc is shared._alloc, view._y0, view._x0, view._node, view._parent, shared._views)
    assert filled._alloc.constant is not None and moved[0]
    del runtime.STATE.computed[len(computed_before):]
    return state, results, [n is m for n, m in zip(added, nodes)], moved


def test_finish_equals_the_python_one(monkeypatch):
    assert _finish_state(True, monkeypatch) == _finish_state(False, monkeypatch)


def test_let_go_equals_the_python_one(monkeypatch):
    """runtime._let_go_of_history (C or Python): computed nodes drop their inputs, and one that
    a pending node still takes as an input becomes a reader of its memory; one nothing else
    holds does not."""
    def run(use_c):
        monkeypatch.setattr(runtime, "HOTPATH", hot if use_c else None)
        a = upload(np.zeros((3, 4), np.uint8))
        kept, alone = cv2.cuda.add(a, 1), cv2.cuda.add(a, 2)
        consumer = cv2.cuda.add(kept, 1)                    # holds kept's node
        bufs = []
        for m in (kept, alone):
            bufs.append(runtime.backend().alloc(3, 4, np.uint8))
            m._node.result = ir.Source(bufs[-1], 0, 0, 3, 4, 0, 1)
            runtime.STATE.computed.append(m._node)
            m._node = None                                  # (as a bound result lets go of it)
        refs = [weakref.ref(n) for n in runtime.STATE.computed]
        runtime._let_go_of_history()
        readers = [w() is not None and any(r() is w() for r in ir.READERS.get(id(b), [])) for b, w in zip(bufs, refs)]
        out = ([w().inputs if w() is not None else "gone" for w in refs], readers, runtime.STATE.computed == [])
        del consumer
        return out
    assert run(True) == run(False) == ([(), "gone"], [True, False], True)


def test_cv2_cuda_functions_are_the_c_wrapper_and_answer_as_the_python_one(monkeypatch):
    """ops.common.cuda_api's C wrapper (_hotpath.Api): the same results, errors and attributes
    as the Python wrapper it stands for, and the runtime lock released after every call."""
    import inspect
    import threading
    from lazycv.ops import common
    if recipes.API_TYPE is None:
        pytest.skip("LAZYCV_HOTPATH=0: cv2.cuda functions are Python wrappers")
    fn = cv2.cuda.add.__wrapped__
    assert type(cv2.cuda.add) is hot.Api and cv2.cuda.add.__name__ == "add" and cv2.cuda.add.__doc__ == fn.__doc__
    assert str(inspect.signature(cv2.cuda.add)) == str(inspect.signature(fn))
    monkeypatch.setattr(recipes, "API_TYPE", None)
    monkeypatch.setitem(common.API, "add", cv2.cuda.add)          # (put back after the test)
    monkeypatch.setitem(common.API, "resize", cv2.cuda.resize)
    py_add = common.cuda_api("add")(fn)
    py_resize = common.cuda_api("resize")(cv2.cuda.resize.__wrapped__)
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))

    def free():                                # (another thread can take the runtime lock)
        got = []
        t = threading.Thread(target=lambda: got.append(runtime.STATE.lock.acquire(timeout=5)) or
                             runtime.STATE.lock.release())
        t.start()
        t.join()
        return got == [True]
    for c_add, c_resize in ((cv2.cuda.add, cv2.cuda.resize), (py_add, py_resize)):
        outs = [c_add(a, (1, 2, 3)).download() for _ in range(4)]          # noted, captured, replayed
        outs += [c_resize(a, (3, 2), interpolation=cv2.INTER_NEAREST).download() for _ in range(4)]
        for want, got in zip([cv2.add(a.download(), (1, 2, 3, 0))] * 4 +
                             [cv2.resize(a.download(), (3, 2), interpolation=cv2.INTER_NEAREST)] * 4, outs):
            np.testing.assert_array_equal(got, want)
        for bad, match in (((a,), "missing"), ((a, 1, None, None, -1, None, 7), "positional"),
                           ((a, 1), "unexpected keyword")):
            kw = {"colour": 1} if match == "unexpected keyword" else {}
            with pytest.raises(cv2.error, match=match):
                c_add(*bad, **kw)
            assert free()
        with pytest.raises(cv2.error, match="out of range"):
            c_resize(a, (0, 0), fx=float("inf"), fy=1.0)
        assert free()


def _spying(served):
    """The extension's functions, with flush_alone's answers collected in ``served``."""
    from types import SimpleNamespace
    funcs = {n: getattr(hot, n) for n in dir(hot) if not n.startswith("_")}
    funcs["flush_alone"] = lambda req: served.append(hot.flush_alone(req)) or served[-1]
    funcs["flush_mats"] = hot.pending_of         # (runtime.flush then calls the spied flush_alone)
    return SimpleNamespace(**funcs)


def _program_loop(frames, batched):
    """Flushes a frame loop's results four times (a program serves the last ones): per flush,
    the results' pixels, and the counters the flush moved."""
    out = []
    for rep in range(4):
        before = lazycv.stats()
        if batched:                            # one flush for every frame (W1's loop)
            res = [cv2.cuda.split(cv2.cuda.multiply(cv2.cuda.add(f, (rep, 1, 2)), 0.5, dtype=cv2.CV_32F))
                   for f in frames]
            view = cv2.cuda_GpuMat(res[0][1], (1, 1, 2, 2))    # a pending view of a result
            dropped = [cv2.cuda.add(f, 3) for f in frames]     # results let go before the flush
            del dropped
            lazycv.materialize(res[:-1])       # asked for all but the last frame's (still flushed)
            got = [p.download() for r in res for p in r] + [view.download()]
        else:                                  # a flush a frame (W2)
            got = []
            for f in frames:
                r = cv2.cuda.split(cv2.cuda.multiply(cv2.cuda.add(f, (rep, 1, 2)), 0.5, dtype=cv2.CV_32F))
                lazycv.materialize(*r)
                got += [p.download() for p in r]
        after = lazycv.stats()
        out.append((got, {k: after[k] - before[k] for k in ("flushes", "program_hits", "plan_hits",
                                                            "kernels_launched", "ops_recorded", "ops_fused")}))
    return out


@pytest.mark.parametrize("batched", [False, True])
def test_flush_alone_equals_the_python_flush(monkeypatch, batched):
    """_hotpath.flush_alone computes the calling thread's flushes as runtime._flush
    does: the same pixels and the same counters, flush by flush."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: the flush runs in Python")
    recipes.bind(GpuMat)
    frames = [upload(np.full((4, 5, 3), 10 * i, np.uint8)) for i in range(3)]
    served = []
    monkeypatch.setattr(runtime, "HOTPATH", _spying(served))
    from lazycv.plancache import PlanCache

    def fresh():                               # (both runs start with nothing remembered)
        monkeypatch.setattr(runtime.STATE, "plans", PlanCache())
        recipes.forget()
    fresh()
    c = _program_loop(frames, batched)
    assert True in served, "no flush went through the C path"
    monkeypatch.setattr(runtime, "HOTPATH", None)
    fresh()
    py = _program_loop(frames, batched)
    for (got_c, counts_c), (got_py, counts_py) in zip(c, py):
        assert counts_c == counts_py
        for a, b in zip(got_c, got_py):
            np.testing.assert_array_equal(a, b)


def test_flush_alone_leaves_what_it_cannot_serve_to_python(monkeypatch):
    """Another thread's pending results or a pending write into memory: _hotpath.flush_alone
    answers False and changes nothing (the Python path computes the flush); a program that
    declines: the flush goes on through runtime._flush_planned. The results stay right."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: the flush runs in Python")
    recipes.bind(GpuMat)
    import threading
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    want = cv2.add(a.download(), (1, 2, 3, 0))

    def step():
        r = cv2.cuda.add(a, (1, 2, 3))
        lazycv.materialize(r)
        return r.download()
    for _ in range(3):                         # a program serves this flush now
        np.testing.assert_array_equal(step(), want)
    other = []
    t = threading.Thread(target=lambda: other.append(cv2.cuda.add(a, 1)))
    t.start()
    t.join()
    r = cv2.cuda.add(a, (1, 2, 3))
    assert hot.flush_alone([r]) is False and r._node is not None and other[0]._node is not None
    lazycv.materialize(r)
    np.testing.assert_array_equal(r.download(), want)
    np.testing.assert_array_equal(other[0].download(), cv2.add(a.download(), 1))
    into = upload(np.zeros((4, 5, 3), np.uint8))
    cv2.cuda.add(a, (1, 2, 3), dst=into)       # a pending write into memory
    r = cv2.cuda.add(a, (1, 2, 3))
    assert hot.flush_alone([r]) is False and r._node is not None
    lazycv.materialize(r)
    np.testing.assert_array_equal(into.download(), want)
    from lazycv import program
    for _ in range(3):
        step()
    monkeypatch.setattr(program.SingleFlushProgram, "run", lambda self, values, mats: False)
    served = []
    monkeypatch.setattr(runtime, "HOTPATH", _spying(served))
    for _ in range(2):
        np.testing.assert_array_equal(step(), want)
    assert served == [True, True]


def _structure(out):
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    mats = [o for o in outs if isinstance(o, GpuMat)]
    plain = [o for o in outs if not isinstance(o, GpuMat)]
    nodes = [(m._node.op, m._node.static, m._node.dyn, m._node.rows, m._node.cols, m._node.depth, m._node.cn,
              tuple(id(v) for v in m._node.inputs if v.is_source or v.seq < m._node.seq - 3),
              m._stream, m._rows, m._cols) for m in mats]
    return type(out), nodes, plain


@pytest.mark.parametrize("name", ["add", "split", "threshold", "resize_kw", "convertTo", "divide_const"])
def test_call_equals_the_python_replay(name):
    """_hotpath.call replays a recipe as recipes.replay does: the same nodes over the same
    argument values, the same result types and streams."""
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    std = cv2.cuda_GpuMat(4, 5, cv2.CV_8UC3)
    std.setTo((1, 2, 3))
    calls = {
        "add": (cv2.cuda.add, (a, (1, 2, 3)), {}),
        "split": (cv2.cuda.split, (a,), {}),
        "threshold": (cv2.cuda.threshold, (a, 100, 255, cv2.THRESH_BINARY), {}),
        "resize_kw": (cv2.cuda.resize, (a, (3, 2)), {"interpolation": cv2.INTER_NEAREST}),
        "convertTo": (None, (a, cv2.CV_32FC3), {"alpha": 0.5}),
        "divide_const": (cv2.cuda.divide, (a, std), {}),
    }
    fn, args, kw = calls[name]
    fn = fn.__wrapped__ if fn is not None else __import__("lazycv").ops.convert.convert_to
    recipes.forget()
    for _ in range(2):                                      # capture, then a recipe exists
        recipes.call(fn, args, dict(kw), GpuMat)
    recipe = recipes._RECIPES[(fn, recipes.signature(args, kw, GpuMat))]
    assert isinstance(recipe, recipes.Recipe)
    got = hot.call(fn, args, dict(kw))
    want = recipes.replay(recipe, args + tuple(kw.values()), GpuMat)
    assert got is not recipes._MISS and got is not recipes._RUN
    assert _structure(got) == _structure(want)
    ref = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got], ref):
        if isinstance(w, GpuMat):
            np.testing.assert_array_equal(g.download(), w.download())
        else:
            assert g == w


def test_call_leaves_checks_and_new_signatures_to_python_and_reads_shared_memory_at_once(monkeypatch):
    recipes.forget()
    a = upload(np.zeros((3, 4), np.uint8))
    fn = cv2.cuda.add.__wrapped__
    assert hot.call(fn, (a, 7), {}) is recipes._RUN            # seen the first time: noted
    key = (fn, hot.signature((a, 7), {}))
    assert key in recipes._NOTED and key not in recipes._RECIPES
    assert hot.call(fn, (a, 7), {}) is recipes._MISS             # seen, not captured yet
    recipes.call(fn, (a, 7), {}, GpuMat)                         # captured
    assert hot.call(fn, (a, np.int64(7)), {}) is recipes._RUN    # an argument recipes do not cover
    assert hot.call(fn, (a, 7), {}) not in (recipes._MISS, recipes._RUN)
    monkeypatch.setattr(recipes, "CHECK", True)
    assert hot.call(fn, (a, 7), {}) is recipes._MISS
    monkeypatch.setattr(recipes, "CHECK", False)
    a.cudaPtr()                                                  # a's memory is shared now
    out = hot.call(fn, (a, 7), {})
    assert out._node is None                                     # computed at the call, as OpenCV would
    np.testing.assert_array_equal(out.download(), np.full((3, 4), 7, np.uint8))


def test_pending_of_gathers_as_materialize_does_in_python():
    """lazycv.materialize's C gathering: nested lists and tuples flattened in order, other
    objects skipped, each pending GpuMat once; None (Python decides) where memory has a
    pending write."""
    a = upload(np.zeros((3, 4), np.uint8))
    p1, p2, p3 = cv2.cuda.add(a, 1), cv2.cuda.add(a, 2), cv2.cuda.add(a, 3)
    mats = (p2, [p1, (p3, [p2]), a, 5, "x"], GpuMat())
    assert hot.pending_of(mats) == runtime.pending_for([p2, p1, p3, p2, a]) == [p2, p1, p3]
    target = upload(np.zeros((3, 4), np.uint8))
    cv2.cuda.add(a, 4, dst=target)                 # a pending write into target's memory
    assert target._alloc.writers and hot.pending_of((p1, target)) is None
    lazycv.materialize(p1, [target])
    np.testing.assert_array_equal(target.download(), np.full((3, 4), 4, np.uint8))
    np.testing.assert_array_equal(p1.download(), np.ones((3, 4), np.uint8))


def test_loose_tokens_equal_the_python_ones():
    """plancache.loose_tokens in C: the same loose tokens (or None) as the Python function, on
    recordings of crops read by a resize, also read pixel for pixel, and of no memory."""
    from lazycv.plancache import loose_tokens
    frame = upload(np.arange(30 * 40 * 3, dtype=np.uint8).reshape(30, 40, 3))
    cases = []
    for build in (lambda c: [cv2.cuda.resize(c, (8, 6))],
                  lambda c: [cv2.cuda.resize(c, (8, 6)), cv2.cuda.add(c, 1)],
                  lambda c: [cv2.cuda.warpAffine(c, np.float64([[1, 0, 1], [0, 1, 2]]), (5, 4)),
                             cv2.cuda.resize(cv2.cuda.add(c, 1), (3, 3))]):
        runtime.flush()
        ir.new_recording()
        keep = [build(GpuMat(frame, (1 + i, 2, 10 + i, 9))) for i in range(3)]
        cases.append(list(ir.recording().tokens))
        del keep
    cases.append([])
    for tokens in cases:
        assert hot.loose_tokens(tokens) == loose_tokens(tokens)
        assert hot.loose_tokens(tuple(tokens)) == loose_tokens(tuple(tokens))
    assert loose_tokens(cases[0]) is not None and loose_tokens(cases[1]) is None


def test_result_allocations_stay_out_of_the_cyclic_gc_until_a_write_joins_them():
    """A flush's result memory (Allocation) is made untracked by the C finish — it refers to
    memory and plain values — and tracked again once a pending write joins it (a write's
    stand-in GpuMat refers back to it); a cycle through a stand-in is still collected."""
    import gc
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: the flush binds results in Python")
    recipes.bind(GpuMat)
    a = upload(np.zeros((4, 5, 3), np.uint8))
    for _ in range(4):                          # noted, captured, replayed; the flush a program
        r = cv2.cuda.add(a, (1, 2, 3))
        lazycv.materialize(r)
    alloc = r._alloc
    assert alloc.writers == () and not gc.is_tracked(alloc)
    cv2.cuda_GpuMat(r, (1, 1, 2, 2)).setTo((9, 9, 9))      # a temporary view's pending write
    assert alloc.writers and gc.is_tracked(alloc)
    ref = weakref.ref(alloc)
    alloc.writers[0].handle(alloc)              # (the stand-in: a cycle through the allocation)
    del alloc, r
    gc.collect()
    assert ref() is None


def last_program_run(monkeypatch, kind):
    """From a fresh plan cache, the last run of a flush program class: {"prog", "values"}."""
    from lazycv import program
    from lazycv.plancache import PlanCache
    recipes.bind(GpuMat)
    monkeypatch.setattr(runtime.STATE, "plans", PlanCache())
    got = {}
    cls = getattr(program, kind)
    real = cls.run

    def spy(self, values, mats):
        got["prog"], got["values"] = self, values
        return real(self, values, mats)
    monkeypatch.setattr(cls, "run", spy)
    return got


def test_fills_equal_the_python_ones(monkeypatch):
    """A batched flush program's table fills (ROI offsets, ints, floats as bytes — -0.0 apart
    from 0.0) from _hotpath.fills equal FlushProgram._py_fills's; a gone value raises
    AttributeError in both (the program then declines)."""
    got = last_program_run(monkeypatch, "FlushProgram")
    frame = upload(np.arange(20 * 24 * 3, dtype=np.uint8).reshape(20, 24, 3))
    for it in range(3):
        outs = [cv2.cuda.split(cv2.cuda.subtract(
                    cv2.cuda.resize(GpuMat(frame, (i + it, i, 6 + i, 5)), (4, 3)).convertTo(cv2.CV_32FC3, alpha=0.5),
                    (-0.0, 0.25 * it, 1.5))) for i in range(3)]
        lazycv.materialize(outs)
    prog, values = got["prog"], got["values"]
    want = prog._py_fills(values)
    assert hot.fills(values, prog.src_fills, prog.int_fills, prog.float_fills) == want == prog._fills(values)
    assert any(isinstance(f, bytes) for f in want) and any(isinstance(f, list) for f in want)
    gone = list(values)
    gone[prog.src_fills[0][4][0]] = None
    for fn in (prog._py_fills, lambda v: hot.fills(v, prog.src_fills, prog.int_fills, prog.float_fills)):
        with pytest.raises(AttributeError):
            fn(gone)


def test_values_of_equals_the_python_loop():
    """ir.Recording.values in C: the recorded values by position, None where one is gone."""
    runtime.flush()
    ir.new_recording()
    a = upload(np.zeros((3, 4), np.uint8))
    kept = cv2.cuda.add(a, 1)
    dropped = cv2.cuda.add(kept, 2)
    rec = ir.recording()
    del dropped
    want = [r() for r in rec.objs]
    assert hot.values_of(rec.objs) == want and rec.values() == want
    assert None in want and kept._node in want


def test_single_args_equal_the_python_ones(monkeypatch):
    """A one-kernel flush program's launch arguments (sources' buffers and offsets, scalars
    converted — np.float32 among them —, outputs at (0, 0)) from _hotpath.single_args equal
    SingleFlushProgram._py_args's; a gone value, or a value of the wrong kind, gives None in
    both (the program then declines)."""
    got = last_program_run(monkeypatch, "SingleFlushProgram")
    frame = upload(np.arange(20 * 24 * 3, dtype=np.uint8).reshape(20, 24, 3))
    for it in range(3):
        f = cv2.cuda.resize(GpuMat(frame, (it, 1, 12, 9)), (4, 3)).convertTo(cv2.CV_32FC3, alpha=0.5)
        lazycv.materialize(cv2.cuda.split(cv2.cuda.subtract(f, (-0.0, 0.25 * it, 1.5))))
    prog, values = got["prog"], got["values"]
    bufs = [object(), object()]
    want = prog._py_args(values, bufs)
    assert hot.single_args(values, prog.recipe, bufs, None) == want
    memo = [None] * len(prog.recipe)
    first = hot.single_args(values, prog.recipe, bufs, memo)
    again = hot.single_args(values, prog.recipe, bufs, memo)          # (converted scalars reused)
    assert first == again == want and any(m is not None for m in memo)
    assert [type(a) for a in first] == [type(a) for a in want]
    assert want[-6:] == (bufs[0], 0, 0, bufs[1], 0, 0)
    kinds = {type(a) for a in want}
    assert {int, float} <= kinds and any(s for s, *_ in prog.recipe) and not all(s for s, *_ in prog.recipe)
    src = next(p for s, p, *_ in prog.recipe if s)
    scalar = next(p for s, p, *_ in prog.recipe if not s)
    for p, v in ((src, None), (scalar, None), (src, values[scalar]), (scalar, values[src])):
        wrong = list(values)
        wrong[p] = v
        assert prog._py_args(wrong, bufs) is None and hot.single_args(wrong, prog.recipe, bufs, memo) is None


def test_single_args_memo_keeps_signed_zeros_and_new_values_apart():
    """A remembered conversion serves only the same float (by its bits): -0.0 after 0.0, and
    any new value, are converted anew."""
    node = ir.Node.__new__(ir.Node)
    recipe = ((False, 0, 0, np.float32),)
    memo = [None]
    for x in (0.5, 0.5, 0.0, -0.0, -0.0, 1e-3, float("nan"), float("nan"), 0.0):
        node.dyn = (x,)
        got, = hot.single_args([node], recipe, [], memo)
        assert type(got) is np.float32 and np.float32(x).tobytes() == got.tobytes()


class _Array:
    """Stands in for a device array: its cached launch parameters."""
    def __init__(self, params):
        self._lazycv_params = params


def test_launch_writes_the_slots_as_param_slots_does():
    """_hotpath.launch's slot writing (fn 0: written, not launched) equals ParamSlots.write's for
    ints, float64, float32 (signed zeros, NaN, inf) and arrays; arguments the Python path
    writes its own way (an array without cached parameters, an int past int64, a float32 past
    its range) give None and leave the launch to it."""
    from lazycv.backends.cuda import ParamSlots
    kinds = [None, "i", "f64", "f32", "f32", "i", None, "f32"]
    widths = [9, 1, 1, 1, 1, 1, 7, 1]
    arr2 = _Array((0, 0, 12, 4, 0xdeadbeef000, 3, 4, 16, 4))
    arr1 = _Array((0, 0, 5, 1, 4096, 5, 1))
    cases = [(arr2, -7, 0.1, 1.5, -0.0, 2 ** 62, arr1, float("nan")),
             (arr2, np.int32(3), np.float32(2.5), np.float64(1e30), float("inf"), 0, arr1, -3.25)]
    for args in cases:
        py, c = ParamSlots(kinds, widths), ParamSlots(kinds, widths)
        py.write(args)
        assert hot.launch(0, 0, 0, (1, 1, 1, 32, 4, 1), c.ints, c.pointers, c.codes, args) == 0
        assert c.ints.tobytes() == py.ints.tobytes()
    for bad in ((_Array((1, 2)),) + cases[0][1:], (object(),) + cases[0][1:],
                cases[0][:1] + (2 ** 63,) + cases[0][2:], cases[0][:3] + (1e39,) + cases[0][4:]):
        c = ParamSlots(kinds, widths)
        assert hot.launch(0, 0, 0, (1, 1, 1, 32, 4, 1), c.ints, c.pointers, c.codes, bad) is None


def test_a_launcher_writes_the_slots_as_launch_does():
    """_hotpath.Launcher (the fixed parts of one kernel's launch read once, the output size
    written first) writes what _hotpath.launch writes for the same values, gives None where
    launch does, and refuses a wrong argument count."""
    from lazycv.backends.cuda import ParamSlots
    kinds = ["i", "i", None, "i", "f64", "f32", None, "f32"]
    widths = [1, 1, 9, 1, 1, 1, 7, 1]
    arr2 = _Array((0, 0, 12, 4, 0xdeadbeef000, 3, 4, 16, 4))
    arr1 = _Array((0, 0, 5, 1, 4096, 5, 1))
    for rest in ((arr2, -7, 0.1, -0.0, arr1, float("nan")), (arr2, 2 ** 62, np.float64(1e30), 1.5, arr1, -3.25)):
        want, c = ParamSlots(kinds, widths), ParamSlots(kinds, widths)
        assert hot.launch(0, 0, 0, (1, 1, 1, 32, 4, 1), want.ints, want.pointers, want.codes, (6, 8) + rest) == 0
        launcher = hot.Launcher(0, 0, (1, 1, 1, 32, 4, 1), c.ints, c.pointers, c.codes, (6, 8))
        assert launcher(rest) == 0
        assert c.ints.tobytes() == want.ints.tobytes()
    assert launcher((object(),) + rest[1:]) is None
    with pytest.raises(ValueError, match="an argument per kind"):
        launcher(rest[:-1])


@pytest.mark.sim
def test_a_one_kernel_program_launches_through_the_backends_launcher(monkeypatch):
    """run_single launches W2's frame through the launcher the backend gave the program (CUDA:
    a _hotpath.Launcher; the CPU backend and the simulator have none), and through
    ``backend.launch`` while a launch is replaced on the instance: the same results either way."""
    from lazycv import program
    from lazycv.backends import cuda as cuda_backend
    host, frame, std, first = _w2_program(monkeypatch)
    progs = list({id(r.program): r.program for r in runtime.STATE.plans._replays.values()
                  if isinstance(r.program, program.SingleFlushProgram)}.values())
    assert len(progs) == 1
    be = runtime.backend()
    if runtime.HOTPATH is None:
        assert progs[0].launcher is None          # (SingleFlushProgram.run, in Python, never asks)
    elif lazycv.backend() == "cuda" and be.launch_mode == "driver" and cuda_backend._driver_launch_address():
        assert type(progs[0].launcher) is hot.Launcher
    else:
        assert progs[0].launcher is False
    spied, own = [], be.__dict__.get("launch")       # (a stream watch's, if streams were used)
    real = be.launch
    be.launch = lambda *a, **k: spied.append(1) or real(*a, **k)
    try:
        got = _w2_frames(2, frame, std)
    finally:
        if own is None:
            del be.launch
        else:
            be.launch = own
    assert len(spied) == 2
    got += _w2_frames(2, frame, std)
    assert len(spied) == 2
    for k in range(3):                        # (frames 0 and 1 of each run: frame 1's scalars differ)
        np.testing.assert_array_equal(got[0][k], first[k])
        np.testing.assert_array_equal(got[2][k], first[k])
        np.testing.assert_array_equal(got[3][k], got[1][k])


def test_flush_mats_flushes_where_flush_alone_serves_and_hands_back_the_rest(monkeypatch):
    """_hotpath.flush_mats (lazycv.materialize's C step without NVTX ranges): W2's frame
    flushed in C (an empty list back, streams.CURRENT reset as runtime.flush's ``finally``
    does, the planes right); nothing pending gives an empty list; a stream of other code to
    order gives the pending mats back unflushed, for runtime.flush."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: the flush runs in Python")
    host, frame, std, first = _w2_program(monkeypatch)
    planes = _w2_calls(frame, std, 0)
    monkeypatch.setattr(streams, "CURRENT", "a stream left from before")
    flushes = runtime.STATE.stats["flushes"]
    assert hot.flush_mats([planes]) == [] and streams.CURRENT is None
    assert runtime.STATE.stats["flushes"] == flushes + 1
    for k in range(3):
        np.testing.assert_array_equal(planes[k].download(), first[k])
    assert hot.flush_mats(planes) == []
    monkeypatch.setitem(runtime.STATE.foreign_streams, 1, object())
    planes = _w2_calls(frame, std, 0)
    back = hot.flush_mats(planes)
    assert [id(m) for m in back] == [id(m) for m in planes] and all(m._node is not None for m in planes)
    assert runtime.STATE.stats["flushes"] == flushes + 1
    monkeypatch.delitem(runtime.STATE.foreign_streams, 1)
    lazycv.materialize(*planes)
    for k in range(3):
        np.testing.assert_array_equal(planes[k].download(), first[k])


def test_each_threads_replayed_results_join_its_own_pending_list():
    """The C replay keeps the calling thread's pending list between calls (by the thread's id):
    calls alternating between threads still put each result in its own thread's list, and
    each thread's flush computes its own results."""
    import threading
    recipes.bind(GpuMat)
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    host = a.download()
    for _ in range(3):
        cv2.cuda.add(a, (1, 2, 3))
    turn = [threading.Event() for _ in range(4)]
    seen = {}

    def worker(k):
        turn[2 * k].wait(5)
        m = cv2.cuda.add(a, (k + 1, 2, 3))
        seen[k] = (m, any(r() is m for r in runtime.THREAD.pending))
        turn[2 * k + 1].set()
        turn[2 * k + 1].wait(5)
        seen[k] = seen[k] + (m.download(),)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    mine = cv2.cuda.add(a, (9, 2, 3))
    turn[0].set()
    turn[1].wait(5)
    after = cv2.cuda.add(a, (8, 2, 3))         # the main thread again, between the workers
    turn[2].set()
    for t in threads:
        t.join(10)
    assert any(r() is mine for r in runtime.THREAD.pending) and any(r() is after for r in runtime.THREAD.pending)
    assert not any(r() is seen[k][0] for k in range(2) for r in runtime.THREAD.pending)
    for k in range(2):
        assert seen[k][1], f"thread {k}'s result is not in its pending list"
        np.testing.assert_array_equal(seen[k][2], cv2.add(host, np.broadcast_to(np.uint8([k + 1, 2, 3]), host.shape)))
    np.testing.assert_array_equal(mine.download(), cv2.add(host, np.broadcast_to(np.uint8([9, 2, 3]), host.shape)))


def test_the_replay_key_in_c_hashes_and_compares_as_the_python_one(monkeypatch):
    """plancache.ReplayKey's C twin: the parts' hash, equal keys by identity, hash and parts,
    a table look-up that finds an equal key; and the plan cache stores it where C runs."""
    from lazycv import plancache
    nan = float("nan")
    parts = (True, ((1, 2, None), ("x", 0.5, nan)), (4, 6))
    same = (True, ((1, 2, None), ("x", 0.5, nan)), (4, 6))       # (the same nan object)
    other = (True, ((1, 2, None), ("x", 0.25, nan)), (4, 6))
    for cls in (plancache.PY_REPLAY_KEY, hot.ReplayKey):
        k = cls(parts)
        assert hash(k) == hash(parts) and k.parts is parts
        assert k == k and k == cls(same) and not k != cls(same)
        assert k != cls(other) and not k == cls(other)
        assert k != cls((True, ((1, 2, None), ("x", 0.5, float("nan"))), (4, 6)))   # another nan
        table = {k: "hit"}
        assert table[cls(same)] == "hit" and cls(other) not in table
        with pytest.raises(TypeError):
            cls((True, [1], ()))                                      # unhashable parts
    py, c = plancache.PY_REPLAY_KEY(parts), hot.ReplayKey(parts)
    assert py != c and c != py and not py == c and len({py: 1, c: 2}) == 2     # (never mixed up)
    recipes.bind(GpuMat)
    monkeypatch.setattr(runtime.STATE, "plans", plancache.PlanCache())
    a = upload(np.zeros((4, 5, 3), np.uint8))
    for _ in range(3):
        lazycv.materialize(cv2.cuda.add(a, 1))
    keys = list(runtime.STATE.plans._replays)
    assert keys and all(type(k) is (hot.ReplayKey if runtime.HOTPATH is not None else plancache.PY_REPLAY_KEY)
                        for k in keys)


@pytest.mark.parametrize("use_c", [False, True])
def test_a_new_recording_is_made_as_the_python_one_makes_it(use_c):
    """ir.new_recording's C twin: it returns the recording that ends, whose generation leaves
    OPEN; the new one is empty, open, of the next generation, and in OPEN (weakly); OPEN is
    pruned of gone recordings when it reaches _OPEN_PRUNE."""
    fresh = hot.new_recording if use_c else ir.PY_NEW_RECORDING
    fresh()
    before = ir._THREAD.rec
    a = upload(np.zeros((4, 5, 3), np.uint8))
    cv2.cuda.add(a, 1)
    assert before.tokens
    done = fresh()
    rec = ir._THREAD.rec
    assert done is before and done.gen not in ir.OPEN
    assert type(rec) is ir.Recording and rec.objs == [] and rec.tokens == [] and rec.bufs == {}
    assert rec.nbufs == 0 and rec.open is True and rec.gen > done.gen and ir.OPEN[rec.gen]() is rec
    ghost = ir.Recording()                       # a recording whose thread ended: gone
    gone = ghost.gen
    del ghost
    assert gone in ir.OPEN and ir.OPEN[gone]() is None
    ir._OPEN_PRUNE[0] = len(ir.OPEN) + 1         # the next recording reaches the size
    fresh()
    assert gone not in ir.OPEN and ir._OPEN_PRUNE[0] >= 64 and ir.OPEN[ir._THREAD.rec.gen]() is ir._THREAD.rec


def _w2_calls(frame, std, i):
    """W2's six calls on ``frame`` (frame ``i``'s scalars): the pending planes."""
    r = cv2.cuda.resize(frame, (8, 6), interpolation=cv2.INTER_LINEAR)
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, (0.5, 0.25 * i, -0.0)), std))


def _w2_frames(n, frame, std):
    """n frames of W2's six calls on ``frame`` (one flush each): each frame's planes, downloaded."""
    out = []
    for i in range(n):
        planes = _w2_calls(frame, std, i)
        lazycv.materialize(*planes)
        out.append([p.download() for p in planes])
    return out


def _w2_program(monkeypatch):
    """From a fresh plan cache, W2's frame run until a flush is its program's run: (host frame,
    frame, std, the first frame's planes downloaded)."""
    from lazycv.plancache import PlanCache
    recipes.bind(GpuMat)
    monkeypatch.setattr(runtime.STATE, "plans", PlanCache())
    host = np.arange(12 * 16 * 3, dtype=np.uint8).reshape(12, 16, 3)
    frame = upload(host)
    std = cv2.cuda_GpuMat(6, 8, cv2.CV_32FC3)
    std.setTo((0.25, 0.5, 2.0))
    first = _w2_frames(5, frame, std)[0]        # noted, captured, the program made and run
    hits = runtime.STATE.stats["program_hits"]
    _w2_frames(1, frame, std)
    assert runtime.STATE.stats["program_hits"] == hits + 1
    return host, frame, std, first


@pytest.mark.parametrize("in_c", [True, False])
def test_a_one_kernel_program_runs_in_c_as_in_python(in_c, monkeypatch):
    """A replayed one-kernel flush (W2's frame) runs in C (flush_alone's run_single) where the
    program's run is SingleFlushProgram.run, in Python where it was replaced: the same results
    (CPU OpenCV's), the same counts, and in both the outputs taken back from the last frame."""
    from lazycv import program
    python_runs = []
    if not in_c:
        real = program.SingleFlushProgram.run
        monkeypatch.setattr(program.SingleFlushProgram, "run", lambda self, values, mats: real(self, values, mats))
    run_program = runtime._run_program
    monkeypatch.setattr(runtime, "_run_program", lambda *a: python_runs.append(1) or run_program(*a))
    host, frame, std, _ = _w2_program(monkeypatch)
    stats = dict(runtime.STATE.stats)
    python_runs.clear()
    pool = runtime.backend().buffers
    asked = []
    monkeypatch.setattr(pool, "alloc_batch", lambda *a, **k: asked.append(a) or type(pool).alloc_batch(pool, *a, **k))
    got = _w2_frames(4, frame, std)
    for i, planes in enumerate(got):
        r = cv2.cvtColor(cv2.resize(host, (8, 6), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
        want = cv2.divide(cv2.subtract(r.astype(np.float32) / 255, (0.5, 0.25 * i, -0.0, 0)), (0.25, 0.5, 2.0, 1))
        for k in range(3):
            np.testing.assert_allclose(planes[k], want[..., k], rtol=1e-6, atol=1e-6)
    delta = {k: runtime.STATE.stats[k] - stats[k] for k in ("kernels_launched", "flushes", "program_hits", "plan_hits")}
    assert delta == {"kernels_launched": 4, "flushes": 4, "program_hits": 4, "plan_hits": 4}
    prog = list({id(r.program): r.program for r in runtime.STATE.plans._replays.values()
                 if isinstance(r.program, program.SingleFlushProgram)}.values())
    assert len(prog) == 1 and prog[0].ops_fused > 1
    assert runtime.STATE.stats["ops_fused"] - stats["ops_fused"] == 4 * prog[0].ops_fused
    assert len(python_runs) == (0 if in_c and runtime.HOTPATH is not None else 4)
    assert len(asked) <= 1                       # (the first frame's planes are held: one request)


def test_a_one_kernel_program_that_fails_in_c_leaves_the_flush_as_python_does(monkeypatch):
    """A launch error inside run_single reaches the caller, the flush counts, its results leave
    the pending list (runtime._program_failed), and the next frame runs."""
    host, frame, std, first = _w2_program(monkeypatch)
    be = runtime.backend()

    def broken(*a, **k):
        raise RuntimeError("launch failed here")
    monkeypatch.setattr(be, "launch", broken)          # (on the instance: a stream watch wraps it there)
    monkeypatch.setattr(be, "launch_batched", broken)
    flushes = runtime.STATE.stats["flushes"]
    planes = _w2_calls(frame, std, 0)
    with pytest.raises(RuntimeError, match="launch failed here"):
        lazycv.materialize(*planes)
    assert runtime.STATE.stats["flushes"] == flushes + 1 and not runtime.STATE.computed
    assert not any(r() is p for r in runtime.THREAD.pending for p in planes)
    monkeypatch.undo()
    again = _w2_frames(1, frame, std)
    for k in range(3):
        np.testing.assert_array_equal(again[0][k], first[k])


def test_a_repeated_loop_records_the_same_token_objects_and_a_changed_call_its_own():
    """A loop's frame records, position by position, tokens equal to the last frame's: the C
    recording reuses those objects (the replay key then compares by identity). A call that
    changed (another crop size) records a new token, and the flush computes what CPU OpenCV
    computes; recipes.forget() lets the kept tokens go."""
    if recipes._hotpath is None:
        pytest.skip("LAZYCV_HOTPATH=0: recipes are replayed in Python")
    host = np.arange(20 * 24 * 3, dtype=np.uint8).reshape(20, 24, 3)
    g = upload(host)

    def frame(rois):
        outs = [cv2.cuda.multiply(cv2.cuda.resize(cv2.cuda_GpuMat(g, r), (5, 4)), (3, 3, 3)) for r in rois]
        tokens = list(ir.recording().tokens)
        lazycv.materialize(*outs)
        for (x, y, w, h), o in zip(rois, outs):
            want = cv2.resize(host[y:y + h, x:x + w], (5, 4))
            np.testing.assert_array_equal(o.download(), cv2.multiply(want, np.full_like(want, 3)))
        return tokens
    rois = [(0, 0, 7, 5), (3, 2, 11, 9), (10, 4, 6, 13)]
    for _ in range(3):
        frame(rois)
    one, two = frame(rois), frame(rois)
    assert len(one) == len(two) == 3 * len(rois)
    assert all(a is b for a, b in zip(one, two))
    parts = (True, tuple(two), (5, 9))                  # (the replay key hashes kept tokens once)
    assert hash(hot.ReplayKey(parts)) == hash(parts) == hash(hot.ReplayKey(parts))
    changed = frame(rois[:1] + [(3, 2, 12, 9)] + rois[2:])
    # (the crop's source token changed; the resize's names only its output size and input)
    assert [a is b for a, b in zip(one, changed)] == [True] * 3 + [False] + [True] * 5
    assert changed[3] == (0, 0, 3, 9, 12) and changed[4][7] == (3,)
    recipes.forget()
    assert not any(a is b for a, b in zip(one, frame(rois)))


def test_a_flush_of_many_results_and_requested_views_serves_each_once():
    """A flush of more pending results than the C flush's sets hold on the stack (600), some
    requested twice or through a ROI view of a pending result: each is computed once, as CPU
    OpenCV computes it, on the first frame and on the replayed ones."""
    host = np.arange(6 * 7, dtype=np.uint8).reshape(6, 7)
    g = upload(host)
    for _ in range(3):
        outs = [cv2.cuda.add(g, (k % 200,)) for k in range(600)]
        views = [cv2.cuda_GpuMat(outs[k], (1, 1, 3, 2)) for k in range(0, 600, 50)]
        before = lazycv.stats()["flushes"]
        lazycv.materialize(*outs[::7], *outs[::7], *views)
        assert lazycv.stats()["flushes"] == before + 1
        for k in range(0, 600, 37):
            np.testing.assert_array_equal(outs[k].download(), cv2.add(host, np.full_like(host, k % 200)))
        for k, v in zip(range(0, 600, 50), views):
            np.testing.assert_array_equal(v.download(), cv2.add(host, np.full_like(host, k % 200))[1:3, 1:4])


def test_each_thread_records_into_its_own_recording():
    """The C recording reads the calling thread's recording (kept by the thread's id): calls
    that alternate between two threads number their nodes in their own thread's recording."""
    import threading
    a = upload(np.arange(60, dtype=np.uint8).reshape(4, 5, 3))
    for _ in range(3):
        cv2.cuda.add(a, (1, 2, 3))
    lazycv.materialize()
    go, done, seen = threading.Event(), threading.Event(), {}

    def worker():
        go.wait(5)
        m = cv2.cuda.add(a, (4, 2, 3))
        seen["worker"] = (m, ir.recording())
        done.set()
        m.download()

    t = threading.Thread(target=worker)
    t.start()
    mine = cv2.cuda.add(a, (5, 2, 3))
    go.set()
    done.wait(5)
    again = cv2.cuda.add(a, (6, 2, 3))                 # (the main thread's again, after the worker's)
    t.join(10)
    m, theirs = seen["worker"]
    rec = ir.recording()
    assert theirs is not rec
    assert any(r() is mine._node for r in rec.objs) and any(r() is again._node for r in rec.objs)
    assert not any(r() is mine._node for r in theirs.objs)
    np.testing.assert_array_equal(again.download(), cv2.add(a.download(), np.broadcast_to(np.uint8([6, 2, 3]), (4, 5, 3))))
