"""What fuses: partition the pending graph into kernels.

Rules (docs/architecture.md explains them):

1. Element-wise ops and single-tap gathers (crop, channel moves, nearest resize) always fuse
   into their consumer: recomputing them costs a few instructions, writing them costs memory.
2. A multi-tap gather (a bilinear resize reads 4 input pixels) fuses into its consumer unless
   the consumer path already passes through another multi-tap gather: resize(resize(x)) would
   evaluate the inner resize 4 times per output pixel, so the inner one is written once instead
   (a *hard cut*: its consumers read it from memory, in a later phase).
3. Every 64 levels of pending depth are hard-cut, bounding kernel size for accumulation loops.
4. Results that must be written (sinks) do not stop fusion: a consumer in the same launch
   recomputes them in registers, so writing a result and using it costs no extra read.
5. Outputs of the same size and phase that share computation (a common node, e.g. the three
   planes of one split) share one kernel, so the common part is computed once per pixel.
   Independent chains get their own kernels (which horizontal batching may launch together).
   A node more than ``MAX_SHARED`` outputs share is written once instead (hundreds of results
   of one pending image: one kernel with hundreds of outputs would take minutes to compile);
   they read it and go out as one batched launch.
6. ``fuse=False`` (eager mode) hard-cuts every node: one kernel per op, as OpenCV's CUDA module.
7. A reduction (``OpDef.reduces``: normalize's statistic, minMax, sum, ...) is a kernel of its
   own, over its input's pixels: its input's pending chain fuses into it as into a consumer
   (a resize's pixel is computed in registers and folded in, never written), and its result, a
   small statistic, is a hard cut: the map that uses it (normalize's scale) reads it from
   memory in a later phase. It shares no kernel with a map (their loops differ).
"""
from .ir import resolved, walk

DEPTH_CUT = 64
MAX_SHARED = 32         # outputs that may share one computed node in one kernel (rule 5)


class Kernel:
    """One launch: ``outputs`` are values written to memory, all of size ``rows x cols`` — or a
    reduction's one statistic, computed over ``rows x cols`` input pixels (``reduces``)."""
    __slots__ = ("outputs", "rows", "cols", "nodes", "level")

    def __init__(self, rows, cols, level):
        self.rows, self.cols, self.level = rows, cols, level
        self.outputs, self.nodes = [], []

    @property
    def reduces(self):
        return self.outputs[0].op.reduces


def hard_cuts(nodes, fuse):
    """ids of nodes whose consumers must read them from memory."""
    if not fuse:
        return {id(n) for n in nodes}
    hard, under = {id(n) for n in nodes if n.op.reduces}, {}
    for n in reversed(nodes):                      # consumers before producers
        if id(n) not in hard and n.height % DEPTH_CUT == DEPTH_CUT - 1:
            hard.add(id(n))
        flag = (under.get(id(n), False) and id(n) not in hard) or n.op.tap_count(n) > 1
        for i in n.inputs:
            i = resolved(i)
            if i.is_source or id(i) in hard:
                continue
            if flag and i.op.tap_count(i) > 1:
                hard.add(id(i))
            else:
                under[id(i)] = under.get(id(i), False) or flag
    return hard


def _regions(nodes, hard, is_output):
    """Each output's launch level (after the hard cuts it reads) and the nodes its kernel
    computes for it."""
    level, region = {}, {}
    for n in nodes:                                # producers before consumers
        if id(n) not in is_output:
            continue
        lv, members, stack, seen = 0, [n], list(n.inputs), {id(n)}
        while stack:
            i = resolved(stack.pop())
            if i.is_source or id(i) in seen:
                continue
            seen.add(id(i))
            if id(i) in hard:
                lv = max(lv, level[id(i)] + 1)
                continue
            members.append(i)
            stack.extend(i.inputs)
        level[id(n)] = lv
        region[id(n)] = members
    return level, region


def plan(sink_values, fuse=True):
    """Kernels, in launch order, that compute ``sink_values`` (pending nodes)."""
    nodes = walk(sink_values)
    hard = hard_cuts(nodes, fuse)
    is_output = hard | {id(v) for v in sink_values}
    level, region = _regions(nodes, hard, is_output)

    # union-find: outputs whose regions share a node belong to one kernel (constants such as a
    # setTo fill are recomputed per kernel instead: sharing one must not weld frames together)
    const = {}
    for n in nodes:
        const[id(n)] = all(not resolved(i).is_source and const.get(id(resolved(i)), False)
                           for i in n.inputs)
    # rule 5's limit: a node shared by more than MAX_SHARED outputs is written once instead
    # (one kernel computing hundreds of outputs takes minutes to compile); its consumers then
    # read it, each its own kernel of one structure, and go out as one batched launch
    shared = {}
    for n in nodes:
        if id(n) in is_output and not n.op.reduces:
            for m in region[id(n)]:
                if m is not n and not const[id(m)]:
                    shared[id(m)] = shared.get(id(m), 0) + 1
    wide = {k for k, c in shared.items() if c > MAX_SHARED}
    if wide:
        hard |= wide
        is_output |= wide
        level, region = _regions(nodes, hard, is_output)
    parent = {}

    def root(k):
        while parent.get(k, k) != k:
            k = parent[k]
        return k
    owner = {}
    for n in nodes:
        if id(n) not in is_output:
            continue
        parent[id(n)] = id(n)
        if n.op.reduces:
            continue                               # (its own kernel: welds no maps together)
        for m in region[id(n)]:
            if const[id(m)] and m is not n:
                continue
            o = owner.get(id(m))
            if o is None:
                owner[id(m)] = id(n)
            else:
                a, b = root(o), root(id(n))
                if a != b:
                    parent[b] = a

    kernels = {}
    for n in nodes:
        if id(n) not in is_output:
            continue
        if n.op.reduces:                           # over its input's pixels
            src = resolved(n.inputs[0])
            key, rows, cols = ("reduce", id(n)), src.rows, src.cols
        else:
            key = (level[id(n)], n.rows, n.cols, root(id(n))) if fuse else (level[id(n)], id(n))
            rows, cols = n.rows, n.cols
        k = kernels.get(key)
        if k is None:
            k = kernels[key] = Kernel(rows, cols, level[id(n)])
        k.outputs.append(n)
        have = {id(m) for m in k.nodes}
        k.nodes.extend(m for m in region[id(n)] if id(m) not in have)
    return sorted(kernels.values(), key=lambda k: k.level)
