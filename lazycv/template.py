"""Item templates: what one item recorded, instantiated again for the next item of that shape.

A pipeline applies the same steps to every frame of a batch and to every batch after it. Each
step is a cv2.cuda call that validates its arguments and records a node (W1's six calls: ~61 µs
of Python a frame on the CPU host measured). When the steps are deterministic (their nodes depend only on the input's size and type),
the nodes one item recorded are a template: for the next item with the same key, new nodes with
the same ops, static and dynamic parameters are made over the new input directly (a node's
inputs are the item's input, a region of it — a crop view — or earlier nodes of the template):
~19 µs for W1's frame there. The nodes are the ones the calls would record, so planning, the plan cache and the
results are the same as calling the steps again.
"""
from .ir import Node, Source
from .runtime import STATE


class ItemTemplate:
    """Nodes in recording order: ``entries`` hold ("node", op, input refs, static, dyn, rows,
    cols, depth, cn) or ("view", dy, dx, rows, cols) — a region of the input memory; a ref is
    -1 for the input itself or an earlier entry's index. ``outputs`` index the result
    entries (one, or one per plane); ``planar`` says the result is a list."""
    __slots__ = ("entries", "outputs", "planar", "extra_ops")

    @classmethod
    def capture(cls, root, result, since):
        """The template of ``result`` (a pending GpuMat or a list of them) computed from
        ``root`` (the item's input value) by nodes recorded after ``since`` (an ``ir.mark()``);
        None when something in it is not such a node over ``root`` (a fallback that ran at
        once, other memory, a result already computed, a node recorded before the item)."""
        planar = isinstance(result, list)
        mats = result if planar else [result]
        if any(m._node is None or m._alloc is not None for m in mats):
            return None
        entries, index = [], {}

        def ref(v):
            if v is root:
                return -1
            i = index.get(id(v))
            if i is not None:
                return i
            if not v.is_source:
                return None                        # not recorded after the input: external
            if not root.is_source or v.buf is not root.buf or v.depth != root.depth or v.cn != root.cn:
                return None
            dy, dx = v.y0 - root.y0, v.x0 - root.x0
            if dy < 0 or dx < 0 or dy + v.rows > root.rows or dx + v.cols > root.cols:
                return None
            index[id(v)] = len(entries)
            entries.append(("view", dy, dx, v.rows, v.cols))
            return index[id(v)]

        # the nodes below the results that the input does not already reach, inputs first
        order, stack, seen = [], [m._node for m in mats], set()
        while stack:
            v = stack.pop()
            if v is root or v.is_source or id(v) in seen:
                continue
            if v.result is not None or v.seq < since or not v.inputs:
                # (a node of no inputs is a value, not a step over this item: a region of the
                # input that holds a setTo fill reads as its fill node, whose value is this
                # item's alone — another item's region may hold another fill or an image)
                return None
            seen.add(id(v))
            order.append(v)
            stack.extend(v.inputs)
        order.sort(key=lambda n: n.seq)
        for n in order:
            refs = []
            for i in n.inputs:
                r = ref(i)
                if r is None:
                    return None
                refs.append(r)
            index[id(n)] = len(entries)
            entries.append(("node", n.op, tuple(refs), n.static, n.dyn, n.rows, n.cols, n.depth, n.cn))
        t = cls()
        t.entries, t.outputs, t.planar = entries, [index[id(m._node)] for m in mats], planar
        # ops the calls would have counted beyond the outputs, which count themselves
        t.extra_ops = len(order) - len(mats)
        return t

    def instantiate(self, root, gpumat_cls):
        """The result for another input value of the template's key: new nodes, new lazy
        GpuMats."""
        values = []
        for e in self.entries:
            if e[0] == "node":
                _, op, refs, static, dyn, rows, cols, depth, cn = e
                values.append(Node(op, tuple(root if r < 0 else values[r] for r in refs), static, dyn,
                                   rows, cols, depth, cn))
            else:
                _, dy, dx, rows, cols = e
                values.append(Source(root.buf, root.y0 + dy, root.x0 + dx, rows, cols, root.depth, root.cn))
        outs = [gpumat_cls._lazy(values[i]) for i in self.outputs]
        STATE.since_flush += self.extra_ops     # (counted as recorded ops: runtime.count_recorded)
        return outs if self.planar else outs[0]


def input_key(v):
    """What a template depends on besides the steps: the input value's kind, size and type,
    and the global settings node recording reads."""
    return (v.is_source, v.rows, v.cols, v.depth, v.cn, STATE.resize_mapping)
