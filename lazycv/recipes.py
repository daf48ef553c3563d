"""Recipes: a recorded cv2.cuda call made again from its argument signature.

Unchanged cv2.cuda code calls the same functions with the same kinds of arguments every frame,
so the validation, the working-type rules and the node parameters come out the same each time:
only the input values differ. The second call with a given *signature* runs the op's function
(the full path) and watches what it did (the first only notes the signature: a call whose
arguments never repeat, such as a scalar that changes every frame, costs no capture). If the call did nothing but record new nodes and hand
back new lazy GpuMats — no flush, no copy to or from the host, no write into an argument, every
input of its nodes an argument's own value — the nodes it made are kept as a recipe. A later
call with the same signature makes the same nodes from the new arguments' values without
running the function: an attribute read or two and one ``Node`` a node — in C when the
extension was built (lazycv/_hotpath.c mirrors :func:`signature`, :func:`replay`,
``ir.Node.__init__`` and ``GpuMat._value``/``_lazy``), else in Python.

The signature holds each argument's type; for a GpuMat its size, depth, channels and which
earlier argument it is (aliasing); for anything else the value itself — numbers, strings, None
and tuples of them only. Arrays, lists, streams and other objects make a
call take the full path every time. A replay reads memory shared with foreign code at the call,
as the full path does (runtime.read_shared_now).
The settings a function may read (backend, fuse, resize mapping) clear the recipes when they
change (:func:`forget`).

``LAZYCV_RECIPES=0`` turns recipes off; ``LAZYCV_RECIPES=check`` runs the full path beside every
replay and raises AssertionError where the two recorded different nodes (tests/test_recipes.py;
a whole test run can be made in that mode: each replayed call is then recorded twice, which
only tests counting recorded ops or plan reuse notice).
"""
import math
import os
import sys

from . import ir, plancache, runtime, streams
from .ir import Node
from .runtime import STATE

MODE = os.environ.get("LAZYCV_RECIPES", "1").strip().lower()
ENABLED = MODE not in ("0", "off", "false", "no")
CHECK = MODE == "check"

# The replay's per-call steps (signature, Node, lazy GpuMat) in C when the extension was built
# (lazycv/_hotpath.c; LAZYCV_HOTPATH=0: the Python ones below). bind() hands it the classes.
_hotpath = runtime.NATIVE
HOT = False             # True once bind() has handed the C functions the classes
API_TYPE = _hotpath.Api if _hotpath is not None else None   # cv2.cuda functions' C wrapper (ops.common)
INIT_TYPE = _hotpath.Init if _hotpath is not None else None  # GpuMat.__init__'s C crop (facade.gpumat)
_GPUMAT = None

_PLAIN = frozenset((int, float, bool, str, type(None)))
_MAX_TRIES = 3          # failed captures of one signature before it always takes the full path
LIMIT = 4096            # signatures kept (then the table starts over)

# (function, signature) -> Recipe, or an int: the signature was seen, and so many captures of it
# failed (a call's second sighting is captured: one that never repeats costs no capture)
_RECIPES = {}
_NOTED = set()          # signatures seen once (a second sighting captures): kept apart, so that
                        # signatures that never repeat (new crop sizes every frame) start this
                        # set over, not the recipes


class Recipe:
    """The nodes one call recorded: ``nodes`` as (op, static, dyn, rows, cols, depth, cn, refs)
    in recording order, where a ref ``r >= 0`` is the r-th node of the recipe and ``r < 0`` is
    argument ``~r``'s value; ``results`` the node index of the returned GpuMat, or with
    ``many`` (the list or tuple type of several results) one entry a result: a node index,
    or a plain value in a 1-tuple (threshold's retval)."""
    __slots__ = ("nodes", "results", "many", "func")

    def __init__(self, nodes, results, many, func):
        self.nodes, self.results, self.many = nodes, results, many
        self.func = func          # the op's name, for an error an argument's value raises


def forget():
    """Drop every recipe (the settings an op function reads have changed)."""
    _RECIPES.clear()
    _NOTED.clear()
    if _hotpath is not None:
        _hotpath.forget_calls()             # (each function's last recipe, kept in C)


def bind(GpuMat):
    """Hand the C hot path (when built) the classes and modules it works with; the first
    call through recipes does it (the façade imports this module before GpuMat exists)."""
    global HOT, _GPUMAT, _signature, _node, _lazy
    _GPUMAT = GpuMat
    if _hotpath is not None:
        _hotpath.bind(Node, ir.Source, GpuMat, ir.Recording, ir, runtime, _PLAIN)
        plancache.ReplayKey = _hotpath.ReplayKey                 # (before bind_recipes takes it)
        _hotpath.bind_recipes(Recipe, sys.modules[__name__], streams, _RECIPES, _MISS, _RUN)
        _signature, _node, _lazy, HOT = _hotpath.signature, _hotpath.node, _hotpath.lazy, True
        runtime.HOTPATH = _hotpath
        plancache._hot_loose = _hotpath.loose_tokens
        ir.TRACK, ir.VALUES_OF, ir.new_recording = _hotpath.track, _hotpath.values_of, _hotpath.new_recording
        from .backends import cuda as cuda_backend
        cuda_backend.HOT_LAUNCH, cuda_backend.HOT_LAUNCHER = _hotpath.launch, _hotpath.Launcher
    else:
        _signature, _node, _lazy = lambda args, kw: signature(args, kw, GpuMat), Node, _py_lazy


def _py_lazy(cls, nd):
    return cls._lazy(nd)


_signature = _node = _lazy = None
_MISS = object()        # _hotpath.call's answer where the Python path decides
_RUN = object()         # its answer where the function just runs: arguments recipes do not
                        # cover, a signature seen the first time (noted), or one given up on


def signature(args, kw, GpuMat):
    """The call's signature (hashable), or None when an argument is of a kind recipes do not
    cover. Keyword arguments count by name, in the order given, after the positional ones.
    (Whether a GpuMat is pending is not in it: op functions read an argument's value through
    ``GpuMat._value``, which a replay calls too.)"""
    sig = []
    mats = None
    for a in (args if not kw else args + tuple(kw.values())):
        t = type(a)
        if t is GpuMat:
            if mats is None:
                mats = [a]
                sig.append((a._rows, a._cols, a._depth, a._cn))
            else:
                sig.append((a._rows, a._cols, a._depth, a._cn, _alias(a, mats)))
                mats.append(a)
        elif t is float or t is int:
            sig.append(t)
            sig.append(a if a != 0 or t is int else _signed_zero(a))
        elif t is tuple:
            types = tuple(map(type, a))
            if not _PLAIN.issuperset(types):
                return None
            sig.append(types)
            sig.append(a if 0 not in a else tuple(_signed_zero(v) if v == 0 and type(v) is float else v for v in a))
        elif t in _PLAIN:
            sig.append(t)
            sig.append(a)
        else:
            return None
    if kw:
        sig.append(tuple(kw))
    return tuple(sig)


def _signed_zero(v):
    """0.0 and -0.0 are equal keys but not the same scalar (a product's sign): told apart."""
    return ("-0.0",) if math.copysign(1.0, v) < 0 else ("0.0",)


def _alias(a, mats):
    for i, b in enumerate(mats):
        if b is a:
            return i
    return -1


def call(fn, args, kw, GpuMat, hot=True):
    """``fn(*args, **kw)`` through its recipe when one fits (the caller holds the runtime lock);
    ``hot=False``: the C replay already answered MISS (lazycv._hotpath.Api)."""
    if HOT and hot:
        out = _hotpath.call(fn, args, kw)      # the replay in C, when the recipe exists
        if out is _RUN:                        # (nothing to capture or replay: see _hotpath.call)
            return fn(*args, **kw)
        if out is not _MISS:
            return out
    if not ENABLED:
        return fn(*args, **kw)
    if GpuMat is not _GPUMAT:
        bind(GpuMat)
    sig = _signature(args, kw)
    if sig is None:
        return fn(*args, **kw)
    key = (fn, sig)
    try:
        recipe = _RECIPES.get(key)
    except TypeError:                       # an unhashable value inside a tuple
        return fn(*args, **kw)
    if recipe.__class__ is Recipe:
        values = args if not kw else args + tuple(kw.values())
        if CHECK:
            return _checked(recipe, fn, args, kw, values, GpuMat)
        return replay(recipe, values, GpuMat)
    if recipe is None:
        if key not in _NOTED:               # seen once: a loop's signature is captured when it comes back
            _note(key)
            return fn(*args, **kw)
        recipe = 0
    elif recipe >= _MAX_TRIES:
        return fn(*args, **kw)
    out, made = _capture(fn, args, kw, GpuMat)
    _remember(key, made if made is not None else recipe + 1)
    _NOTED.discard(key)
    return out


def answered(fn, args, kw, GpuMat, answer):
    """The call after the C wrapper's answer (lazycv._hotpath.Api; None: no answer yet, as from
    a Python wrapper): RUN runs the function, MISS takes the Python path without asking C again."""
    if answer is _RUN:
        return fn(*args, **kw)
    return call(fn, args, kw, GpuMat, hot=answer is None)


def _note(key):
    """A signature seen the first time; a full set of them starts over."""
    if len(_NOTED) >= LIMIT:
        _NOTED.clear()
    _NOTED.add(key)


def _remember(key, value):
    """Keep ``value`` for ``key``; a full table starts over (a program whose signatures never
    repeat — a scalar that changes every frame — keeps paying only a look-up)."""
    if len(_RECIPES) >= LIMIT and key not in _RECIPES:
        _RECIPES.clear()
    _RECIPES[key] = value


def replay(recipe, args, GpuMat):
    """The recipe's nodes over ``args`` (the call's positional then keyword values) and the
    GpuMats that hand them out."""
    nodes = recipe.nodes
    if len(nodes) == 1:                     # (most calls: one node of one or two arguments)
        op, static, dyn, rows, cols, depth, cn, refs = nodes[0]
        if len(refs) == 1:
            inputs = (args[~refs[0]]._value(recipe.func),)
        elif len(refs) == 2:
            inputs = (args[~refs[0]]._value(recipe.func), args[~refs[1]]._value(recipe.func))
        else:
            inputs = tuple([args[~r]._value(recipe.func) for r in refs])
        nd = _node(op, inputs, static, dyn, rows, cols, depth, cn)
        if recipe.many is None and not STATE.any_shared:
            out = _lazy(GpuMat, nd)
            out._stream = streams.RECORD_ON
            return out
        made = [nd]
    else:
        made = []
        for op, static, dyn, rows, cols, depth, cn, refs in nodes:
            made.append(_node(op, tuple([made[r] if r >= 0 else args[~r]._value(recipe.func) for r in refs]),
                              static, dyn, rows, cols, depth, cn))
    on = streams.RECORD_ON
    if recipe.many is None:
        out = _lazy(GpuMat, made[recipe.results])
        out._stream = on
        if STATE.any_shared:
            runtime.read_shared_now(out)
        return out
    outs = []
    for i in recipe.results:
        if i.__class__ is int:
            o = _lazy(GpuMat, made[i])
            o._stream = on
            if STATE.any_shared:
                runtime.read_shared_now(o)
            outs.append(o)
        else:
            outs.append(i[0])               # a plain value the call returned (threshold's)
    return outs if recipe.many is list else recipe.many(outs)


def _state(m):
    return (m._node, m._alloc, m._rows, m._cols, m._depth, m._cn, m._y0, m._x0, m._parent)


def _capture(fn, args, kw, GpuMat):
    """Run the full path and read a recipe off what it did (None: it did more than record)."""
    values = args if not kw else args + tuple(kw.values())
    mats = [a for a in values if type(a) is GpuMat]
    before = [_state(m) for m in mats]
    rec, stats = ir._THREAD.rec, STATE.stats
    copies = (stats["bytes_d2h"], stats["bytes_h2d"])
    first = ir.take_number()               # nodes made by the call number above this
    out = fn(*args, **kw)
    last = ir.take_number()
    if ir._THREAD.rec is not rec or copies != (stats["bytes_d2h"], stats["bytes_h2d"]) \
            or any(_state(m) != b for m, b in zip(mats, before)):
        return out, None
    return out, _read_recipe(out, values, mats, first, last, GpuMat, getattr(fn, "__name__", ""))


def _read_recipe(out, args, mats, first, last, GpuMat, func):
    """The Recipe of a call that returned ``out`` and numbered its nodes between ``first`` and
    ``last``; None unless every returned GpuMat is a new lazy result and every node it needs
    is one the call made or an argument's own value."""
    if type(out) is GpuMat:
        outs, many = [out], None
    elif type(out) in (list, tuple) and any(type(o) is GpuMat for o in out) and \
            all(type(o) is GpuMat or type(o) in _PLAIN for o in out):
        outs, many = [o for o in out if type(o) is GpuMat], type(out)
    else:
        return None
    on = streams.RECORD_ON
    for o in outs:
        n = o._node
        if n is None or o._alloc is not None or o._parent is not None or o._views or o._stream is not on \
                or not first < n.seq < last or any(o is m for m in mats):
            return None
    # the arguments' own values, as a node of the call may have read them (GpuMat._value)
    values, fills = {}, 0
    for i, a in enumerate(args):
        if type(a) is GpuMat:
            for v in (a._node, a._src, a._alloc.constant[4] if a._alloc is not None and a._alloc.constant else None):
                if v is not None and id(v) not in values:
                    values[id(v)] = i
                    fills += not v.is_source and first < v.seq < last
    made = {}
    stack = [o._node for o in outs]
    while stack:
        n = stack.pop()
        if id(n) in made:
            continue
        made[id(n)] = n
        for v in n.inputs:
            if id(v) in values:
                continue                     # an argument's value (a fill node _value made too)
            if v.is_source or not first < v.seq < last:
                return None                  # memory or a result the arguments do not name
            stack.append(v)
    if len(made) + fills != last - first - 1:
        return None                          # a node no result reads: the call did more
    order = sorted(made.values(), key=lambda n: n.seq)
    index = {id(n): j for j, n in enumerate(order)}
    nodes = tuple((n.op, n.static, n.dyn, n.rows, n.cols, n.depth, n.cn,
                   tuple(index[id(v)] if id(v) in index else ~values[id(v)] for v in n.inputs)) for n in order)
    results = index[id(outs[0]._node)] if many is None else \
        tuple(index[id(o._node)] if type(o) is GpuMat else (o,) for o in out)
    return Recipe(nodes, results, many, func)


def _checked(recipe, fn, args, kw, values, GpuMat):
    """LAZYCV_RECIPES=check: the replay and the full path must record the same nodes."""
    first = ir.take_number()
    got = replay(recipe, values, GpuMat)
    out = fn(*args, **kw)
    want, have = _structure(out, first), _structure(got, first)
    if want != have:
        raise AssertionError(f"lazycv recipe of {getattr(fn, '__name__', fn)} differs from its full path:\n"
                             f"  replay:    {have}\n  full path: {want}")
    return out


def _structure(out, first):
    """The nodes behind ``out`` made after ``first``, as comparable text (inputs older than
    ``first`` by identity)."""
    outs = [o for o in out if hasattr(o, "_node")] if isinstance(out, (list, tuple)) else [out]
    seen, lines, stack = {}, [], [o._node for o in outs]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        stack.extend(v for v in n.inputs if not v.is_source and v.seq > first)
    order = sorted(seen.values(), key=lambda n: n.seq)
    index = {id(n): j for j, n in enumerate(order)}
    for n in order:
        refs = tuple(index[id(v)] if id(v) in index else ("old", id(v)) for v in n.inputs)
        lines.append(repr((n.op.name, n.static, n.dyn, n.rows, n.cols, n.depth, n.cn, refs)))
    plain = [o for o in out if not hasattr(o, "_node")] if isinstance(out, (list, tuple)) else []
    return lines, [index[id(o._node)] for o in outs], plain, type(out).__name__
