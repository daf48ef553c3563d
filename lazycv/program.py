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

Flush programs do the same for plain cv2.cuda code: a replayed flush (plancache) that went out
as one launch is that launch again for the next replays, filled from the recording.
"""
import struct

import numpy as np

from . import runtime, streams
from ._types import DEPTH_DTYPE
from .ir import Allocation, Node, Source
from .runtime import DYN_CONVERT, STATE, fused_ops


class BatchProgram:
    """One captured batched launch: its kernel and tables, where its arguments take the
    batch's inputs (``in_pos``: argument position, item) and its output slab (``out_pos``),
    and the shape of the result (``n`` items of ``planes`` planes, ``rows`` x ``cols`` x ``cn``
    of ``depth``)."""
    __slots__ = ("compiled", "n", "max_h", "max_w", "ti", "tf", "nargs", "in_pos", "out_pos",
                 "planes", "rows", "cols", "cn", "depth", "row_item", "src_cols", "y0", "x0",
                 "planar", "tables", "dtype", "slab_shape", "tensor_shape", "outputs")

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
        # what each form's launch writes (BufferPool.outputs_for keeps one form's last outputs):
        # the batch tensor, one item's tensor, or a slab of GpuMat planes
        prog.outputs = (_Outputs(None, prog.tensor_shape, prog.dtype),
                        _Outputs(None, prog.tensor_shape[1:], prog.dtype),
                        _Outputs(n * planes, (rows, cols * cn), prog.dtype))
        prog.tables = STATE.backend.constant_tables(ti, rec.tf)    # uploaded once
        # every source an item reads is its input or a region of it: its table offsets move
        # with the input's
        prog.row_item = row_item
        prog.src_cols = [c for _, cy, cx, _ in spec.src_fetch for c in (cy, cx)]
        prog.y0, prog.x0 = [v.y0 for v in inputs], [v.x0 for v in inputs]
        return prog

    def run(self, values, items=False, single=False):
        """Launch for ``values``. Returns the batch tensor (fresh pooled device memory; with
        ``single``, one item's, without the batch axis: its own allocation, since a pooled
        buffer's lifetime is that of the array handed out, not of views of it), or with
        ``items`` the 2-D buffer of each plane, item-major (GpuMat results); None where the
        backend cannot launch into a tensor (a launch path that types real arrays)."""
        be = STATE.backend
        # the last call's outputs again where nothing holds them any more (BufferPool.outputs_for)
        outputs = self.outputs[2 if items else int(single)]
        if items:
            (slab, out), = be.buffers.outputs_for(outputs, outputs.shapes)
        else:
            out, = be.buffers.outputs_for(outputs, outputs.shapes)
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


class _Outputs:
    """One form of a batch program's outputs, as BufferPool.outputs_for asks for them (the
    object is the owner of the kept outputs; ``n`` None: one buffer, else a slab of ``n``)."""
    __slots__ = ("shapes",)

    def __init__(self, n, shape, dtype):
        self.shapes = [(n, shape, dtype)]


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


class _FlushProgramBase:
    """What both flush programs keep besides their launch: the backend that captured it (the
    plan cache outlives a change of backend), where each sink's result is, and the op count."""
    __slots__ = ("backend", "binds", "ops_fused")

    def _finish(self, nodes, bufs, mats):
        """Count the launch; each computed node reads its buffer from now on; each sink
        (``binds``: position in ``mats``, output index) holds its output's memory (the loops
        in C where lazycv/_hotpath.c was built: _hotpath.finish)."""
        stats = STATE.stats
        stats["kernels_launched"] += 1
        stats["ops_fused"] += self.ops_fused
        hot = runtime.HOTPATH
        if hot is not None:
            hot.finish(nodes, bufs if type(bufs) is list else list(bufs), self.binds, mats, STATE.computed)
            return True
        for n, buf in zip(nodes, bufs):
            n.result = Source(buf, 0, 0, n.rows, n.cols, n.depth, n.cn)
        STATE.computed.extend(nodes)
        allocs = {}
        for i, r in self.binds:
            a = allocs.get(r)
            if a is None:
                a = allocs[r] = Allocation(bufs[r])
            mats[i]._bind_result(a, 0, 0)
        return True


class FlushProgram(_FlushProgramBase):
    """A replayed flush (plancache.PlanCache.replay) that went out as one batched launch,
    as that launch: the next flush with the same recording fills the per-item tables and the
    launch arguments straight from the recorded values by position and binds the results — no
    kernels, layouts, binding sets or per-item lookups rebuilt (the loop of cv2.cuda calls over
    64 frames or 50 ROIs: hundreds of µs of Python a flush).

    Everything it keeps is fixed by the recording's key: sizes, types, which buffers are the
    same, the plan. What the key leaves out — buffers, ROI offsets, scalars — is read anew.
    """
    __slots__ = ("compiled", "n", "max_h", "max_w", "ti", "tf", "src_fills", "int_fills",
                 "float_fills", "arg_from", "slabs", "node_at", "item_at", "last_fills", "last_tables",
                 "tables")

    @classmethod
    def capture(cls, record, launch, kernels, sinks, at):
        """The program of a replayed flush whose plan (in positions) is the one ``launch`` (its
        kinds of (kernel index, value positions, ...)) over ``kernels`` and that went out as
        the LaunchRecord ``record``; ``sinks`` are the flush's sink mats (computed by it) and
        ``at`` their positions in the flush's live mats. None when anything does not fit."""
        members_by_kind = [m for m, _ in record.kinds]
        if len(members_by_kind) != len(launch) or any(
                len(a) != len(b) for a, b in zip(members_by_kind, launch)):
            return None
        prog = cls()
        prog.backend = STATE.backend            # (the device's instance: tables live in its memory)
        prog.compiled, prog.max_h, prog.max_w = record.compiled, record.max_h, record.max_w
        prog.n = sum(len(kind) for kind in launch)
        prog.ti, prog.tf = record.ti.copy(), record.tf.copy()
        prog.last_fills = prog.last_tables = prog.tables = None
        prog.src_fills, prog.int_fills, prog.float_fills = [], [], []
        prog.arg_from, prog.slabs = [], []
        # each result: its node's position and its buffer's (slab, item), in run's gathers
        node_at, item_at = [], []
        slot_of = {}                       # id(an item's output buffer) -> index in those
        slab_ids = {id(s): k for k, s in enumerate(record.slabs)}
        args = iter(record.args)
        b0 = 0
        ops, seen = 0, set()
        for j, (kind, (members, item_bufs)) in enumerate(zip(launch, record.kinds)):
            spec, b1 = record.compiled.specs[j], b0 + len(kind)
            vals = [entry[1] for entry in kind]
            for vi, cy, cx, _ in spec.src_fetch:
                poss = [v[vi] for v in vals]
                prog.src_fills.append((b0, b1, cy, cx, poss))
            for vi, kk, col in spec.int_fetch:
                prog.int_fills.append((b0, b1, col, kk, [v[vi] for v in vals]))
            for vi, kk, col, fkind in spec.float_fetch:
                prog.float_fills.append((b0, b1, col, kk, [v[vi] for v in vals], fkind == "f32"))
            for _, vi, how, n in spec.arrays:
                # the recorded argument's buffer is the source of the first member reading it
                first = {}
                for (_, lay), v in zip(members, vals):
                    first.setdefault(id(lay.source(vi).buf), v[vi])
                for _ in range(n):
                    a = next(args)
                    if id(a) not in first:
                        return None
                    prog.arg_from.append(first[id(a)])
            for items in item_bufs:
                slab = next(args)
                if id(slab) not in slab_ids or len(items) != len(kind):
                    return None
                prog.arg_from.append(-1 - len(prog.slabs))
                shape = tuple(slab.shape)
                prog.slabs.append((shape[0], shape[1:], np.dtype(slab.dtype)))
            for local, ((k, _), (ki, *_)) in enumerate(zip(members, kind)):
                outs = kernels[ki][3]
                if len(outs) != len(item_bufs):
                    return None
                for oi, npos in enumerate(outs):
                    s = len(prog.slabs) - len(item_bufs) + oi
                    slot_of[id(item_bufs[oi][local])] = len(node_at)
                    node_at.append(npos)
                    item_at.append((s, local))
                if len(k.nodes) > 1:
                    ops += fused_ops(k, seen)
            b0 = b1
        if next(args, None) is not None:
            return None
        prog.binds = _binds(sinks, at, slot_of)
        prog.ops_fused = ops
        prog.node_at, prog.item_at = tuple(node_at), tuple(item_at)
        return prog if prog.binds is not None else None

    def run(self, values, mats):
        """Launch for the new recording's ``values`` (by position) and bind the results to the
        sinks among ``mats`` (the live pending mats, in the key's order). False (nothing done)
        when a value the launch needs is gone or the backend is another."""
        if STATE.backend is not self.backend:
            return False
        hot = runtime.HOTPATH
        try:
            fills = self._fills(values)
            arrays = [values[p].buf for p in self.arg_from if p >= 0]
            if hot is not None:
                nodes = hot.pick(values, self.node_at, False)        # (None where one is gone)
            else:
                nodes = [values[p] for p in self.node_at]
                nodes = None if None in nodes else nodes
            if nodes is None:
                return False
        except AttributeError:           # a value is gone (None): the general path decides
            return False
        be = STATE.backend
        if streams.ACTIVE:
            streams.select_mats([mats[i] for i, _ in self.binds])
        ti = tf = None
        if fills != self.last_fills:
            ti, tf = self._tables_of(fills)
            self.last_fills, self.last_tables, self.tables = fills, (ti, tf), None
        elif self.tables is None:
            # the same offsets and scalars as the last flush (a loop over new frames): the
            # tables go to the device once and serve every launch while they stay the same
            self.tables = be.constant_tables(*self.last_tables)
        slabs = be.buffers.outputs_for(self, self.slabs)
        args, it = [], iter(arrays)
        for p in self.arg_from:
            args.append(next(it) if p >= 0 else slabs[-1 - p][0])
        be.launch_batched(self.compiled, self.n, self.max_h, self.max_w, ti, tf, args, tables=self.tables)
        bufs = hot.pick(slabs, self.item_at, True) if hot is not None else \
            [slabs[s][1][b] for s, b in self.item_at]
        return self._finish(nodes, bufs, mats)

    def _fills(self, values):
        """What this flush's values put in the tables: ROI offsets, integer and float scalars
        (floats as their bytes, so that -0.0 and 0.0 differ). In C where lazycv/_hotpath.c was
        built (_hotpath.fills: W1's 64-frame loop spent 56 µs a flush here in Python)."""
        hot = runtime.HOTPATH
        if hot is not None:
            return hot.fills(values, self.src_fills, self.int_fills, self.float_fills)
        return self._py_fills(values)

    def _py_fills(self, values):
        """_fills in Python (_hotpath.fills's twin)."""
        fills = []
        for b0, b1, cy, cx, poss in self.src_fills:
            srcs = [values[p] for p in poss]
            fills.append([v.y0 for v in srcs])
            fills.append([v.x0 for v in srcs])
        for b0, b1, col, kk, poss in self.int_fills:
            fills.append([int(values[p].dyn[kk]) for p in poss])
        for b0, b1, col, kk, poss, f32 in self.float_fills:
            fills.append(struct.pack(f"<{len(poss)}d", *[values[p].dyn[kk] for p in poss]))
        return fills

    def _tables_of(self, fills):
        """The per-item tables holding ``fills`` (fresh arrays)."""
        ti, tf = self.ti.copy(), self.tf.copy()
        it = iter(fills)
        for b0, b1, cy, cx, _ in self.src_fills:
            ti[b0:b1, cy] = next(it)
            ti[b0:b1, cx] = next(it)
        for b0, b1, col, _, _ in self.int_fills:
            ti[b0:b1, col] = next(it)
        for b0, b1, col, _, _, f32 in self.float_fills:
            vals = np.frombuffer(next(it), np.float64)
            tf[b0:b1, col] = vals.astype(np.float32) if f32 else vals
        return ti, tf


def _binds(sinks, at, slot_of):
    """(position in the live mats, output index) of each sink, found by the memory the
    captured flush bound it to; None when a sink does not hold a whole output."""
    binds = []
    for m, i in zip(sinks, at):
        r = slot_of.get(id(m._alloc.buf)) if m._alloc is not None and m._node is None else None
        if r is None or m._y0 or m._x0:
            return None
        binds.append((i, r))
    return binds


class SingleFlushProgram(_FlushProgramBase):
    """A replayed flush that went out as one kernel of one item (a frame at a time: W2), as
    that launch: its arguments gathered from the recorded values by position, fresh outputs,
    the results bound — no plan thawed, no layout or argument recipe walked. ``launcher``: the
    backend's C launcher of the kernel (Backend.launcher) that _hotpath's run_single calls in
    place of ``backend.launch``; None until the first run asks, False where there is none."""
    __slots__ = ("compiled", "rows", "cols", "recipe", "memo", "shapes", "slab", "results", "launcher")

    @classmethod
    def capture(cls, kernel, layout, entry, sinks, at):
        """``kernel``/``layout``: the flush's one kernel as it ran; ``entry``: its plan entry
        in positions (kernel index, value positions, ...)."""
        compiled = STATE.kernel_cache().compiled(layout)
        if compiled is None or compiled.reduce is not None:
            return None                   # (a reduction's launch takes partials: the general path)
        vals = entry[1]
        prog = cls()
        prog.backend = STATE.backend            # (the device's instance: tables live in its memory)
        prog.compiled, prog.rows, prog.cols = compiled, kernel.rows, kernel.cols
        prog.launcher = None
        prog.recipe = tuple((True, vals[item[1]], None, None) if item[0] == "src" else
                            (False, vals[item[1]], item[2], DYN_CONVERT[item[3]]) for item in compiled.recipe)
        prog.memo = [None] * len(prog.recipe)     # (_hotpath.single_args: scalars converted last)
        outputs, slot_of = [], {}
        for n in kernel.outputs:
            if n.result is None or n.result.y0 or n.result.x0:
                return None
            buf = n.result.buf
            outputs.append(((n.rows, n.cols * n.cn), np.dtype(buf.dtype)))
            slot_of[id(buf)] = len(outputs) - 1
        # outputs of one shape (a split's planes) come from one slab: one pool request
        prog.slab = len(outputs) > 1 and len(set(outputs)) == 1
        prog.shapes = [(len(outputs),) + outputs[0]] if prog.slab else [(None,) + o for o in outputs]
        prog.results = [vals[vi] for vi, _ in layout.outputs]
        prog.binds = _binds(sinks, at, slot_of)
        prog.ops_fused = fused_ops(kernel, set()) if len(kernel.nodes) > 1 else 0
        return prog if prog.binds is not None else None

    def run(self, values, mats):
        """As FlushProgram.run."""
        be = STATE.backend
        if be is not self.backend:
            return False
        nodes = [values[p] for p in self.results]
        if None in nodes:
            return False
        bufs = be.buffers.outputs_for(self, self.shapes)
        if self.slab:
            bufs = bufs[0][1]
        hot = runtime.HOTPATH
        args = hot.single_args(values, self.recipe, bufs, self.memo) if hot is not None else \
            self._py_args(values, bufs)
        if args is None:                 # a value is gone: the general path decides
            return False
        if streams.ACTIVE:
            streams.select_mats([mats[i] for i, _ in self.binds])
        be.launch(self.compiled, self.rows, self.cols, args)
        return self._finish(nodes, bufs, mats)

    def _py_args(self, values, bufs):
        """The launch arguments in Python (_hotpath.single_args's twin): each source's buffer
        and offsets, each scalar converted, each output buffer at (0, 0); None where a value
        is gone or is not what the recipe reads."""
        args = []
        for is_source, p, kk, conv in self.recipe:
            v = values[p]
            if is_source:
                if type(v) is not Source:
                    return None
                args += (v.buf, v.y0, v.x0)
            else:
                dyn = v.dyn if type(v) is Node else None
                if type(dyn) is not tuple or not 0 <= kk < len(dyn):
                    return None
                args.append(conv(dyn[kk]))
        for buf in bufs:
            args += (buf, 0, 0)
        return tuple(args)


# The run lazycv._hotpath's flush_alone stands in for (run_single): a class whose run is another
# (a subclass, a test's spy) runs that one in Python. Kept apart so that a patched class attribute
# cannot be mistaken for it.
RUN_IN_C = SingleFlushProgram.run
