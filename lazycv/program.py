"""Batch programs: a compose pipeline's batch as one recorded launch, run again as is.

Item templates (lazycv.template) spare a batch the step calls, but its nodes are still made,
matched against the plan cache and bound to results: tens of µs of Python a frame. When a
batch of inputs of one size and type went out as exactly one batched launch that reads only
those inputs and writes only its outputs, that launch *is* the batch: the next batch of the
same shape swaps in its input buffers and fresh output memory and launches with the tables
already on the device — nothing recorded, planned or bound per frame.

A program writes every output of item b into one slab, plane k at slot ``b * planes + k``
(codegen.BatchSpec.out_cols): the batch is one (B, C, H, W) tensor (or (B, H, W[, C]) without
to_planar) that a model can take as is; GpuMat results are the slab's planes.
"""
import numpy as np

from ._types import DEPTH_DTYPE
from .runtime import STATE


class BatchProgram:
    """One captured batched launch: its kernel and tables, where its arguments take the
    batch's inputs (``in_pos``: argument position, item) and its output slab (``out_pos``),
    and the shape of the result (``n`` items of ``planes`` planes, ``rows`` x ``cols`` x ``cn``
    of ``depth``)."""
    __slots__ = ("compiled", "n", "max_h", "max_w", "ti", "tf", "nargs", "in_pos", "out_pos",
                 "planes", "rows", "cols", "cn", "depth", "row_item", "src_cols", "y0", "x0",
                 "planar", "tables", "dtype", "slab_shape", "tensor_shape")

    @classmethod
    def capture(cls, launches, inputs, results, planar):
        """The program of a flush that made ``launches`` (runtime.capturing) for ``inputs`` (the
        items' input values: memory) and ``results`` (per item, a list of its planes,
        computed; ``planar``: the items' results are lists of planes); None when the flush was
        anything else."""
        if len(launches) != 1 or launches[0] is None:
            return None
        rec = launches[0]
        if len(rec.kinds) != 1:
            return None
        members, item_bufs = rec.kinds[0]
        spec = rec.compiled.specs[0]
        n, planes = len(inputs), len(results[0])
        first = results[0][0]
        shape = (first._rows, first._cols, first._cn, first._depth)
        if len(members) != n or len(item_bufs) != planes or any(len(r) != planes for r in results):
            return None
        where = {}
        for oi, items in enumerate(item_bufs):
            for b, buf in enumerate(items):
                where[id(buf)] = (oi, b)
        ti = rec.ti.copy()
        row_item = np.full(n, -1, np.int64)
        placed = set()
        for i, item in enumerate(results):
            for k, m in enumerate(item):
                w = where.get(id(m._alloc.buf)) if m._alloc is not None else None
                if w is None or w in placed or m._y0 or m._x0 or \
                        (m._rows, m._cols, m._cn, m._depth) != shape or row_item[w[1]] not in (-1, i):
                    return None
                placed.add(w)
                row_item[w[1]] = i
                ti[w[1], spec.out_cols[w[0]]] = i * planes + k
        if len(placed) != n * planes:
            return None                   # an output the results do not name
        # the arguments: the inputs' memory (by the first item using it) and the output slabs
        by_buf = {}
        for i, v in enumerate(inputs):
            by_buf.setdefault(id(v.buf), i)
        slabs = {id(s) for s in rec.slabs}
        in_pos, out_pos = [], []
        for p, a in enumerate(rec.args):
            if id(a) in by_buf:
                in_pos.append((p, by_buf[id(a)]))
            elif id(a) in slabs:
                out_pos.append(p)
            else:
                return None               # other memory: not a function of the inputs alone
        prog = cls()
        prog.compiled, prog.n, prog.max_h, prog.max_w = rec.compiled, n, rec.max_h, rec.max_w
        prog.ti, prog.tf, prog.nargs = ti, rec.tf, len(rec.args)
        prog.in_pos, prog.out_pos, prog.planes = in_pos, out_pos, planes
        rows, cols, cn, depth = prog.rows, prog.cols, prog.cn, prog.depth = shape
        prog.planar = planar
        prog.dtype = np.dtype(DEPTH_DTYPE[depth])
        prog.slab_shape = (n * planes, rows, cols * cn)
        # (B, C, H, W) after to_planar, else (B, H, W) or (B, H, W, C)
        prog.tensor_shape = (n, planes, rows, cols) if planar else \
            (n, rows, cols) + ((cn,) if cn > 1 else ())
        prog.tables = STATE.backend.constant_tables(ti, rec.tf)    # uploaded once
        # every source an item reads is its input or a region of it: its table offsets move
        # with the input's
        prog.row_item = row_item
        prog.src_cols = [c for _, cy, cx, _ in spec.src_fetch for c in (cy, cx)]
        prog.y0, prog.x0 = [v.y0 for v in inputs], [v.x0 for v in inputs]
        return prog

    def run(self, values, items=False):
        """Launch for ``values``. Returns the batch tensor (fresh pooled device memory), or
        with ``items`` the 2-D buffer of each plane, item-major (GpuMat results); None where
        the backend cannot launch into a tensor (a launch path that types real arrays)."""
        be = STATE.backend
        if items:
            slab, out = be.alloc_batch(*self.slab_shape, self.dtype)
        else:
            out = be.buffers.alloc(self.tensor_shape, self.dtype)
            slab = be.launch_view(out, self.slab_shape)
            if slab is None:
                return None
        args = [None] * self.nargs
        for p, i in self.in_pos:
            args[p] = values[i].buf
        for p in self.out_pos:
            args[p] = slab
        ti, tables = self.ti, self.tables
        if self.src_cols:
            y0, x0 = [v.y0 for v in values], [v.x0 for v in values]
            if y0 != self.y0 or x0 != self.x0:    # inputs elsewhere in their memory: new tables
                dy = np.subtract(y0, self.y0)[self.row_item]
                dx = np.subtract(x0, self.x0)[self.row_item]
                ti, tables = ti.copy(), None
                for j, c in enumerate(self.src_cols):
                    ti[:, c] += dx if j % 2 else dy
        be.launch_batched(self.compiled, self.n, self.max_h, self.max_w, ti, self.tf, args, tables=tables)
        STATE.stats["kernels_launched"] += 1
        return out


def batch_key(values):
    """What a program depends on besides the steps and settings, in one pass over the batch:
    each item's size and type, and the layout of its buffer — or which earlier item's buffer
    it shares (argument types and positions follow from that)."""
    first, key = {}, []
    for i, v in enumerate(values):
        buf = v.buf
        j = first.setdefault(id(buf), i)
        key.append((v.rows, v.cols, v.depth, v.cn,
                    (buf.shape, buf.strides, buf.dtype) if j == i else j))
    return tuple(key)
