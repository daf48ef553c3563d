"""Reductions: normalize, minMax(Loc), sum/absSum/sqrSum, countNonZero, meanStdDev, norm, reduce
— and their device forms (findMinMax, calcSum, calcNorm, ...).

A reduction is a recorded node like any op (``Reduction``, ``OpDef.reduces``): recording one
runs nothing. At the flush it is a kernel of its own, generated from the graph: one pass over
its input's pixels with the input's pending chain fused in (a pixel of the resize before it is
computed in registers and folded in, never written), one partial per row (CPU) or block (CUDA),
the partials folded in order into a small statistic in device memory — a 1x1 CV_64F GpuMat of a
few channels (planner rule 7, codegen.generate_reduce). Its consumers read the statistic from
device memory at (0, 0) in a later phase, so ``normalize`` is the reduce kernel plus one
element-wise map that fuses with whatever follows, and nothing comes back to the host. Only the
calls whose OpenCV answer is a host number (``minMax``, ``sum``, ``norm``, ...) download it: they
flush at the call. ``reduce`` (per row or column) runs a precompiled kernel
(backends/reduce_kernels.py) on its input, computed first, at the call — as do the histograms
and integrals of ops/hist.py.

OpenCV's rules (CPU ``cv2`` for the numbers; OpenCV CUDA's for what it accepts): minMax,
minMaxLoc, countNonZero and normalize take one channel; meanStdDev takes 8UC1 and 32FC1;
sums are per channel (1 to 4) in double; norm of a multi-channel image is over all channels
(without a mask); normalize's scale and shift are cv::normalize's (``scale = (dmax - dmin) *
(smax - smin > DBL_EPSILON ? 1 / (smax - smin) : 0)``, float32-rounded for a 32F result), then
convertTo. With a mask, pixels outside it keep ``dst``'s values (zeros for a new result, as
OpenCV CUDA's ``setTo(0)``). An empty mask gives 0 for min, max and means, and (-1, -1)
locations. Integer statistics are exact (double sums below 2**53); float sums are added per row
(block) and then in row (block) order, the same order fused or eager.
"""
import cv2
import numpy as np

from .. import runtime
from .._types import DEPTH_DTYPE, DEPTH_NAME, is_float
from ..backends import reduce_kernels as rk
from ..codegen import Fold
from ..errors import StsBadArg, StsBadFlag, StsUnsupportedFormat, cv_error
from ..ir import Allocation
from ..runtime import STATE
from .base import OpDef, saturate
from .common import (check_channels, check_depth, check_dst, check_same, check_stream, cuda_api, depth_arg,
                     float_arg, gpumat_cls, int_arg, node, result, src_mat, stream_cls)
from .convert import convert_node, math_type
from .core import crop_node, mask_mat, masked_result

DBL_EPSILON = float(np.finfo(np.float64).eps)
_NORMS = {cv2.NORM_INF: "inf", cv2.NORM_L1: "l1", cv2.NORM_L2: "l2"}


# ---------------------------------------------------------------- the reduce phase

class Reduction(OpDef):
    """A statistic of a whole image: a 1x1 CV_64F node of a few channels, computed by a kernel of
    its own over the input's pixels (OpDef.reduces, planner rule 7).

    static (mode, flat, absolute, other, mask). ``mode``: "sum", "abs", "sqr", "nonzero" add up
    each channel's values, |values|, squares, or non-zero values counted (``flat``: all channels
    into one, a norm over ``src.reshape(1)``); "moments" gives (sum, sum of squares, count) of
    one channel (meanStdDev); "minmax" gives (min, max, index of min, index of max), indices
    y * cols + x (of elements, y * cols * cn + x * cn + c, when ``flat``), of |values| when
    ``absolute``. ``other``: the inputs are (src, src2, ...) and the values src - src2, in double;
    ``mask``: the last input is an 8UC1 mask — pixels where it is 0 are left out."""
    name = "reduction"
    pointwise = False
    reduces = True

    def fold(self, ctx, n, y, x):
        mode, flat, absolute, other, mask = n.static
        vals = [f"np.float64({v})" for v in ctx.read(n.inputs[0], y, x)]
        if other:
            vals = [f"{a} - np.float64({b})" for a, b in zip(vals, ctx.read(n.inputs[1], y, x))]
        vals = [ctx.let(v, "m") for v in vals]
        cond = f"{ctx.read(n.inputs[-1], y, x)[0]} != 0" if mask else None
        if mode == "minmax":
            at = ctx.let(f"{y} * W + {x}", "i")
            terms = []
            for c, v in enumerate(vals):
                if absolute:
                    v = ctx.let(f"abs({v})", "m")
                terms.append((v, at if len(vals) == 1 else ctx.let(f"{at} * {len(vals)} + {c}", "i")))
            return Fold("minmax", terms, 4, cond)
        terms = []
        for c, v in enumerate(vals):
            k = 0 if flat else c
            if mode == "sum":
                terms.append((k, v))
            elif mode == "abs":
                terms.append((k, ctx.let(f"abs({v})", "m")))
            elif mode == "sqr":
                terms.append((k, ctx.let(f"{v} * {v}", "m")))
            elif mode == "nonzero":
                terms.append((k, ctx.let(f"1.0 if {v} != 0 else 0.0", "m")))
            else:                                  # moments
                terms += [(0, v), (1, ctx.let(f"{v} * {v}", "m")), (2, "1.0")]
        return Fold("sum", terms, n.cn, cond)

    def describe(self, n):
        mode, flat, absolute, other, mask = n.static
        what = {"sum": "sum", "abs": "absSum", "sqr": "sqrSum", "nonzero": "countNonZero",
                "moments": "meanStdDev (sum, sum of squares, count)", "minmax": "minMaxLoc"}[mode]
        if absolute:
            what = "norm INF (max |value|)"
        extras = [w for w, on in (("over all channels", flat), ("of src1 - src2", other), ("masked", mask)) if on]
        return f"{what} ({', '.join(extras)})" if extras else what


def reduce_node(func, m, mode, mask=None, other=None, flat=False, absolute=False):
    """The ``Reduction`` of GpuMat ``m`` (``other``: a GpuMat of its size and type; ``mask``: a
    GpuMat, validated here)."""
    ins = [m._value(func)]
    if other is not None:
        ins.append(other._value(func, "src2"))
    if mask is not None:
        ins.append(mask_mat(func, mask, m)._value(func, "mask"))
    width = 4 if mode == "minmax" else 3 if mode == "moments" else 1 if flat else m._cn
    return node("reduction", ins, (mode, flat, absolute, other is not None, mask is not None), (),
                1, 1, cv2.CV_64F, width)


def stat_result(func, nd, dst=None, stream=None):
    """A statistic node as the call's result: a lazy GpuMat, or copied into ``dst`` (a lazy copy
    that fuses; the reduction's own output is always memory of its own)."""
    if dst is None:
        return result(func, nd, None, stream)
    return result(func, crop_node(nd, 0, 0, nd.rows, nd.cols), dst, stream)


def min_max_stat(func, m, mask=None):
    """1x1 CV_64FC4 (min, max, index of min, index of max); indices are y * cols + x."""
    return reduce_node(func, m, "minmax", mask)


def sums_stat(func, m, mode, mask=None, other=None, flat=False):
    """1x1 CV_64FC(cn) of per-channel sums of ``mode`` ("sum", "abs", "sqr", "nonzero");
    ``flat`` adds all channels into one (a norm)."""
    return reduce_node(func, m, mode, mask, other, flat)


def norm_stat(func, m, norm_type, mask=None, other=None):
    """A 1x1 CV_64FC1 node holding the norm (L2 as a sum of squares: its consumer takes the
    root)."""
    kind = _NORMS.get(norm_type)
    if kind is None:
        raise cv_error(func, f"unsupported norm type {norm_type}: expected NORM_INF, NORM_L1 or NORM_L2",
                       StsBadFlag)
    if m._cn > 1 and mask is not None:
        raise cv_error(func, "a mask needs a single-channel src (mask.size() == src.size() after "
                             "src.reshape(1))", StsUnsupportedFormat)
    if kind == "inf":
        return _channels_as_row(reduce_node(func, m, "minmax", mask, other, flat=True, absolute=True), 1, 1)
    return sums_stat(func, m, "abs" if kind == "l1" else "sqr", mask, other, flat=True)


# ---------------------------------------------------------------- precompiled reductions

def region(func, m, name="src"):
    """``m``'s memory as a kernel region, its pending work computed first."""
    m._materialize()
    if m._alloc is None:
        raise cv_error(func, f"{name} is empty", StsBadArg)
    return (m._alloc.buf, m._y0, m._x0, m._rows, m._cols, m._cn)


def kernels():
    return rk.kernels_for(runtime.backend(), STATE.stats)


def stat_mat(buf, depth, cn):
    """A GpuMat over a statistics buffer a precompiled kernel wrote."""
    return gpumat_cls()._over(Allocation(buf), buf.shape[0], buf.shape[1] // cn, depth, cn)


def deliver(func, mat, dst, stream):
    """``mat`` as the call's result: itself, or copied into ``dst`` (a lazy copy that fuses)."""
    if dst is None:
        check_stream(func, stream)
        return mat
    check_dst(func, dst)
    return result(func, crop_node(mat._value(func), 0, 0, mat._rows, mat._cols), dst, stream)


class StatMap(OpDef):
    """An element-wise map whose parameters come from a statistic in device memory (the
    reduce phase's 1x1 result, read at (0, 0) — one tap at a constant coordinate).

    static = ("minmax",) normalize's range, dyn (dmin, dmax); or ("norm",) normalize's norm,
    dyn (alpha, 1 for L2: the statistic is a sum of squares, so one kernel serves L1, L2, INF)."""
    name = "stat_map"
    pointwise = False

    def emit(self, ctx, n, y, x):
        src, stat = n.inputs
        st = ctx.read(stat, "0", "0")
        ft, kind = math_type(src.depth, n.depth)
        if n.static[0] == "minmax":
            dmin, dmax = ctx.dyn(n, 0, "f64"), ctx.dyn(n, 1, "f64")
            smin, smax = f"np.float64({st[0]})", f"np.float64({st[1]})"
            span = ctx.let(f"{smax} - {smin}", "r")
            scale = ctx.let(f"({dmax} - {dmin}) * ((1.0 / {span}) if {span} > {DBL_EPSILON!r} else 0.0)", "k")
            if n.depth == cv2.CV_32F:          # cv::normalize rounds both to float for a 32F result
                scale = ctx.let(f"np.float64(np.float32({scale}))", "k")
                shift = ctx.let(f"np.float64(np.float32({dmin})) - np.float64(np.float32({smin} * {scale}))", "k")
            else:
                shift = ctx.let(f"{dmin} - {smin} * {scale}", "k")
        else:
            alpha, l2 = ctx.dyn(n, 0, "f64"), ctx.dyn(n, 1, "i")
            nv = ctx.let(f"math.sqrt(np.float64({st[0]})) if {l2} != 0 else np.float64({st[0]})", "r")
            scale = ctx.let(f"({alpha} / {nv}) if {nv} > {DBL_EPSILON!r} else 0.0", "k")
            shift = "0.0"
        v = ctx.read(src, y, x)[0]
        if kind == "f32":                      # convertTo's float math: one rounding (an FMA)
            e = ctx.spell("fma_f32", v, f"np.float32({scale})", f"np.float32({shift})")
        else:
            e = f"np.float64({v}) * {scale} + {shift}"
        return [saturate(ctx, e, n.depth)]


# ---------------------------------------------------------------- cv2.cuda functions

@cuda_api("normalize")
def normalize(src, alpha, beta, norm_type, dtype, dst=None, mask=None, stream=None):
    """cv2.cuda.normalize(src, alpha, beta, norm_type, dtype[, dst[, mask[, stream]]])."""
    func = "normalize"
    m = src_mat(func, src)
    check_channels(func, m, (1,))
    alpha, beta = float_arg(func, alpha, "alpha", 1.0), float_arg(func, beta, "beta", 0.0)
    norm_type = int_arg(func, norm_type, "norm_type")
    out_depth = depth_arg(func, dtype, m._depth)
    if norm_type == cv2.NORM_MINMAX:
        stat = min_max_stat(func, m, mask)
        static, dyn = ("minmax",), (min(alpha, beta), max(alpha, beta))
    elif norm_type in _NORMS:
        stat = norm_stat(func, m, norm_type, mask)
        static, dyn = ("norm",), (alpha, int(norm_type == cv2.NORM_L2))
    else:
        raise cv_error(func, f"unknown norm type {norm_type}: expected NORM_MINMAX, NORM_INF, NORM_L1 or "
                             "NORM_L2", StsBadFlag)
    nd = node("stat_map", [m._value(func), stat], static, dyn, m._rows, m._cols, out_depth, 1)
    return masked_result(func, nd, m, dst, mask, stream)


def _single_channel(func, src):
    m = src_mat(func, src)
    check_channels(func, m, (1,))
    return m


def _host(nd):
    """A statistic node's values on the host: the one synchronisation of a host-number call
    (its flush computes the reduction, with the input's pending chain fused in)."""
    return gpumat_cls()._lazy(nd).download().reshape(-1)


@cuda_api("findMinMax")
def findMinMax(src, dst=None, mask=None, stream=None):
    """1x2 (min, max): CV_32S for integer sources, else the source's depth (OpenCV CUDA)."""
    func = "findMinMax"
    m = _single_channel(func, src)
    stat = min_max_stat(func, m, mask)
    depth = m._depth if is_float(m._depth) else cv2.CV_32S
    return result(func, convert_node(_channels_as_row(stat, 0, 2), depth), dst, stream)


class ChannelsAsRow(OpDef):
    """Channels first .. first + n - 1 of a 1x1 statistic as a 1 x n single-channel row;
    static (first, n)."""
    name = "channels_as_row"
    pointwise = False

    def emit(self, ctx, n, y, x):
        first, count = n.static
        vals = ctx.read(n.inputs[0], "0", "0")[first:first + count]
        e = vals[-1]
        for c in range(count - 2, -1, -1):
            e = f"({vals[c]} if {x} == {c} else {e})"
        return [e]


def _channels_as_row(value, first, n):
    return node("channels_as_row", [value], (first, n), (), 1, n, value.depth, 1)


@cuda_api("minMax")
def minMax(src, mask=None):
    """cv2.cuda.minMax(src[, mask]) -> (minVal, maxVal)."""
    func = "minMax"
    vals = _host(min_max_stat(func, _single_channel(func, src), mask))
    return float(vals[0]), float(vals[1])


@cuda_api("minMaxLoc")
def minMaxLoc(src, mask=None):
    """cv2.cuda.minMaxLoc(src[, mask]) -> (minVal, maxVal, minLoc, maxLoc); locations (x, y)."""
    func = "minMaxLoc"
    m = _single_channel(func, src)
    vals = _host(min_max_stat(func, m, mask))
    return float(vals[0]), float(vals[1]), _location(vals[2], m._cols), _location(vals[3], m._cols)


def _location(index, cols):
    i = int(index)
    return (-1, -1) if i < 0 else (i % cols, i // cols)


@cuda_api("findMinMaxLoc")
def findMinMaxLoc(src, minMaxVals=None, loc=None, mask=None, stream=None):
    """-> (minMaxVals 1x2, loc 1x2 CV_32S of linear indices y * cols + x), as OpenCV CUDA."""
    func = "findMinMaxLoc"
    m = _single_channel(func, src)
    stat = min_max_stat(func, m, mask)
    depth = m._depth if is_float(m._depth) else cv2.CV_32S
    vals = result(func, convert_node(_channels_as_row(stat, 0, 2), depth), minMaxVals, stream)
    return vals, result(func, convert_node(_channels_as_row(stat, 2, 2), cv2.CV_32S), loc, stream)


def _sums(func, mode):
    def host(src, mask=None):
        m = _sum_src(func, src)
        vals = _host(sums_stat(func, m, mode, mask))
        return tuple(float(v) for v in vals) + (0.0,) * (4 - len(vals))

    def device(src, dst=None, mask=None, stream=None):
        m = _sum_src(func, src)
        return stat_result(func, sums_stat(func, m, mode, mask), dst, stream)
    return host, device


def _sum_src(func, src):
    m = src_mat(func, src)
    check_channels(func, m, (1, 2, 3, 4))
    return m


sum_, calcSum = (cuda_api(n)(f) for n, f in zip(("sum", "calcSum"), _sums("sum", "sum")))
absSum, calcAbsSum = (cuda_api(n)(f) for n, f in zip(("absSum", "calcAbsSum"), _sums("absSum", "abs")))
sqrSum, calcSqrSum = (cuda_api(n)(f) for n, f in zip(("sqrSum", "calcSqrSum"), _sums("sqrSum", "sqr")))


@cuda_api("countNonZero")
def countNonZero(src, dst=None, stream=None):
    """countNonZero(src) -> int; countNonZero(src, dst[, stream]) -> dst (1x1 CV_32SC1)."""
    func = "countNonZero"
    m = _single_channel(func, src)
    stat = sums_stat(func, m, "nonzero")
    if dst is None and stream is None:
        return int(_host(stat)[0])
    return result(func, convert_node(stat, cv2.CV_32S), dst, stream)


def _norm_args(func, src1, a, b):
    """norm(src1, normType[, mask]) or norm(src1, src2[, normType]): (other, norm_type, mask)."""
    if isinstance(a, gpumat_cls()) or (a is not None and not isinstance(a, (int, np.integer, float))):
        return src_mat(func, a, "src2"), (cv2.NORM_L2 if b is None else int_arg(func, b, "normType")), None
    if a is None:
        raise cv_error(func, "missing normType", StsBadArg)
    return None, int_arg(func, a, "normType"), b


@cuda_api("norm")
def norm(src1, normType=None, mask=None, src2=None):
    """cv2.cuda.norm(src1, normType[, mask]) or norm(src1, src2[, normType]) -> float."""
    func = "norm"
    m = src_mat(func, src1, "src1")
    other, norm_type, mask = _norm_args(func, m, src2 if src2 is not None else normType,
                                        normType if src2 is not None else mask)
    if other is not None:
        check_same(func, m, other)
    stat = norm_stat(func, m, norm_type, mask, other)
    v = float(_host(stat)[0])
    return float(np.sqrt(v)) if norm_type == cv2.NORM_L2 else v


@cuda_api("calcNorm")
def calcNorm(src, normType, dst=None, mask=None, stream=None):
    """-> dst 1x1 CV_64FC1 holding the norm, on the device."""
    func = "calcNorm"
    m = src_mat(func, src)
    return result(func, _norm_value(func, m, int_arg(func, normType, "normType"), mask, None), dst, stream)


@cuda_api("calcNormDiff")
def calcNormDiff(src1, src2, dst=None, normType=cv2.NORM_L2, stream=None):
    """-> dst 1x1 CV_64FC1 holding the norm of src1 - src2, on the device."""
    func = "calcNormDiff"
    a, b = src_mat(func, src1, "src1"), src_mat(func, src2, "src2")
    check_same(func, a, b)
    return result(func, _norm_value(func, a, int_arg(func, normType, "normType"), None, b), dst, stream)


def _norm_value(func, m, norm_type, mask, other):
    stat = norm_stat(func, m, norm_type, mask, other)
    return node("sqrt_f64", [stat], (), (), 1, 1, cv2.CV_64F, 1) if norm_type == cv2.NORM_L2 else \
        crop_node(stat, 0, 0, 1, 1)


class SqrtF64(OpDef):
    name = "sqrt_f64"

    def emit(self, ctx, n, y, x):
        return [f"math.sqrt(np.float64({ctx.read(n.inputs[0], y, x)[0]}))"]


class MeanStdDev(OpDef):
    """1x2 (mean, stddev) from a "moments" statistic (sum, sum of squares, count): OpenCV's
    ``sqrt(max(sqsum / n - mean * mean, 0))``; no pixels give 0, 0."""
    name = "mean_std_dev"
    pointwise = False

    def emit(self, ctx, n, y, x):
        s, sq, cnt = ctx.read(n.inputs[0], "0", "0")
        inv = ctx.let(f"(1.0 / np.float64({cnt})) if {cnt} > 0 else 0.0", "r")
        mean = ctx.let(f"np.float64({s}) * {inv}", "r")
        std = f"math.sqrt(max(np.float64({sq}) * {inv} - {mean} * {mean}, 0.0))"
        return [f"({mean} if {x} == 0 else {std})"]


def _mean_std_dev_node(func, m, mask):
    check_channels(func, m, (1,))
    check_depth(func, m, (cv2.CV_8U, cv2.CV_32F))
    return node("mean_std_dev", [reduce_node(func, m, "moments", mask)], (), (), 1, 2, cv2.CV_64F, 1)


@cuda_api("meanStdDev")
def meanStdDev(mtx, *args, dst=None, mask=None, stream=None):
    """meanStdDev(mtx[, mask]) -> (mean, stddev) as cv::Scalar tuples; with ``dst`` (or a
    positional GpuMat that is not an 8UC1 mask of mtx's size) -> dst 1x2 CV_64FC1 on the device."""
    func = "meanStdDev"
    m = src_mat(func, mtx, "mtx")
    GpuMat, device = gpumat_cls(), dst is not None or stream is not None
    for a in args:
        if isinstance(a, GpuMat) and mask is None and a._depth == cv2.CV_8U and a._cn == 1 and \
                a.size() == m.size():
            mask = a
        elif isinstance(a, GpuMat) and dst is None:
            dst, device = a, True
        elif isinstance(a, stream_cls()) and stream is None:
            stream, device = a, True
        else:
            raise cv_error(func, f"unexpected argument {a!r}", StsBadArg)
    nd = _mean_std_dev_node(func, m, mask)
    if device:
        return result(func, nd, dst, stream)
    mean, std = _host(nd)
    return (float(mean), 0.0, 0.0, 0.0), (float(std), 0.0, 0.0, 0.0)


_REDUCE_OPS = {cv2.REDUCE_SUM: rk.REDUCE_SUM, cv2.REDUCE_AVG: rk.REDUCE_AVG, cv2.REDUCE_MAX: rk.REDUCE_MAX,
               cv2.REDUCE_MIN: rk.REDUCE_MIN, cv2.REDUCE_SUM2: rk.REDUCE_SUM2}


@cuda_api("reduce")
def reduce(mtx, dim, reduceOp, dst=None, dtype=-1, stream=None):
    """cv2.cuda.reduce(mtx, dim, reduceOp[, dst[, dtype[, stream]]]): dim 0 -> 1 x cols,
    dim 1 -> rows x 1; computed in double, then converted (round, saturate) to dtype."""
    func = "reduce"
    m = src_mat(func, mtx, "mtx")
    dim, op = int_arg(func, dim, "dim"), int_arg(func, reduceOp, "reduceOp")
    if dim not in (0, 1):
        raise cv_error(func, f"dim must be 0 or 1, got {dim}", StsBadArg)
    if op not in _REDUCE_OPS:
        raise cv_error(func, f"unknown reduceOp {op}: expected REDUCE_SUM, REDUCE_AVG, REDUCE_MAX, "
                             "REDUCE_MIN or REDUCE_SUM2", StsBadFlag)
    out_depth = depth_arg(func, dtype, m._depth)
    buf = kernels().reduce_axis(region(func, m, "mtx"), dim, _REDUCE_OPS[op])
    stat = stat_mat(buf, cv2.CV_64F, m._cn)
    value = stat._value(func)
    nd = value if out_depth == cv2.CV_64F else convert_node(value, out_depth)
    return deliver(func, stat, dst, stream) if nd is value else result(func, nd, dst, stream)


class RectStdDev(OpDef):
    """Standard deviation of a rect window from an integral (32S) and a squared integral (64F):
    window sums by four taps each, clamped to the images; static (), dyn (rx, ry, rw, rh)."""
    name = "rect_std_dev"
    pointwise = False
    taps = 8

    def emit(self, ctx, n, y, x):
        s, sq = n.inputs
        rx, ry, rw, rh = (ctx.dyn(n, k, "i") for k in range(4))
        ys = [ctx.let(f"min(max({y} + {ry} + {d}, 0), {s.rows - 1})", "y") for d in ("0", rh)]
        xs = [ctx.let(f"min(max({x} + {rx} + {d}, 0), {s.cols - 1})", "x") for d in ("0", rw)]

        def window(v):
            a, b = ctx.read(v, ys[0], xs[0])[0], ctx.read(v, ys[0], xs[1])[0]
            c, d = ctx.read(v, ys[1], xs[0])[0], ctx.read(v, ys[1], xs[1])[0]
            return f"(np.float64({d}) - np.float64({c}) - np.float64({b}) + np.float64({a}))"
        inv = ctx.let(f"1.0 / np.float64({rw} * {rh})", "r")
        mean = ctx.let(f"{window(s)} * {inv}", "r")
        return [f"np.float32(math.sqrt(max({window(sq)} * {inv} - {mean} * {mean}, 0.0)))"]


@cuda_api("rectStdDev")
def rectStdDev(src, sqr, rect, dst=None, stream=None):
    """cv2.cuda.rectStdDev(src 32SC1, sqr 64FC1, rect[, dst[, stream]]) -> 32FC1 of src's size."""
    func = "rectStdDev"
    s, q = src_mat(func, src), src_mat(func, sqr, "sqr")
    if s.type() != cv2.CV_32SC1 or q.type() != cv2.CV_64FC1:
        raise cv_error(func, f"expected src CV_32SC1 and sqr CV_64FC1, got {DEPTH_NAME[s._depth]}C{s._cn} "
                             f"and {DEPTH_NAME[q._depth]}C{q._cn}", StsUnsupportedFormat)
    check_same(func, s, q, ("src", "sqr"), type_too=False)
    try:
        rx, ry, rw, rh = (int(v) for v in rect)
    except Exception:
        raise cv_error(func, f"rect must be (x, y, width, height), got {rect!r}", StsBadArg)
    if rw <= 0 or rh <= 0:
        raise cv_error(func, f"rect must have a positive size, got {rw}x{rh}", StsBadArg)
    nd = node("rect_std_dev", [s._value(func), q._value(func, "sqr")], (), (rx, ry, rw, rh),
              s._rows, s._cols, cv2.CV_32F, 1)
    return result(func, nd, dst, stream)


def reference_normalize(src, alpha, beta, norm_type, dtype, mask=None):
    """CPU OpenCV's normalize; with a mask, into zeros (lazycv's new result outside the mask)."""
    dst = np.zeros(src.shape, src.dtype if dtype < 0 else DEPTH_DTYPE[dtype])
    return cv2.normalize(src, dst, alpha, beta, norm_type, dtype, mask)
