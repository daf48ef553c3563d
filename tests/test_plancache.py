"""The plan cache: a flush with the structure of an earlier one reuses its plan, and only then.

Every test checks results against CPU OpenCV, so a plan reused where it must not be (a
different sharing of buffers, a sink writing into user memory) shows up as wrong pixels."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv import planner, runtime

from .conftest import assert_close, rand_image, upload

pytestmark = pytest.mark.sim


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch):
    """Each test starts from an empty plan cache: its hits are its own (an earlier test's plan
    of the same structure — or the same loose structure — would count)."""
    from lazycv.plancache import PlanCache
    monkeypatch.setattr(runtime.STATE, "plans", PlanCache())


def chain(g, alpha):
    r = cv2.cuda.resize(g, (7, 5))
    f = r.convertTo(cv2.CV_32FC3, alpha=alpha)
    return cv2.cuda.split(cv2.cuda.subtract(f, (0.25, 0.5, 0.75)))


def chain_ref(a, alpha):
    r = cv2.resize(a, (7, 5)).astype(np.float32) * np.float32(alpha)
    return list(cv2.split(cv2.subtract(r, (0.25, 0.5, 0.75, 0))))


def check(planes, a, alpha):
    for got, ref in zip(planes, chain_ref(a, alpha)):
        assert_close(got.download(), ref, tol=1e-5, what="plane")


def test_repeated_frames_reuse_the_plan_with_new_scalars_and_frames(rng):
    frames = [rand_image(rng, 9, 11, 3, np.uint8) for _ in range(4)]
    for it in range(3):                                  # the same structure, new data each time
        gpus = [upload(f) for f in frames]
        alpha = 1.0 / (it + 2)
        outs = [chain(g, alpha) for g in gpus]
        lazycv.materialize(*[p for planes in outs for p in planes])
        for planes, f in zip(outs, frames):
            check(planes, f, alpha)
        frames = [np.ascontiguousarray(f[::-1]) for f in frames]
    assert lazycv.stats()["plan_hits"] == 2


def test_same_buffer_and_different_buffers_do_not_share_a_plan(rng):
    a = rand_image(rng, 9, 11, 3, np.uint8)
    b = rand_image(rng, 9, 11, 3, np.uint8)
    ga, gb = upload(a), upload(b)
    # two chains over two frames, then two chains over one frame: the same ops, another sharing
    outs = [chain(ga, 0.5), chain(gb, 0.5)]
    lazycv.materialize(*[p for planes in outs for p in planes])
    outs2 = [chain(ga, 0.25), chain(ga, 0.125)]
    lazycv.materialize(*[p for planes in outs2 for p in planes])
    check(outs[0], a, 0.5)
    check(outs[1], b, 0.5)
    check(outs2[0], a, 0.25)
    check(outs2[1], a, 0.125)
    assert lazycv.stats()["plan_hits"] == 0


def test_a_sink_writing_into_user_memory_plans_apart(rng):
    a = rand_image(rng, 9, 11, 3, np.uint8)
    g = upload(a)
    lazy = cv2.cuda.resize(g, (7, 5))
    ref = cv2.resize(a, (7, 5))
    assert_close(lazy.download(), ref, what="lazy result")
    dst = cv2.cuda_GpuMat(5, 7, cv2.CV_8UC3)
    cv2.cuda.resize(g, (7, 5), dst=dst)
    assert_close(dst.download(), ref, what="dst= result")
    assert lazycv.stats()["plan_hits"] == 0
    again = cv2.cuda.resize(g, (7, 5))                   # the first structure again: a hit
    assert_close(again.download(), ref, what="repeat")
    assert lazycv.stats()["plan_hits"] == 1


def test_size_change_misses_and_stays_correct(rng):
    for rows, cols in [(9, 11), (12, 5), (9, 11)]:
        a = rand_image(rng, rows, cols, 3, np.uint8)
        check(chain(upload(a), 0.5), a, 0.5)
    # a frame read only by a resize carries its size in the resize's dyn values: every frame
    # replays the first one's plan (the second by its loose key); results checked against OpenCV
    assert lazycv.stats()["plan_hits"] == 2
    lazycv.reset_stats()
    for rows, cols in [(9, 11), (12, 5), (9, 11)]:     # read at its own size: a new plan
        a = rand_image(rng, rows, cols, 3, np.uint8)
        got = cv2.cuda.cvtColor(upload(a), cv2.COLOR_BGR2RGB)
        assert_close(got.download(), cv2.cvtColor(a, cv2.COLOR_BGR2RGB), what="cvtColor")
    assert lazycv.stats()["plan_hits"] == 1


def test_cached_plan_reads_an_earlier_phase_from_memory(rng):
    """resize(resize(x)) plans two phases; a hit must still read the first phase's new output."""
    for it in range(2):
        a = rand_image(rng, 20, 24, 3, np.uint8)
        g = upload(a)
        r2 = cv2.cuda.resize(cv2.cuda.resize(g, (12, 10)), (6, 5))
        assert_close(r2.download(), cv2.resize(cv2.resize(a, (12, 10)), (6, 5)), tol=1, what=f"run {it}")
    assert lazycv.stats()["plan_hits"] == 1


def test_later_phase_kernel_reads_the_cut_instead_of_recomputing_it(rng):
    """The second kernel of resize(resize(x)) reads the first resize from memory: its layout
    holds one resize, not both (recomputing the inner one would cost 4 taps per tap)."""
    g = upload(rand_image(rng, 20, 24, 3, np.uint8))
    out = cv2.cuda.resize(cv2.cuda.resize(g, (13, 10)), (6, 5)).convertTo(cv2.CV_32F)   # (not an exact halving)
    kernels = planner.plan([out._node])
    layouts = [lay for phase in runtime.launch_plan(kernels) for launch in phase
               for kind in launch for _, lay in kind]
    assert len(layouts) == 2
    computed = [[v.op.name for vi, v in enumerate(lay.values) if vi not in lay.inputs] for lay in layouts]
    assert computed == [["resize"], ["resize", "convert"]]
    lazycv.materialize(out)


# ---------------------------------------------------------------- replays of a recording

def count_graph_walks(monkeypatch):
    walks = []
    real = runtime.Graph

    def counting(roots):
        walks.append(len(roots))
        return real(roots)
    monkeypatch.setattr(runtime, "Graph", counting)
    return walks


def crops_chain(g, rects, alpha):
    """W3's shape: the same calls over ROIs of one frame, different positions and scalars."""
    outs = []
    for x, y, w, h in rects:
        roi = cv2.cuda_GpuMat(g, (x, y, w, h))
        f = cv2.cuda.resize(roi, (6, 4)).convertTo(cv2.CV_32FC3, alpha=alpha)
        outs.append(cv2.cuda.split(cv2.cuda.multiply(f, (1.0, 2.0, 3.0))))
    return outs


def crops_ref(a, rects, alpha):
    outs = []
    for x, y, w, h in rects:
        f = cv2.resize(a[y:y + h, x:x + w], (6, 4)).astype(np.float32) * np.float32(alpha)
        outs.append(cv2.split(cv2.multiply(f, (1.0, 2.0, 3.0, 0.0))))
    return outs


def crops_iteration(rng, a, g, n, it):
    """One flush of the ROI loop with new positions (same sizes) and a new scalar — arguments,
    not structure — checked against CPU OpenCV."""
    rects = [(int(rng.integers(0, 16)), int(rng.integers(0, 12)), 8, 8) for _ in range(n)]
    alpha = 0.5 / (it + 1)
    outs = crops_chain(g, rects, alpha)
    lazycv.materialize(*[p for planes in outs for p in planes])
    for planes, refs in zip(outs, crops_ref(a, rects, alpha)):
        for got, ref in zip(planes, refs):
            assert_close(got.download(), ref, tol=1e-5, what=f"iteration {it}")


def test_a_repeated_recording_is_replayed_without_walking_the_graph(rng, monkeypatch):
    walks = count_graph_walks(monkeypatch)
    a = rand_image(rng, 20, 24, 3, np.uint8)
    g = upload(a)
    for it in range(4):
        crops_iteration(rng, a, g, 3, it)
    assert len(walks) == 1                   # iterations 1-3 replayed the first one's plan
    assert lazycv.stats()["plan_hits"] == 3


def test_a_replay_follows_what_the_user_kept_alive(rng):
    a = rand_image(rng, 9, 11, 3, np.uint8)
    g = upload(a)
    for keep in (False, True, True, False):
        r = cv2.cuda.resize(g, (7, 5))
        f = r.convertTo(cv2.CV_32FC3, alpha=0.5)
        planes = cv2.cuda.split(f)
        if not keep:
            del r, f                          # only the planes are results
        lazycv.materialize(*planes)
        ref = cv2.resize(a, (7, 5))
        for got, want in zip(planes, cv2.split(ref.astype(np.float32) * np.float32(0.5))):
            assert_close(got.download(), want, tol=1e-5, what=f"plane (keep={keep})")
        if keep:                              # kept intermediates are still right when asked for
            assert_close(r.download(), ref, what="kept resize")
            assert_close(f.download(), ref.astype(np.float32) * np.float32(0.5), tol=1e-5, what="kept convert")


def test_reading_a_result_pending_since_an_earlier_flush_is_planned_the_general_way(rng, monkeypatch):
    walks = count_graph_walks(monkeypatch)
    a = rand_image(rng, 9, 11, 3, np.uint8)
    g = upload(a)
    r = cv2.cuda.resize(g, (7, 5))
    s = r.convertTo(cv2.CV_32FC3, alpha=0.5)
    ref = cv2.resize(a, (7, 5))
    assert_close(s.download(), ref.astype(np.float32) * np.float32(0.5), tol=1e-5, what="first")
    for it in range(2):                       # r was fused into s, so it is still pending
        t = cv2.cuda.multiply(r, (2.0, 2.0, 2.0))
        assert_close(t.download(), cv2.multiply(ref, (2.0, 2.0, 2.0, 0.0)), what=f"reads r, run {it}")
    assert len(walks) == 3


def test_a_long_recording_stops_encoding_and_stays_correct(rng, monkeypatch):
    from lazycv import ir
    monkeypatch.setattr(ir.Recording, "LIMIT", 5)
    a = rand_image(rng, 6, 7, 1, np.float32)
    for it in range(2):
        acc = upload(a)
        for _ in range(8):
            acc = cv2.cuda.add(acc, (1.0,))
        assert_close(acc.download(), a + np.float32(8), tol=1e-5, what=f"run {it}")
    # too long to replay, but the plan cache (which walks the graph) still serves run 1
    assert lazycv.stats()["plan_hits"] == 1


def test_a_recording_does_not_keep_dropped_frames_alive(rng):
    """Results dropped before any flush must let their frames go at once (the recording only
    refers to what it encodes)."""
    import gc
    import weakref
    gone = []
    for _ in range(3):
        g = upload(rand_image(rng, 9, 11, 3, np.uint8))
        r = cv2.cuda.multiply(cv2.cuda.resize(g, (7, 5)), (2.0, 2.0, 2.0))
        gone.append(weakref.ref(g._alloc.buf))
        del g, r
    gc.collect()
    assert all(w() is None for w in gone)
    # and the recording still encodes and replays what comes next
    a = rand_image(rng, 9, 11, 3, np.uint8)
    for it in range(2):
        check(chain(upload(a), 0.5), a, 0.5)
    assert lazycv.stats()["plan_hits"] >= 1


def test_buffers_are_numbered_apart_even_when_a_dead_ones_id_comes_back():
    """A recording numbers buffers in first-seen order; a new buffer that reuses a dead one's
    id must get a number of its own, not one another live buffer already has."""
    from lazycv import ir

    class Buf:
        pass

    def source(buf):
        return ir.Source(buf, 0, 0, 2, 2, 0, 1)
    rec = ir.Recording()
    a, b = Buf(), Buf()
    rec.first_seen(source(a))
    rec.first_seen(source(b))
    rec.bufs[id(b)] = (1, lambda: None)      # as if b had died and its id were free again
    c = Buf()
    rec.bufs[id(c)] = rec.bufs.pop(id(b))    # ... and c had been given that id
    rec.first_seen(source(c))
    d = Buf()
    rec.first_seen(source(d))
    slots = [tok[0] for tok in rec.tokens]
    assert len(set(slots)) == 4, slots


# ---------------------------------------------------------------- replays as one launch (FlushProgram)

def count_thaws(monkeypatch):
    """Counts plans thawed for replays, from a fresh plan cache."""
    from lazycv import plancache
    monkeypatch.setattr(runtime.STATE, "plans", plancache.PlanCache())
    thaws = []
    real = plancache._thaw

    def counting(plan, objs):
        thaws.append(1)
        return real(plan, objs)
    monkeypatch.setattr(plancache, "_thaw", counting)
    return thaws


def test_a_replayed_loop_is_relaunched_from_its_recording(rng, monkeypatch):
    """A Python loop over ROIs of new frames, with new positions and a new scalar each time:
    from the third flush on the batched launch is filled straight from the recording (no plan
    thawed), and every flush still matches CPU OpenCV."""
    thaws = count_thaws(monkeypatch)
    for it in range(5):
        a = rand_image(rng, 20, 24, 3, np.uint8)          # a new frame buffer each time
        crops_iteration(rng, a, upload(a), 4, it)
    assert len(thaws) == 1            # flush 0 planned, flush 1 thawed and captured, 2-4 programs
    assert lazycv.stats()["plan_hits"] == 4 and lazycv.stats()["program_hits"] == 3


def count_program_runs(monkeypatch, kind="FlushProgram"):
    """Counts runs of a flush program class from a fresh plan cache (earlier tests' plans may
    share keys)."""
    from lazycv import program
    from lazycv.plancache import PlanCache
    monkeypatch.setattr(runtime.STATE, "plans", PlanCache())
    runs = []
    cls = getattr(program, kind)
    real = cls.run

    def counting(self, values, mats):
        done = real(self, values, mats)
        runs.append(done)
        return done
    monkeypatch.setattr(cls, "run", counting)
    return runs


def test_results_of_a_replayed_launch_feed_later_work_and_kept_intermediates_stay_right(rng, monkeypatch):
    runs = count_program_runs(monkeypatch)
    frames = [rand_image(rng, 9, 11, 3, np.uint8) for _ in range(3)]
    for it in range(4):
        gpus = [upload(f) for f in frames]
        resized = [cv2.cuda.resize(g, (7, 5)) for g in gpus]        # kept: consumed, not sinks
        outs = [cv2.cuda.split(cv2.cuda.subtract(r.convertTo(cv2.CV_32FC3, alpha=0.5), (0.25, 0.5, 0.75)))
                for r in resized]
        lazycv.materialize(*[p for planes in outs for p in planes])
        for planes, f in zip(outs, frames):
            check(planes, f, 0.5)
            doubled = cv2.cuda.add(planes[1], planes[1])          # lazy work over a result
            assert_close(doubled.download(), chain_ref(f, 0.5)[1] * 2, tol=1e-5, what="later op")
        for r, f in zip(resized, frames):                           # computed on request
            assert_close(r.download(), cv2.resize(f, (7, 5)), what=f"kept resize, iteration {it}")
        frames = [rand_image(rng, 9, 11, 3, np.uint8) for _ in range(3)]
    assert runs == [True, True]       # iterations 2 and 3 (0 planned, 1 captured)


def test_a_replay_of_other_sharing_or_sizes_is_not_served_by_anothers_program(rng, monkeypatch):
    runs = count_program_runs(monkeypatch)
    a, b = rand_image(rng, 9, 11, 3, np.uint8), rand_image(rng, 9, 11, 3, np.uint8)
    for it in range(3):
        ga, gb = upload(a), upload(b)
        for srcs, arrays in (((ga, gb), (a, b)), ((ga, ga), (a, a)), ((gb, ga), (b, a))):
            outs = [chain(g, 0.25 * (it + 1)) for g in srcs]
            lazycv.materialize(*[p for planes in outs for p in planes])
            for planes, arr in zip(outs, arrays):
                check(planes, arr, 0.25 * (it + 1))
        c = rand_image(rng, 12, 14, 3, np.uint8)          # other input sizes
        other = [chain(upload(c), 0.5) for _ in range(2)]
        lazycv.materialize(*[p for planes in other for p in planes])
        for planes in other:
            check(planes, c, 0.5)
    # (a, b) and (b, a) are one key (two distinct buffers): its program serves both from the
    # second iteration on, and the other sizes too (read by a resize alone: one loose key);
    # (a, a) has a program of its own from the third
    assert runs == [True] * 8


def test_a_frame_at_a_time_is_relaunched_from_its_recording(rng, monkeypatch):
    """W2's shape: one frame per flush, new contents and scalars each time; from the third
    frame on the one kernel is launched from the recording (SingleFlushProgram)."""
    runs = count_program_runs(monkeypatch, "SingleFlushProgram")
    g = cv2.cuda_GpuMat()
    for it in range(5):
        a = rand_image(rng, 9, 11, 3, np.uint8)
        g.upload(a)                               # the same GpuMat, new contents
        alpha = 1.0 / (it + 2)
        check(chain(g, alpha), a, alpha)
    assert runs == [True, True, True]


def test_a_frame_at_a_time_keeps_each_frames_planes_apart(rng, monkeypatch):
    """The program's planes share one pooled slab a frame: planes kept from earlier frames
    (their siblings dropped) keep their values through later frames, and a write into one
    plane leaves its siblings as they were."""
    runs = count_program_runs(monkeypatch, "SingleFlushProgram")
    kept, g = [], cv2.cuda_GpuMat()
    for it in range(6):
        a = rand_image(rng, 9, 11, 3, np.uint8)
        g.upload(a)
        planes = chain(g, 0.5)
        lazycv.materialize(*planes)
        kept.append((planes[it % 3], chain_ref(a, 0.5)[it % 3]))     # the other two dropped
        if it == 4:
            planes[0].setTo(7.0)
            assert_close(planes[0].download(), np.full((5, 7), 7, np.float32), what="written plane")
            for p, ref in zip(planes[1:], chain_ref(a, 0.5)[1:]):
                assert_close(p.download(), ref, tol=1e-5, what="sibling of a written plane")
        del planes
    for it, (p, ref) in enumerate(kept):
        assert_close(p.download(), ref, tol=1e-5, what=f"kept plane of frame {it}")
    assert runs == [True] * 4


def count_pool_requests(monkeypatch):
    """Counts the backend pool's requests for new output buffers."""
    pool = runtime.STATE.backend.buffers
    asked = []
    for name in ("alloc", "alloc_batch"):
        real = getattr(pool, name)
        monkeypatch.setattr(pool, name, lambda *a, _real=real, **k: asked.append(1) or _real(*a, **k))
    return asked


def address(m):
    return runtime.STATE.backend.pointer(m._alloc.buf)


def test_a_frame_at_a_time_takes_back_outputs_nothing_holds(rng, monkeypatch):
    """W2's loop drops each frame's planes before the next flush: the program takes its last
    outputs back (no pool request), and each frame's values are its own."""
    runs = count_program_runs(monkeypatch, "SingleFlushProgram")
    g = cv2.cuda_GpuMat()
    asked = []
    for it in range(7):                               # planned, captured, then program runs
        if it == 3:
            asked = count_pool_requests(monkeypatch)
        a = rand_image(rng, 9, 11, 3, np.uint8)
        g.upload(a)
        planes = chain(g, 0.5)
        lazycv.materialize(*planes)
        check(planes, a, 0.5)
        del planes
    assert asked == [] and runs == [True] * 5


@pytest.mark.parametrize("holder", ["plane", "roi", "exported", "batched"])
def test_outputs_something_still_holds_are_never_taken_back(rng, monkeypatch, holder):
    """A plane kept, a ROI of a dropped plane kept, a plane whose address was handed out
    (cudaPtr) and dropped, a batched loop's plane kept: later frames get other memory, and
    what is held keeps its values."""
    runs = count_program_runs(monkeypatch, "FlushProgram" if holder == "batched" else "SingleFlushProgram")
    g, held = cv2.cuda_GpuMat(), []
    for it in range(6):
        a = rand_image(rng, 9, 11, 3, np.uint8)
        g.upload(a)
        planes = chain(g, 0.5) if holder != "batched" else \
            [p for f in (g, upload(a[::-1].copy())) for p in chain(f, 0.5)]
        lazycv.materialize(*planes)
        ref = chain_ref(a, 0.5)[1]
        if it == 3:
            if holder == "roi":
                kept = cv2.cuda_GpuMat(planes[1], (1, 2, 4, 3))
                held.append((kept, ref[2:5, 1:5]))
            else:
                held.append((planes[1], ref))
            taken = address(planes[1])
            if holder == "exported":
                assert planes[1].cudaPtr() == taken
                held.clear()
        elif it > 3:
            assert all(address(p) != taken for p in planes)
        del planes
    for m, ref in held:
        assert_close(m.download(), ref, tol=1e-5, what=f"held {holder}")
    assert runs == [True] * 4


def test_a_loops_tables_follow_its_scalars_when_they_change_and_come_back(rng, monkeypatch):
    """A flush program keeps its per-item tables on the device while the offsets and scalars
    stay the same; a change (also 0.0 to -0.0, equal as numbers) gives new tables."""
    runs = count_program_runs(monkeypatch)
    frames = [rand_image(rng, 6, 8, 3, np.float32) for _ in range(2)]
    for it, s in enumerate([0.5, 0.5, 0.5, 0.5, 2.0, 0.5, 0.0, -0.0, -0.0, 0.0, 0.5]):
        gpus = [upload(f) for f in frames]
        outs = [cv2.cuda.multiply(cv2.cuda.resize(g, (5, 4)), (s, s, s)) for g in gpus]
        lazycv.materialize(*outs)
        for o, f in zip(outs, frames):
            want = cv2.multiply(cv2.resize(f, (5, 4)), (s, s, s, 0))
            got = o.download()
            assert_close(got, want, tol=1e-6, what=f"flush {it}, scalar {s}")
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert runs == [True] * 9


def test_a_replay_writing_into_user_memory_keeps_to_that_memory(rng, monkeypatch):
    runs = count_program_runs(monkeypatch, "SingleFlushProgram")
    dst = cv2.cuda_GpuMat(5, 7, cv2.CV_32FC3)
    view = cv2.cuda_GpuMat(dst, (2, 1, 4, 3))           # shares dst's memory
    for it in range(4):
        a = rand_image(rng, 9, 11, 3, np.uint8)
        r = cv2.cuda.resize(upload(a), (7, 5))
        r.convertTo(cv2.CV_32FC3, dst, alpha=0.5)
        want = cv2.resize(a, (7, 5)).astype(np.float32) * np.float32(0.5)
        assert_close(dst.download(), want, tol=1e-5, what=f"dst, iteration {it}")
        assert_close(view.download(), want[1:4, 2:6], tol=1e-5, what=f"a view of dst, iteration {it}")
    assert runs == []


def test_a_replayed_launch_of_several_kinds_fills_each_kind(rng, monkeypatch):
    """Two products of each frame (W4's shape, over two frames): one launch of two kinds of
    item, served by its program from the third flush on."""
    runs = count_program_runs(monkeypatch)
    for it in range(4):
        frames = [rand_image(rng, 12, 16, 3, np.uint8) for _ in range(2)]
        gpus = [upload(f) for f in frames]
        thumbs = [cv2.cuda.resize(g, (5, 4)) for g in gpus]
        grays = [cv2.cuda.multiply(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY).convertTo(cv2.CV_32F),
                                   (0.5 + it,)) for g in gpus]
        lazycv.materialize(*thumbs, *grays)
        for f, t, gr in zip(frames, thumbs, grays):
            assert_close(t.download(), cv2.resize(f, (5, 4)), what=f"thumbnail, iteration {it}")
            want = cv2.multiply(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY).astype(np.float32), (0.5 + it, 0, 0, 0))
            assert_close(gr.download(), want, tol=1e-5, what=f"gray, iteration {it}")
    assert runs == [True, True]


def _crop_sizes(rng, n, h, w):
    return [(int(rng.integers(0, w // 2)), int(rng.integers(0, h // 2)),
             int(rng.integers(3, w // 2)), int(rng.integers(3, h // 2))) for _ in range(n)]


def test_crops_of_new_sizes_every_flush_replay_one_plan(rng, monkeypatch):
    """A detector's loop: new boxes each frame, each crop resized to one size and normalized.
    The crops' sizes reach the kernel only through resize's dyn values, so from the second
    frame on the flush replays the first one's plan (loose key) and from the third its
    program; every frame matches CPU OpenCV."""
    runs = count_program_runs(monkeypatch)
    for it in range(5):
        a = rand_image(rng, 40, 48, 3, np.uint8)
        g = upload(a)
        boxes = _crop_sizes(rng, 4, 40, 48)
        outs = [chain(cv2.cuda_GpuMat(g, box), 0.5) for box in boxes]
        lazycv.materialize(outs)
        for planes, (x, y, w, h) in zip(outs, boxes):
            check(planes, np.ascontiguousarray(a[y:y + h, x:x + w]), 0.5)
    assert runs == [True, True, True]
    assert lazycv.stats()["plan_hits"] == 4


def test_a_crop_also_read_at_its_own_size_keeps_its_size_in_the_key(rng):
    """Where a crop is read pixel for pixel too (its size is the reading node's), a new size
    plans anew: an add of the crop to itself beside its resize."""
    from lazycv.plancache import loose_tokens
    for it in range(3):
        a = rand_image(rng, 30, 30, 3, np.uint8)
        g = upload(a)
        (x, y, w, h), = _crop_sizes(rng, 1, 30, 30)
        c = cv2.cuda_GpuMat(g, (x, y, w, h))
        r, s = cv2.cuda.resize(c, (6, 5)), cv2.cuda.add(c, c)
        tokens = list(runtime.ir.recording().tokens)
        assert loose_tokens(tokens) is None or all(len(t) != 3 or i == 0 for i, t in enumerate(loose_tokens(tokens)))
        lazycv.materialize(r, s)
        crop = np.ascontiguousarray(a[y:y + h, x:x + w])
        assert_close(r.download(), cv2.resize(crop, (6, 5)), what="resize")
        assert_close(s.download(), cv2.add(crop, crop), what="add")


def test_loose_tokens_leave_out_only_sizes_read_through_dyn():
    from lazycv.ops.base import op
    from lazycv.plancache import loose_tokens
    rs, add = op("resize"), op("arith")
    src_a, src_b = (0, 0, 3, 20, 30), (1, 0, 3, 9, 9)
    resize_a = (rs, (1, "cpu"), 0, 3, 5, 6, 0, (0,))
    add_b = (add, ("add",), 0, 3, 9, 9, 0, (2, 2))
    assert loose_tokens([src_a, resize_a]) == ((0, 0, 3), resize_a)
    assert loose_tokens([src_a, resize_a, src_b, add_b]) == ((0, 0, 3), resize_a, src_b, add_b)
    assert loose_tokens([src_b, add_b[:7] + ((0, 0),)]) is None


def test_warps_of_crops_of_new_sizes_stay_right(rng):
    M = np.float64([[0.9, 0.1, 1.0], [-0.1, 0.8, 2.0]])
    for it in range(4):
        a = rand_image(rng, 30, 36, 1, np.uint8)
        g = upload(a)
        boxes = _crop_sizes(rng, 3, 30, 36)
        outs = [cv2.cuda.warpAffine(cv2.cuda_GpuMat(g, box), M, (8, 7)) for box in boxes]
        lazycv.materialize(outs)
        for o, (x, y, w, h) in zip(outs, boxes):
            ref = cv2.warpAffine(np.ascontiguousarray(a[y:y + h, x:x + w]), M, (8, 7))
            assert_close(o.download(), ref, tol=1, what=f"warp, iteration {it}")


@pytest.mark.parametrize("interpolation", [cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA])
def test_crops_of_new_sizes_equal_the_eager_calls(rng, interpolation):
    """Each interpolation over new boxes every frame, then a short chain: the replayed flushes
    (loose key, then its program) equal the calls run eagerly, frame by frame. (AREA boxes
    are enlarged: AREA shrinking by other factors is another node, a plan of its own.)"""
    from .conftest import assert_fused_equals_eager, run_both
    a = rand_image(rng, 36, 40, 3, np.uint8)
    small = interpolation == cv2.INTER_AREA
    frames = [_crop_sizes(rng, 3, 12 if small else 36, 14 if small else 40) for _ in range(4)]

    def run():
        g = upload(a)
        got = []
        for boxes in frames:
            outs = []
            for box in boxes:
                r = cv2.cuda.resize(cv2.cuda_GpuMat(g, box), (9, 7), interpolation=interpolation)
                f = cv2.cuda.multiply(r.convertTo(cv2.CV_32FC3, alpha=1 / 255), (0.5, 2.0, 1.0))
                outs.append([cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY)] + list(cv2.cuda.split(f)))
            lazycv.materialize(outs)
            got.append([[m.download() for m in o] for o in outs])
        return got
    fused, eager = run_both(run)
    assert_fused_equals_eager(fused, eager)
    assert lazycv.stats()["program_hits"] >= 2          # (the fused run's last two frames)


def test_the_replay_cache_stays_bounded_with_loose_keys(rng, monkeypatch):
    """A flush with a loose key is remembered under two keys; the cache still keeps at most
    CAPACITY of them (the least recently used go)."""
    from lazycv import plancache
    monkeypatch.setattr(plancache, "CAPACITY", 6)
    a = rand_image(rng, 30, 30, 3, np.uint8)
    g = upload(a)
    for n in range(1, 9):                       # 8 structures: n crops each, two keys each
        outs = [cv2.cuda.resize(cv2.cuda_GpuMat(g, (i, i, 5, 6)), (4, 3)) for i in range(n)]
        lazycv.materialize(outs)
        assert len(runtime.STATE.plans._replays) <= 6
        assert_close(outs[-1].download(), cv2.resize(np.ascontiguousarray(a[n - 1:n + 5, n - 1:n + 4]), (4, 3)))
