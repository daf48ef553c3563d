"""The plan cache: a flush whose pending graph has the structure of an earlier one reuses its plan.

Video code records the same calls every frame (and a loop over frames or ROIs records the same
chain many times), so planning — the walk, the fusion partition, the kernel layouts and their
batching — would redo identical work each flush. A flush is *encoded* (:class:`Graph`) as the
list of its pending nodes in recording order (a topological order), each a token of everything
the planner looks at (op, static parameters,
type, size, the depth-cut flag, which earlier values it reads), sources as tokens of their type,
size and which buffer they read (buffers numbered in first-seen order, so "the same frame" and
"different frames" plan differently), and the sinks with whether each writes into user memory.
Scalars, ROI offsets and pointers are not in the key: they are kernel arguments, fetched from
the new nodes at launch. On a hit the cached plan, stored as positions in that list, is rebuilt
over the new values without planning.
"""
import operator
from collections import OrderedDict

from . import codegen, planner

CAPACITY = 128
_SEQ = operator.attrgetter("seq")


class Graph:
    """The pending graph below some roots, encoded: ``objs`` (values by position, inputs first),
    ``pos`` (position by id), ``tokens`` (one per position) and ``consumed`` (positions some
    node reads). A flush encodes its live results once: the same walk finds the sinks and
    keys the plan cache."""
    __slots__ = ("objs", "pos", "tokens", "consumed")

    def __init__(self, roots):
        # the pending nodes below the roots; nodes are numbered as they are recorded and an
        # input is always recorded before its consumer, so that order is a topological one
        seen, nodes = set(), []
        stack = [v for v in roots if not v.is_source and v.result is None]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            nodes.append(v)
            for i in v.inputs:
                if not i.is_source and i.result is None and id(i) not in seen:
                    stack.append(i)
        nodes.sort(key=_SEQ)
        objs, pos, bufs, tokens, consumed = [], {}, {}, [], set()
        cut, depth_cut = planner.DEPTH_CUT - 1, planner.DEPTH_CUT
        for v in nodes:
            refs = []
            for i in v.inputs:
                if not i.is_source and i.result is not None:
                    i = i.result                   # computed earlier: read from memory
                p = pos.get(id(i))
                if p is None:                      # a source seen for the first time
                    p = pos[id(i)] = len(objs)
                    objs.append(i)
                    tokens.append((bufs.setdefault(id(i.buf), len(bufs)), i.depth, i.cn, i.rows, i.cols))
                refs.append(p)
            refs = tuple(refs)
            consumed.update(refs)
            pos[id(v)] = len(objs)
            objs.append(v)
            tokens.append((v.op, v.static, v.depth, v.cn, v.rows, v.cols, v.height % depth_cut == cut, refs))
        self.objs, self.pos, self.tokens, self.consumed = objs, pos, tokens, consumed

    def is_consumed(self, node):
        p = self.pos.get(id(node))
        return p is not None and p in self.consumed

    def key(self, values, by_node, fuse):
        """The plan-cache key for computing ``values``; None when one is not a pending node of
        this graph (the planner's own path handles those)."""
        sinks = []
        for v in values:
            p = self.pos.get(id(v))
            if p is None:
                return None
            sinks.append((p, any(m._alloc is not None for m in by_node.get(id(v), ()))))
        return fuse, tuple(self.tokens), tuple(sinks)


class _Plan:
    """A plan in positions: kernels (rows, cols, level, output positions, node positions) and
    the launch grouping with each layout's value positions and signature."""
    __slots__ = ("kernels", "phases")


def _freeze(kernels, phases, pos):
    """The plan in positions; ``pos(value)`` is a value's position (KeyError if it has none)."""
    ki = {id(k): j for j, k in enumerate(kernels)}
    plan = _Plan()
    plan.kernels = [(k.rows, k.cols, k.level, [pos(n) for n in k.outputs],
                     [pos(n) for n in k.nodes]) for k in kernels]
    plan.phases = [[[[(ki[id(k)], [pos(v) for v in lay.values], lay.signature, lay.outputs,
                       lay.inputs) for k, lay in kind] for kind in launch] for launch in phase]
                   for phase in phases]
    return plan


def _thaw(plan, objs):
    kernels = []
    for rows, cols, level, outs, nodes in plan.kernels:
        k = planner.Kernel(rows, cols, level)
        k.outputs = [objs[p] for p in outs]
        k.nodes = [objs[p] for p in nodes]
        kernels.append(k)
    rebuilt = codegen.KernelLayout.rebuilt
    phases = [[[[(kernels[j], rebuilt([objs[p] for p in vals], sig, outs, ins))
                 for j, vals, sig, outs, ins in kind] for kind in launch] for launch in phase]
              for phase in plan.phases]
    return kernels, phases


class ReplayKey:
    """A flush's replay key with its hash computed once. A loop's recording key holds a token
    per recorded op — hundreds — and hashing or comparing it costs tens of µs (23 each for W1's
    64-frame loop): a look-up hashes it once and compares it once, and the cache moves a hit
    by the key it stored (compared by identity). Where lazycv/_hotpath.c was built,
    recipes.bind replaces this class by its C twin (``_hotpath.ReplayKey``), whose hash and
    comparison are not Python calls; the class stays as ``PY_REPLAY_KEY``."""
    __slots__ = ("parts", "_hash")

    def __init__(self, parts):
        self.parts, self._hash = parts, hash(parts)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return self is other or (other.__class__ is self.__class__ and self._hash == other._hash
                                 and self.parts == other.parts)


PY_REPLAY_KEY = ReplayKey


class _Replay:
    """A flush remembered by its recording: which of the live pending mats were its sinks, its
    plan in recording positions, and its launch as a program (lazycv.program.FlushProgram;
    None until a replay has tried to capture one, False where none applies); ``key``: the
    ReplayKey it is stored under."""
    __slots__ = ("sinks", "plan", "program", "key")

    def __init__(self, sinks, plan, key):
        self.sinks, self.plan, self.program, self.key = sinks, plan, None, key

    def one_batched_launch(self):
        """The plan's only launch when it is one batched launch of several items (the
        general path launches it batched too, so capturing it changes nothing), else None."""
        phases = self.plan.phases
        if len(phases) == 1 and len(phases[0]) == 1 and sum(len(kind) for kind in phases[0][0]) > 1:
            return phases[0][0]
        return None

    def one_kernel(self):
        """The plan entry (in positions) of its only kernel when the plan is one kernel of one
        item, else None."""
        phases = self.plan.phases
        if len(phases) == 1 and len(phases[0]) == 1 and len(phases[0][0]) == 1 and len(phases[0][0][0]) == 1:
            return phases[0][0][0][0]
        return None

    def thaw(self, rec, mats):
        """(sinks, kernels, phases): the plan over the new recording's values."""
        kernels, phases = _thaw(self.plan, rec.values())
        return [mats[i] for i in self.sinks], kernels, phases


class PlanCache:
    """Recent plans by encoded structure (least recently used dropped beyond ``CAPACITY``), and
    recent flushes by their recording (:meth:`replay`)."""

    def __init__(self):
        self._plans = OrderedDict()
        self._replays = OrderedDict()

    def plan(self, values, graph, by_node, fuse, build, stats):
        """(kernels, phases) for ``values``, pending nodes of the flush's encoded ``graph``;
        ``build()`` plans from scratch on a miss."""
        key = graph.key(values, by_node, fuse)
        if key is None:
            return build()
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            stats["plan_hits"] += 1
            return _thaw(plan, graph.objs)
        kernels, phases = build()
        self._plans[key] = _freeze(kernels, phases, lambda v: graph.pos[id(v)])
        _bound(self._plans)
        return kernels, phases

    @staticmethod
    def replay_key(rec, mats, requested, fuse):
        """The key of a flush of ``mats`` (the live pending GpuMats) after recording ``rec``:
        the recording's structure and, per mat, which node it holds, whether it writes into its
        own memory and whether it was asked for. None when a mat's node was not recorded in
        ``rec`` (pending since an earlier flush) or ``rec`` closed."""
        if not rec.open:
            return None
        gen, live = rec.gen, []
        for m in mats:
            n = m._node
            if n.rgen != gen:
                return None
            # (position, writes into its memory, asked for) as one int: cheap to hash
            live.append(n.rpos * 4 + (m._alloc is not None) * 2 + (id(m) in requested))
        return ReplayKey((fuse, rec.key(), tuple(live)))

    @staticmethod
    def loose_key(key):
        """``key`` (a :meth:`replay_key`) with the size left out of each memory region that is
        read only through inputs whose size the reading node carries in its dyn values (a
        resize or warp of a crop: the kernel reads the size from the per-item tables, the
        region's offsets and buffer are arguments). A loop over new crops every frame — a
        detector's boxes — then replays one plan. None where no size is left out, or where a
        result writes into memory (whether writes and reads overlap depends on sizes)."""
        if key is None:
            return None
        fuse, tokens, live = key.parts
        if any(x & 2 for x in live):
            return None
        loose = (_hot_loose or loose_tokens)(tokens)
        return ReplayKey((fuse, loose, live, "loose")) if loose is not None else None

    def replay(self, key, stats, loose=False):
        """The remembered flush (a ``_Replay``) when an earlier flush recorded the same calls
        and left the same mats alive (the same :meth:`replay_key`): its plan serves the new
        values with no walk of the graph (``thaw``). None otherwise. The plan is the one that
        flush made, so the results are the same as planning again (the key holds everything
        planning looks at)."""
        hit = self._replays.get(key) if key is not None else None
        if hit is None:
            return None
        # (the key it was stored under, found by identity; a loose key is stored apart)
        self._replays.move_to_end(key if loose else hit.key)
        stats["plan_hits"] += 1
        return hit

    def remember(self, key, rec, mats, sinks, kernels, phases, loose):
        """Keep a flush's plan under its :meth:`replay_key` for :meth:`replay`, and under
        ``loose``, its :meth:`loose_key` (None: it has none), the same remembered flush,
        program and all."""
        if key is None or not kernels:
            return
        try:
            plan = _freeze(kernels, phases, rec.position)
        except KeyError:        # the plan reads something the recording did not see
            return
        at = {id(m): i for i, m in enumerate(mats)}
        self._replays[key] = replay = _Replay([at[id(m)] for m in sinks], plan, key)
        if loose is not None:
            self._replays[loose] = replay
        _bound(self._replays)


def loose_tokens(tokens):
    """A recording's tokens with ``(buffer, depth, cn)`` for each memory token whose every
    reader reads it through an input in its op's ``size_in_dyn``; None where there is none."""
    sized, memory = set(), []
    for i, t in enumerate(tokens):
        if len(t) != 8:                    # memory: (buffer, depth, cn, rows, cols)
            memory.append(i)
        elif t[0].size_in_dyn:             # a node: (op, static, depth, cn, rows, cols, height, refs)
            free = t[0].size_in_dyn
            sized.update([r for k, r in enumerate(t[7]) if k not in free])
        else:
            sized.update(t[7])
    free = [i for i in memory if i not in sized]
    if not free:
        return None
    loose = list(tokens)
    for i in free:
        loose[i] = loose[i][:3]
    return tuple(loose)


_hot_loose = None          # loose_tokens in C (lazycv._hotpath), once recipes.bind() hands it over


def _bound(cache):
    while len(cache) > CAPACITY:          # (a remembered flush may add two keys)
        cache.popitem(last=False)
