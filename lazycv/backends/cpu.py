"""CPU backend: generated kernels become ``numba.njit(nogil=True)`` loops over a band of rows,
run on a small thread pool (one band per core).

Why not ``parallel=True``: Numba's parfor pass doubles compile time, and its threading layer
spin-waits after each call, slowing the user's other OpenCV/numpy work; a nogil kernel on
Python threads has neither cost.

"Device" memory is ordinary numpy memory here, so upload/download are host copies; the
backend presents one virtual CUDA device so code that checks for CUDA takes its CUDA path.
"""
import inspect
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..codegen import assigned, names, split_column_invariant
from ..memory import host_free_bytes, host_pool, pool_cap
from ..log import logger
from . import cpu_native, reduce_kernels
from .base import Backend

# Each kernel twice: ``kernel`` with its arrays marked noalias (vectorisable) and
# ``kernel_aliased`` for launches whose output overlaps an input (CpuBackend._kernel_for).
_MODULE = '''import math
import numpy as np
from numba import njit
from lazycv.backends.cpu_noalias import NoAliasCompiler
{kernel}{aliased}'''

_NOALIAS = ", pipeline_class=NoAliasCompiler"

_FRAME = '''

@njit(cache=True, nogil=True, error_model="numpy"{extra})
def {name}(Y0, Y1, {params}):
{columns}
    for y in range(Y0, Y1):
{row}
        for x in range(W):
{body}
'''


_BATCHED = '''

@njit(cache=True, nogil=True, error_model="numpy"{extra})
def {name}(Y0, Y1, MAXH, TI, TF, {params}):
{init}
    for r in range(Y0, Y1):
        b = r // MAXH
        y = r - b * MAXH
        H = TI[b, 0]
        W = TI[b, 1]
        if y >= H:
            continue
{branches}
'''


# a reduction (codegen.generate_reduce): each row's pixels folded into accumulators, left as the
# row's partials in P[y]; the launch then folds the rows in order (the same bits whatever the bands)
_REDUCE = '''

@njit(cache=True, nogil=True, error_model="numpy"{extra})
def {name}(Y0, Y1, {params}):
{columns}
    for y in range(Y0, Y1):
{row}
{init}
        for x in range(W):
{body}
{store}
'''


def _module(frame, **fields):
    """The kernel's module: the noalias build and the plain one, the same code."""
    return _MODULE.format(kernel=frame.format(name="kernel", extra=_NOALIAS, **fields),
                          aliased=frame.format(name="kernel_aliased", extra="", **fields))


def _array_roles(fn):
    """(positions of the source arrays, positions of the output arrays) among ``fn``'s
    parameters, by the names codegen gives them (s0, s0__3, k1_s0; o0, O2, k1_O0)."""
    names = list(inspect.signature(fn.py_func).parameters)
    ins = tuple(i for i, n in enumerate(names) if _SOURCE.search(n))
    outs = tuple(i for i, n in enumerate(names) if _OUTPUT.search(n))
    return ins, outs


_SOURCE = re.compile(r"(^|_)s\d+(__\d+)?$")
_OUTPUT = re.compile(r"(^|_)[oO]\d+$")


_CHEAP = re.compile(r"^[\w\s+\-*()]*$")        # names, integers, + - * and parentheses


class CpuBackend(Backend):
    name = "cpu"
    is_device = False
    # generated indices are never negative; unsigned, Numba skips its negative-index wraparound
    # on every load and store (~25 % of W1's kernel time here)
    spellings = dict(Backend.spellings, index="np.uint64({})")

    def kernel_frame(self, params, row_lines, lines):
        """Row-invariant lines run once per row; column-invariant ones (a resize's column
        coordinates and weights) once per column into tables before the row loop (launches
        need W >= 1); the rest once per pixel."""
        prologue, tables, body = self._column_tables(row_lines, lines)
        if tables:
            tables = prologue + tables          # before the row loop: what the tables read
        return _module(_FRAME, params=", ".join(params), columns=self.indent(tables, 4),
                       row=self.indent(row_lines, 8) or "        pass", body=self.indent(body, 12))

    def _column_tables(self, row_lines, lines):
        """(loop-invariant lines the tables read, lines filling per-column tables for x in
        [0, W), pixel lines reading them)."""
        prologue, columns = split_column_invariant(row_lines, lines) if self.column_tables else ([], [])
        if not columns:
            return [], [], list(lines)
        # a column line that is plain integer arithmetic on x and loop-invariant names (an
        # output's column offset) is cheaper to recompute than to load: it stays in the loop
        column_names = {name for name, _ in columns}
        kept = {name for name, ln in columns
                if _CHEAP.match(ln.partition(" = ")[2]) and not names(ln.partition(" = ")[2]) & column_names}
        computed = column_names - kept
        body = [ln for ln in lines if assigned(ln) not in computed]
        used = names("\n".join(body))
        tabled = [name for name, _ in columns if name in used and name in computed]
        tables = ["x = 0"] + [ln for _, ln in columns]
        tables += [f"_T{name} = np.full(W, {name})" for name in tabled]
        tables += ["for x in range(1, W):"] + ["    " + ln for _, ln in columns]
        x = self.spellings["index"].format("x")
        tables += [f"    _T{name}[{x}] = {name}" for name in tabled]
        return prologue, tables, [f"{name} = _T{name}[{x}]" for name in tabled] + body

    def reduce_frame(self, params, row_lines, lines, fold):
        """A reduction's kernel over rows Y0..Y1 (``fold``: codegen.Fold), with per-column
        tables as kernel_frame's."""
        init, step, accs = fold.lines()
        prologue, tables, body = self._column_tables(row_lines, lines + step)
        if tables:
            tables = prologue + tables
        store = [f"P[y, {k}] = {a}" for k, a in enumerate(accs)]
        return _module(_REDUCE, params=", ".join(params), columns=self.indent(tables, 4),
                       row=self.indent(row_lines, 8) or "        pass", init=self.indent(init, 8),
                       body=self.indent(body, 12), store=self.indent(store, 8))

    reduce_launches = 1             # a reduction's fold runs on the launching thread, no launch

    def reduce_partials(self, rows, cols, width):
        """A reduction's partials: one row of ``width`` per kernel row."""
        return self.alloc(rows, width, np.float64)

    def batched_frame(self, params, branches):
        """Rows of all items; each item's kind selects its branch (one branch: no test). A
        branch's column tables are filled again whenever its rows move to another item."""
        out, init = [], []
        for j, (pre, row_lines, lines) in enumerate(branches):
            _, tables, body_lines = self._column_tables(pre + row_lines, lines)   # after pre: all defined
            body = pre + row_lines
            if tables:
                init.append(f"_tb{j} = -1")
                body += [f"if b != _tb{j}:"] + ["    " + ln for ln in tables] + [f"    _tb{j} = b"]
            body += ["for x in range(W):"] + ["    " + ln for ln in body_lines]
            if len(branches) == 1:
                out += body
            else:
                out.append(("if" if j == 0 else "elif") + f" TI[b, 2] == {j}:")
                out += ["    " + ln for ln in body]
        return _module(_BATCHED, params=", ".join(params), init=self.indent(init, 4) or "    pass",
                       branches=self.indent(out, 8))

    def launch_batched(self, compiled, n_items, max_h, max_w, ti, tf, arrays, stream=None, tables=None):
        if tables is not None:
            ti, tf = tables
        fn, rows = self._kernel_for(compiled, arrays, 5), n_items * max_h
        big = rows * max_w >= self.MIN_PIXELS_TO_SPLIT
        if big and self._native_bands(compiled, fn, rows, (max_h, ti, tf) + tuple(arrays)):
            return
        self._in_bands(rows, lambda r0, r1: fn(r0, r1, max_h, ti, tf, *arrays), big)

    def _kernel_for(self, compiled, args, skipped):
        """The noalias build of ``compiled`` unless one of its outputs may share memory with
        one of its sources (an in-place write), which takes the plain build. ``args`` are the
        kernel's arguments after its first ``skipped`` parameters."""
        roles = self._roles.get(compiled.name)
        if roles is None:
            ins, outs = _array_roles(compiled.fn)
            roles = self._roles[compiled.name] = ([i - skipped for i in ins], [i - skipped for i in outs])
        ins, outs = roles
        for o in outs:
            out = args[o]
            for i in ins:
                if np.may_share_memory(out, args[i]):
                    return sys.modules[compiled.name].kernel_aliased
        return compiled.fn

    def _bands(self, rows):
        return min(self.threads, max(1, rows // self.MIN_ROWS_PER_BAND))

    def _native_bands(self, compiled, fn, rows, tail):
        """Runs ``fn(r0, r1, *tail)`` over rows [0, rows) in bands on native threads
        (cpu_native: its wrapper made the second time ``fn`` runs in bands); False where it
        did not (no wrapper for it, an argument the wrapper does not take, one band)."""
        bands = self._bands(rows)
        if bands == 1 or cpu_native.BANDS is None:
            return False
        native = self._natives.get(fn)
        if native is None:                       # (a kernel run once pays no wrapper)
            self._natives[fn] = 0
            return False
        if native == 0:
            name = "kernel" if fn is compiled.fn else "kernel_aliased"
            try:
                native = cpu_native.wrapper(fn, compiled.name, name, 2)
            except Exception as e:               # (the Python pool runs it as before)
                logger.debug("lazycv: no native bands for %s: %r", compiled.name, e)
                native = None
            native = self._natives[fn] = native or False
        if native is False:
            return False
        return cpu_native.BANDS.run(native.address, rows, bands, native.codes, native.formats, tail) is not None

    def _copy(self, dst, src):
        """dst[...] = src, in bands on native threads where it is big enough to gain (a
        many-core host's memory bandwidth); numpy's copy otherwise."""
        if src.nbytes < self.MIN_BYTES_TO_SPLIT or cpu_native.BANDS is None or \
                cpu_native.BANDS.copy(dst, src, self._bands(dst.shape[0])) is None:
            dst[...] = src

    def _in_bands(self, rows, work, big):
        """``work(r0, r1)`` over rows [0, rows): in bands on the worker threads when ``big``
        (the calling thread takes the first band), else in one call."""
        bands = self._bands(rows) if big else 1
        if bands == 1:
            work(0, rows)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="lazycv-cpu")
        step = (rows + bands - 1) // bands
        futs = [self._pool.submit(work, r, min(r + step, rows)) for r in range(step, rows, step)]
        work(0, min(step, rows))
        for f in futs:
            f.result()

    def alloc_batch(self, n, rows, row_elems, dtype):
        return self.buffers.alloc_batch(n, (rows, row_elems), np.dtype(dtype))

    def alloc(self, rows, row_elems, dtype):
        return self.buffers.alloc((rows, row_elems), np.dtype(dtype))

    column_tables = True        # kernel_frame's per-column tables (off: for measuring them)
    MIN_ROWS_PER_BAND = 16
    MIN_PIXELS_TO_SPLIT = 1 << 15
    MIN_BYTES_TO_SPLIT = 1 << 20

    def __init__(self):
        self.threads = max(1, int(os.environ.get("LAZYCV_CPU_THREADS", 0)) or (os.cpu_count() or 1))
        self._pool = None
        self._roles = {}            # kernel module -> (source positions, output positions)
        self._natives = {}          # kernel -> 0 (ran in bands once), its cpu_native.Native, False
        self.buffers = host_pool(pool_cap("LAZYCV_POOL_MB", 1024, host_free_bytes))

    def launch(self, compiled, H, W, args, stream=None):
        if H <= 0 or W <= 0:
            return
        if compiled.reduce is not None:          # args: the recipe's, the partials, the statistic
            fn, head = compiled.fn, args[:-1]
            self._in_bands(H, lambda y0, y1: fn(y0, y1, H, W, *head), H * W >= self.MIN_PIXELS_TO_SPLIT)
            reduce_kernels.fold(self, compiled.reduce, args[-2], args[-1])
            return
        fn = self._kernel_for(compiled, args, 4)
        big = H * W >= self.MIN_PIXELS_TO_SPLIT
        if big and self._native_bands(compiled, fn, H, (H, W) + tuple(args)):
            return
        self._in_bands(H, lambda y0, y1: fn(y0, y1, H, W, *args), big)

    def upload(self, buf, y0, c0, arr2d, stream=None):
        """Copy host rows into buf[y0:, c0:] (element columns). Always possible here."""
        self._copy(buf[y0:y0 + arr2d.shape[0], c0:c0 + arr2d.shape[1]], arr2d)
        return True

    def download(self, buf, y0, c0, rows, ncols, out2d, stream=None):
        self._copy(out2d, buf[y0:y0 + rows, c0:c0 + ncols])
        return True

    def device_function(self, fn):
        """A plain Python function made callable from generated kernels."""
        from numba import njit
        return njit(inline="always", nogil=True)(fn)

    def to_host_view(self, buf):
        return buf

    def synchronize(self, stream=None):
        pass

    def pointer(self, buf):
        return buf.ctypes.data

    def from_foreign(self, obj):
        """A 2-D view of host memory described by __array_interface__/ndarray."""
        return np.asarray(obj)
