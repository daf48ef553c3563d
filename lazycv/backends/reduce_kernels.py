"""Reduction kernels: the folds of generated reductions, and the precompiled kernels of the
reductions that are not generated.

normalize, minMax(Loc), sum/absSum/sqrSum, countNonZero, norm and meanStdDev are generated per
graph (codegen.generate_reduce: the input's pending chain fused in); their kernels leave one
partial statistic per row (CPU) or per block (CUDA, the simulator), and ``fold`` adds the
partials up in order into the statistic — deterministic: the same input always gives the same
bits, fused or eager. On CUDA a block first folds its threads' partials in shared memory.

Histograms, integrals and ``reduce`` (per row or column) are precompiled: one kernel per family
and backend, specialised by Numba on the input dtype, reading a materialised region. The CPU
backend runs ``njit(nogil)`` loops; CUDA and the simulator run ``numba.cuda`` kernels. Results
stay in device memory; ops/reduce.py and ops/hist.py wrap them as GpuMats that fused kernels
read at (0, 0).

A region is ``(buf, y0, x0, rows, cols, cn)``: a rows x cols window of pixels of ``cn``
channels at pixel (y0, x0) of a 2-D buffer of elements (lazycv's allocation layout).
Statistics are float64 (exact for integer sums below 2**53) except histograms and integrals.
"""
import math

import numpy as np

REDUCE_SUM, REDUCE_AVG, REDUCE_MAX, REDUCE_MIN, REDUCE_SUM2 = 0, 1, 2, 3, 4   # cv2.REDUCE_*

_INSTANCES = {}
cuda = None             # numba.cuda once _build_cuda has run


def kernels_for(backend, stats):
    """The reduction kernels of ``backend`` (an instance a device: they allocate from its memory
    pool); each launch adds one to ``stats["kernels_launched"]``."""
    k = _INSTANCES.get(backend)
    if k is None:
        k = _INSTANCES[backend] = (CpuReductions if backend.name == "cpu" else CudaReductions)(backend)
    k.stats = stats
    return k


class _Reductions:
    """What both backends offer; ``mask`` (an 8UC1 region: pixels where it is 0 are left out)
    is optional."""

    def __init__(self, backend):
        self.be = backend
        self.stats = None
        self._dummy = None

    def _launched(self, n=1):
        self.stats["kernels_launched"] += n

    def _mask_args(self, mask):
        if mask is None:
            if self._dummy is None:
                self._dummy = self.be.alloc(1, 1, np.dtype(np.uint8))
            return self._dummy, 0, 0, False
        return mask[0], mask[1], mask[2], True

    def _out(self, rows, cols, dtype):
        return self.be.alloc(rows, cols, np.dtype(dtype))


# ---------------------------------------------------------------- CPU: Numba nogil loops

def _njit(fn):
    from numba import njit
    return njit(cache=True, nogil=True)(fn)


def _better_min(v, i, bv, bi):
    """(v, i) replaces the best (bv, bi) so far: smaller, or equal and earlier (OpenCV's
    first occurrence in row-major order); NaN never wins; bi < 0 means none yet."""
    return i >= 0 and v == v and (bi < 0 or v < bv or (v == bv and i < bi))


def _better_max(v, i, bv, bi):
    return i >= 0 and v == v and (bi < 0 or v > bv or (v == bv and i < bi))


def _cpu_fold_sums(part, n, width, out):
    """The statistic: partials (one row of ``part`` per kernel row) added up in row order."""
    for c in range(width):
        acc = 0.0
        for b in range(n):
            acc += part[b, c]
        out[0, c] = acc


def _cpu_fold_min_max(part, n, out):
    """(min, max, index of min, index of max) of the partials (the first index wins a tie)."""
    vmin, vmax, imin, imax = 0.0, 0.0, -1, -1
    for b in range(n):
        if better_min(part[b, 0], int(part[b, 2]), vmin, imin):
            vmin, imin = part[b, 0], int(part[b, 2])
        if better_max(part[b, 1], int(part[b, 3]), vmax, imax):
            vmax, imax = part[b, 1], int(part[b, 3])
    out[0, 0], out[0, 1], out[0, 2], out[0, 3] = vmin, vmax, imin, imax


def _cpu_histogram(src, y0, x0, rows, cols, mask, my0, mx0, use_mask, scale, offset, lv, ly, lx, nlevels, out):
    nbins = out.shape[1]
    for b in range(nbins):
        out[0, b] = 0
    for y in range(rows):
        for x in range(cols):
            if use_mask and mask[my0 + y, mx0 + x] == 0:
                continue
            b = bin_of(np.float64(src[y0 + y, x0 + x]), scale, offset, lv, ly, lx, nlevels, nbins)
            if b >= 0:
                out[0, b] += 1


def _bin_of(v, scale, offset, lv, ly, lx, nlevels, nbins):
    """The bin of ``v``: uniform bins floor(v * scale + offset) (cv::calcHist's rule) when
    ``nlevels`` is 0, else lv[ly, lx + b] <= v < lv[ly, lx + b + 1] by bisection; -1 outside."""
    if nlevels == 0:
        f = v * scale + offset
        if not f >= 0.0:
            return -1
        b = int(math.floor(f))
        return b if b < nbins else -1
    if not (v >= lv[ly, lx] and v < lv[ly, lx + nlevels - 1]):
        return -1
    lo, hi = 0, nlevels - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if v >= lv[ly, lx + mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _cpu_reduce_axis(src, y0, x0, rows, cols, cn, dim, op, out):
    n_out = cols * cn if dim == 0 else rows * cn
    for k in range(n_out):
        reduce_line(src, y0, x0, rows, cols, cn, dim, op, k, out)


def _reduce_line(src, y0, x0, rows, cols, cn, dim, op, k, out):
    """Output element ``k`` of reduce(): a column's (dim 0) or a row's (dim 1) channel."""
    c = k % cn
    if dim == 0:
        length = rows
    else:
        length = cols
    acc = 0.0
    for j in range(length):
        if dim == 0:
            v = np.float64(src[y0 + j, (x0 + k // cn) * cn + c])
        else:
            v = np.float64(src[y0 + k // cn, (x0 + j) * cn + c])
        if op == REDUCE_SUM2:
            v = v * v
        if j == 0 or op == REDUCE_SUM or op == REDUCE_AVG or op == REDUCE_SUM2:
            acc = v if j == 0 else acc + v
        elif op == REDUCE_MAX:
            acc = v if v > acc else acc
        else:
            acc = v if v < acc else acc
    if op == REDUCE_AVG:
        acc = acc * (1.0 / length)
    if dim == 0:
        out[0, k] = acc
    else:
        out[k // cn, c] = acc


def _cpu_integral(src, y0, x0, rows, cols, square, out):
    for x in range(cols + 1):
        out[0, x] = 0
    for y in range(rows):
        out[y + 1, 0] = 0
        acc = 0.0
        for x in range(cols):
            v = np.float64(src[y0 + y, x0 + x])
            acc += v * v if square else v
            out[y + 1, x + 1] = out[y, x + 1] + acc


def _equalize_lut(hist, total, lut):
    """cv::equalizeHist's table: bins before the first non-empty one map to 0; the rest to
    saturate_cast<uchar>(cumulative count * (255.f / (total - first count))) in float."""
    i = 0
    while i < 255 and hist[0, i] == 0:
        i += 1
    if hist[0, i] == total:                  # one value only: OpenCV sets every pixel to it
        for j in range(256):
            lut[0, j] = i
        return
    scale = np.float32(255.0) / np.float32(total - hist[0, i])
    for j in range(i + 1):
        lut[0, j] = 0
    acc = 0
    for j in range(i + 1, 256):
        acc += hist[0, j]
        lut[0, j] = min(max(round(np.float32(acc) * scale), 0), 255)


class CpuReductions(_Reductions):
    _compiled = None

    @classmethod
    def _kernels(cls):
        if cls._compiled is None:
            from numba import njit
            g = globals()
            dev = {n: njit(inline="always", nogil=True)(g["_" + n])
                   for n in ("better_min", "better_max", "bin_of", "reduce_line")}
            g.update(dev)
            cls._compiled = {n: _njit(g["_cpu_" + n]) for n in
                             ("fold_sums", "fold_min_max", "histogram", "reduce_axis", "integral")}
            cls._compiled["equalize_lut"] = _njit(_equalize_lut)
        return cls._compiled

    def histogram(self, src, nbins, scale=0.0, offset=0.0, levels=None, mask=None):
        out = self._out(1, nbins, np.int32)
        lv, ly, lx, n = (levels[0], levels[1], levels[2], levels[4]) if levels is not None else (src[0], 0, 0, 0)
        self._kernels()["histogram"](*src[:5], *self._mask_args(mask), scale, offset, lv, ly, lx, n, out)
        self._launched()
        return out

    def reduce_axis(self, src, dim, op):
        rows, cols, cn = src[3], src[4], src[5]
        out = self._out(1, cols * cn, np.float64) if dim == 0 else self._out(rows, cn, np.float64)
        self._kernels()["reduce_axis"](*src, dim, op, out)
        self._launched()
        return out

    def integral(self, src, square):
        out = self._out(src[3] + 1, src[4] + 1, np.float64 if square else np.int32)
        self._kernels()["integral"](*src[:5], square, out)
        self._launched()
        return out

    def equalize_lut(self, hist, total):
        lut = self._out(1, 256, np.uint8)
        self._kernels()["equalize_lut"](hist, total, lut)
        self._launched()
        return lut


# ---------------------------------------------------------------- CUDA and the simulator

THREADS = 256           # threads a block on a GPU (the shared arrays' size)
MAX_BLOCKS = 256        # blocks of the first pass: the second folds this many partials


class CudaReductions(_Reductions):
    _compiled = None

    def __init__(self, backend):
        super().__init__(backend)
        # the simulator runs every thread as a Python thread: a few threads, one block
        self.threads = 8 if backend.simulator else THREADS

    def _grid(self, n):
        return 1 if self.be.simulator else max(1, min(MAX_BLOCKS, -(-n // self.threads)))

    def _kernels(self):
        return _cuda_kernels()

    def histogram(self, src, nbins, scale=0.0, offset=0.0, levels=None, mask=None):
        k = self._kernels()
        out = self._out(1, nbins, np.int32)
        lv, ly, lx, n = (levels[0], levels[1], levels[2], levels[4]) if levels is not None else (src[0], 0, 0, 0)
        k["zero"][max(1, -(-nbins // self.threads)), self.threads](out)
        k["histogram"][self._grid(src[3] * src[4]), self.threads](
            *src[:5], *self._mask_args(mask), scale, offset, lv, ly, lx, n, out)
        self._launched(2)
        return out

    def reduce_axis(self, src, dim, op):
        rows, cols, cn = src[3], src[4], src[5]
        out = self._out(1, cols * cn, np.float64) if dim == 0 else self._out(rows, cn, np.float64)
        n_out = (cols if dim == 0 else rows) * cn
        self._kernels()["reduce_axis"][-(-n_out // self.threads), self.threads](*src, dim, op, out)
        self._launched()
        return out

    def integral(self, src, square):
        k = self._kernels()
        rows, cols = src[3], src[4]
        out = self._out(rows + 1, cols + 1, np.float64 if square else np.int32)
        k["integral_rows"][-(-(rows + 1) // self.threads), self.threads](*src[:5], square, out)
        k["integral_cols"][-(-(cols + 1) // self.threads), self.threads](out, rows, cols)
        self._launched(2)
        return out

    def equalize_lut(self, hist, total):
        lut = self._out(1, 256, np.uint8)
        self._kernels()["equalize_lut"][1, 1](hist, total, lut)
        self._launched()
        return lut


def _cuda_kernels():
    if CudaReductions._compiled is None:
        CudaReductions._compiled = _build_cuda()
    return CudaReductions._compiled


# ---------------------------------------------------------------- generated reductions

def fold(be, reduce, part, out, stream=None):
    """Fold the partials ``part`` that a generated reduction left (one row per kernel row or
    block; ``reduce``: its (kind, width), codegen.Fold) into the statistic ``out`` (1 x width
    float64), in partial order. One small kernel on CUDA and the simulator, launched on the
    reduction's stream; a loop on the host thread on the CPU."""
    kind, width = reduce
    n = part.shape[0]
    if be.name == "cpu":
        k = CpuReductions._kernels()
        if kind == "sum":
            k["fold_sums"](part, n, width, out)
        else:
            k["fold_min_max"](part, n, out)
        return
    fn = _cuda_kernels()["fold_sums" if kind == "sum" else "fold_min_max"]
    launch = fn[1, 1] if stream is None else fn[1, 1, stream]
    if kind == "sum":
        launch(part, n, width, out)
    else:
        launch(part, n, out)


def _build_cuda():
    """The CUDA kernels (built on first use: importing numba.cuda is slow). ``cuda`` is a
    module global, as the simulator needs: it swaps a kernel's global ``cuda`` for its own."""
    import numba.cuda
    globals()["cuda"] = numba.cuda

    better_min = cuda.jit(device=True)(_better_min)
    better_max = cuda.jit(device=True)(_better_max)
    bin_of = cuda.jit(device=True)(_bin_of)
    reduce_line = cuda.jit(device=True)(_reduce_line)

    @cuda.jit
    def fold_sums(part, blocks, cn, out):
        for c in range(cn):
            acc = 0.0
            for b in range(blocks):
                acc += part[b, c]
            out[0, c] = acc

    @cuda.jit
    def fold_min_max(part, blocks, out):
        vmin, vmax, imin, imax = 0.0, 0.0, -1, -1
        for b in range(blocks):
            if better_min(part[b, 0], int(part[b, 2]), vmin, imin):
                vmin, imin = part[b, 0], int(part[b, 2])
            if better_max(part[b, 1], int(part[b, 3]), vmax, imax):
                vmax, imax = part[b, 1], int(part[b, 3])
        out[0, 0], out[0, 1], out[0, 2], out[0, 3] = vmin, vmax, imin, imax

    @cuda.jit
    def zero(out):
        i = cuda.grid(1)
        if i < out.shape[1]:
            out[0, i] = 0

    @cuda.jit
    def histogram(src, y0, x0, rows, cols, mask, my0, mx0, use_mask, scale, offset, lv, ly, lx, nlevels, out):
        i = cuda.grid(1)
        while i < rows * cols:
            y = i // cols
            x = i - y * cols
            if not use_mask or mask[my0 + y, mx0 + x] != 0:
                b = bin_of(np.float64(src[y0 + y, x0 + x]), scale, offset, lv, ly, lx, nlevels, out.shape[1])
                if b >= 0:
                    cuda.atomic.add(out, (0, b), 1)
            i += cuda.gridDim.x * cuda.blockDim.x

    @cuda.jit
    def reduce_axis(src, y0, x0, rows, cols, cn, dim, op, out):
        k = cuda.grid(1)
        if k < (cols if dim == 0 else rows) * cn:
            reduce_line(src, y0, x0, rows, cols, cn, dim, op, k, out)

    @cuda.jit
    def integral_rows(src, y0, x0, rows, cols, square, out):
        """Row prefix sums (row 0 of the output all zeros); integral_cols adds them up."""
        y = cuda.grid(1)
        if y == 0:
            for x in range(cols + 1):
                out[0, x] = 0
        elif y <= rows:
            out[y, 0] = 0
            acc = 0.0
            for x in range(cols):
                v = np.float64(src[y0 + y - 1, x0 + x])
                acc += v * v if square else v
                out[y, x + 1] = acc

    @cuda.jit
    def integral_cols(out, rows, cols):
        x = cuda.grid(1)
        if x <= cols:
            for y in range(1, rows + 1):
                out[y, x] += out[y - 1, x]

    equalize_lut = cuda.jit(_equalize_lut)
    return {"fold_sums": fold_sums, "fold_min_max": fold_min_max,
            "zero": zero, "histogram": histogram, "reduce_axis": reduce_axis,
            "integral_rows": integral_rows, "integral_cols": integral_cols, "equalize_lut": equalize_lut}
