"""Linear filters (cudafilters): box, linear (filter2D), separable, Gaussian, Sobel/Scharr/deriv,
Laplacian, row/column sums; the tap-list op every filter family records (the non-linear ones
are in morphology.py).

OpenCV's CUDA module builds a filter object once (``cv2.cuda.createGaussianFilter(...)``) and
applies it to images (``f.apply(src[, dst[, stream]])``); here ``apply`` records nodes of one
gather op, :class:`Neighbourhood`, which reads a list of taps (offsets from the output pixel)
through OpenCV's border modes (``ops/border.py``) and reduces them. A separable filter is two
such nodes, a row pass and a column pass of k taps each (not k*k); the planner writes the row
pass to memory because its consumer also reads many taps. Kernel weights are ``dyn`` (kernel
arguments): a new sigma or kernel of the same size does not compile again; tap offsets, border
mode and the reduction are structural.

Numerics, against CPU OpenCV:
* separable and 2-D linear filters sum float32 products, as OpenCV's CUDA kernels do (rows
  into a float32 buffer, then columns, rounded and saturated once): integer results within 1 of
  CPU OpenCV (its 8U Gaussian uses 8-bit fixed-point weights), float32 within 1e-5;
* the box filter follows CPU OpenCV exactly: integer sums, and for 8U a window of at most 256
  pixels divides as its ColumnSum<ushort, uchar> does ((sum + delta) * mul >> 16), a larger one
  rounds sum * (1/n) in double; 32F sums in double;
* an ROI is filtered as an isolated image (BORDER_ISOLATED): its parent's pixels are not read.
"""
import cv2
import numpy as np

from .._types import DEPTH_NAME, DEPTH_RANGE, is_float, make_type, split_type, type_name
from ..errors import StsAssert, StsBadArg, StsBadSize, StsUnsupportedFormat, binding_class, cv_error
from . import border
from .base import OpDef, saturate
from .common import API, cuda_api, float_arg, gpumat_cls, int_arg, node, result, scalar4, size_arg, src_mat

_WEIGHTS = 8            # dyn: rows, cols, param0, param1, border value x4, then the weights


class Neighbourhood(OpDef):
    """Output (y, x) reduces the input at (y + dy, x + dx) for each tap offset.

    static = (offsets, border mode, reduce, finish); dyn = (rows, cols, p0, p1, c0..c3, w...).
    reduce: 'wsum' (float32 sum of products with the weights), 'sum' (exact: integers, or
    float64), 'min', 'max'. finish: 'keep' (the output depth's cast), 'saturate', 'div_fixed'
    ((sum + p1) * p0 >> 16), 'scale' (sum * p0 in double, saturated).
    """
    name = "neighbourhood"
    pointwise = False

    def tap_count(self, n):
        return len(n.static[0])

    def label(self, n):
        offsets, mode, reduce, _ = n.static
        ys = [dy for dy, _ in offsets]
        xs = [dx for _, dx in offsets]
        return f"{reduce}{max(xs) - min(xs) + 1}x{max(ys) - min(ys) + 1}[{border.NAMES[mode]}]"

    def emit(self, ctx, n, y, x):
        offsets, mode, reduce, finish = n.static
        src = n.inputs[0]
        fill = border_values(ctx, n, 4, src.depth) if mode == border.CONSTANT else None
        taps = [read_tap(ctx, n, src, y, x, dy, dx, mode, fill) for dy, dx in offsets]
        out = []
        for c in range(n.cn):
            vals = [t[c] for t in taps]
            acc = _reduce(ctx, n, reduce, vals, is_float(src.depth))
            out.append(_finish(ctx, n, finish, acc))
        return out


def border_values(ctx, n, first, depth):
    """The BORDER_CONSTANT value per channel, as kernel arguments ``dyn[first:first + cn]``."""
    kind = "i" if not is_float(depth) else ("f64" if depth == cv2.CV_64F else "f32")
    return [ctx.dyn(n, first + c, kind) for c in range(n.cn)]


def read_tap(ctx, n, src, y, x, dy, dx, mode, fill):
    """``src``'s channels at (y + dy, x + dx), the coordinates mapped by ``mode``; with
    BORDER_CONSTANT, ``fill`` off the image. ``n.dyn[0:2]`` are ``src``'s rows and cols."""
    if dy == 0 and dx == 0:
        return ctx.read(src, y, x)
    rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
    yy, xx, conds = y, x, []
    if dy:
        py = ctx.let(f"np.int32({y} + {dy})", "p")
        yy = border.index(ctx, py, rows, mode)
        conds.append(f"({py} >= 0) & ({py} < {rows})")
    if dx:
        px = ctx.let(f"np.int32({x} + {dx})", "p")
        xx = border.index(ctx, px, cols, mode)
        conds.append(f"({px} >= 0) & ({px} < {cols})")
    vals = ctx.read(src, yy, xx)
    if fill is None:
        return vals
    inside = ctx.let("(" + " & ".join(conds) + ")", "in")     # (& of bools: no branches)
    return [ctx.let(f"({v} if {inside} else {f})", "b") for v, f in zip(vals, fill)]


def _reduce(ctx, n, reduce, vals, src_float):
    if reduce == "wsum":
        acc = None
        for i, v in enumerate(vals):
            term = f"np.float32({v}) * {ctx.dyn(n, _WEIGHTS + i, 'f32')}"
            acc = ctx.let(term if acc is None else f"{acc} + {term}", "a")
        return acc
    if reduce == "sum":
        cast = "np.float64({})" if src_float else "{}"
        acc = None
        for v in vals:
            acc = ctx.let(cast.format(v) if acc is None else f"{acc} + {cast.format(v)}", "a")
        return acc
    acc = vals[0]
    for v in vals[1:]:         # (a tie or NaN keeps the earlier tap; integers are exact either way)
        acc = ctx.let(f"{reduce}({acc}, {v})", "a")
    return acc


def _finish(ctx, n, finish, acc):
    if finish == "keep":
        return acc
    if finish == "saturate":
        return saturate(ctx, acc, n.depth)
    if finish == "div_fixed":
        return f"np.int32(({acc} + {ctx.dyn(n, 3, 'i')}) * {ctx.dyn(n, 2, 'i')} >> 16)"
    return saturate(ctx, f"np.float64({acc}) * {ctx.dyn(n, 2, 'f64')}", n.depth)


def neighbourhood_node(value, offsets, mode, reduce, finish, depth, weights=(), fill=(0,) * 4, params=(0, 0)):
    dyn = (value.rows, value.cols, *params, *fill, *weights)
    return node("neighbourhood", [value], (tuple(offsets), mode, reduce, finish), dyn,
                value.rows, value.cols, depth, value.cn)


def row_offsets(ksize, anchor):
    return [(0, i - anchor) for i in range(ksize)]


def column_offsets(ksize, anchor):
    return [(i - anchor, 0) for i in range(ksize)]


# ---------------------------------------------------------------------------------------------
# The filter object and argument parsing


@binding_class
class Filter:
    """cv2.cuda_Filter: made by a ``create*Filter`` call; ``apply(src[, dst[, stream]])``."""

    def __init__(self, func, src_type, build):
        self._func, self._src_type, self._build = func, src_type, build

    def apply(self, src, dst=None, stream=None):
        func = self._func
        m = src_mat(func, src)
        if m.type() != self._src_type:
            raise cv_error(func, f"src.type() == srcType: the filter was created for "
                                 f"{type_name(self._src_type)}, got {type_name(m.type())}", StsAssert)
        return result(func, self._build(m), dst, stream)

    def empty(self):
        return False

    def getDefaultName(self):
        return f"cv::cuda::{self._func}"

    def __repr__(self):
        return f"<cv2.cuda_Filter {self._func} {type_name(self._src_type)}>"


API["Filter"] = Filter      # cv2.cuda.Filter and cv2.cuda_Filter: isinstance sees lazycv's filters


def type_arg(func, t, name="srcType"):
    dc = split_type(int_arg(func, t, name))
    if dc is None:
        raise cv_error(func, f"unknown {name} {t}", StsUnsupportedFormat)
    return dc


def dst_depth(func, dst_type, depth, cn, allowed):
    """OpenCV's dstType: negative keeps the source's depth; the channels are the source's."""
    dst_type = int_arg(func, dst_type, "dstType")
    d = depth if dst_type < 0 else type_arg(func, dst_type, "dstType")[0]
    if d not in allowed:
        raise cv_error(func, f"unsupported dstType {type_name(make_type(d, cn))}: expected depth "
                             f"{'/'.join(DEPTH_NAME[a] for a in allowed)}", StsUnsupportedFormat)
    return d


def check_type(func, depth, cn, allowed):
    """``allowed``: (depth, cn) pairs OpenCV's CUDA filter takes."""
    if (depth, cn) not in allowed:
        names = ", ".join(type_name(make_type(d, c)) for d, c in allowed)
        raise cv_error(func, f"unsupported srcType {type_name(make_type(depth, cn))}: expected {names}",
                       StsUnsupportedFormat)


def anchor_arg(func, a, ksize, name="anchor"):
    """cv::cuda's normalizeAnchor: negative is the centre (ksize >> 1), else 0 <= a < ksize."""
    a = int_arg(func, a, name)
    if a < 0:
        a = ksize >> 1
    if not 0 <= a < ksize:
        raise cv_error(func, f"0 <= {name} && {name} < ksize: got {a} for ksize {ksize}", StsAssert)
    return a


def point_arg(func, p, ksize_w, ksize_h):
    try:
        ax, ay = p
    except (TypeError, ValueError):
        raise cv_error(func, f"anchor must be a point (x, y), got {p!r}", StsBadArg) from None
    return anchor_arg(func, ax, ksize_w, "anchor.x"), anchor_arg(func, ay, ksize_h, "anchor.y")


def fill_arg(func, value, depth):
    """A border Scalar as the source depth holds it (copyMakeBorder's saturate_cast)."""
    s = scalar4(func, (0, 0, 0, 0) if value is None else value, "borderVal")
    if is_float(depth):
        return tuple(float(np.float32(v)) if depth == cv2.CV_32F else float(v) for v in s)
    lo, hi = DEPTH_RANGE[depth]
    return tuple(min(max(int(np.rint(v)), lo), hi) for v in s)


def kernel_arg(func, k, name="kernel"):
    """A numpy kernel (one channel) as float64 rows x cols."""
    try:
        a = np.asarray(k.download() if hasattr(k, "download") else k, dtype=np.float64)
    except (TypeError, ValueError):
        raise cv_error(func, f"{name} must be a numeric array, got {type(k).__name__}", StsBadArg) from None
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2 or a.size == 0:
        raise cv_error(func, f"{name} must be a non-empty one-channel 2-D array, got shape {a.shape}", StsBadArg)
    return a


def f32(values):
    return tuple(float(np.float32(v)) for v in np.ravel(values))


# ---------------------------------------------------------------------------------------------
# Box filters and sums

_BOX_TYPES = ((cv2.CV_8U, 1), (cv2.CV_8U, 4), (cv2.CV_32F, 1))


def box_nodes(value, kw, kh, ax, ay, mode, fill):
    """Mean over a kw x kh window, as CPU cv::boxFilter (normalize=True) computes it."""
    src_float = is_float(value.depth)
    sum_depth = cv2.CV_64F if src_float else cv2.CV_32S
    rows = neighbourhood_node(value, row_offsets(kw, ax), mode, "sum", "keep", sum_depth, fill=fill)
    col_fill = tuple(v * kw for v in fill)          # a border row's row sum
    n = kw * kh
    if value.depth == cv2.CV_8U and n <= 256:
        mul = (1 << 16) / n                          # OpenCV's ColumnSum<ushort, uchar>
        div_mul, delta = int(np.floor(mul)), n // 2
        if mul - div_mul < 0.5:
            delta += 1
        else:
            div_mul += 1
        return neighbourhood_node(rows, column_offsets(kh, ay), mode, "sum", "div_fixed", value.depth,
                                  fill=col_fill, params=(div_mul, delta))
    return neighbourhood_node(rows, column_offsets(kh, ay), mode, "sum", "scale", value.depth,
                              fill=col_fill, params=(1.0 / n, 0))


def _ksize_arg(func, ksize):
    kw, kh = size_arg(func, ksize, "ksize")
    if kw <= 0 or kh <= 0:
        raise cv_error(func, f"ksize must be positive, got {(kw, kh)}", StsBadSize)
    return kw, kh


@cuda_api("createBoxFilter")
def createBoxFilter(srcType, dstType, ksize, anchor=(-1, -1), borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createBoxFilter(srcType, dstType, ksize[, anchor[, borderMode[, borderVal]]]): 8UC1, 8UC4, 32FC1."""
    func = "createBoxFilter"
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, _BOX_TYPES)
    dst_depth(func, dstType, depth, cn, (depth,))
    kw, kh = _ksize_arg(func, ksize)
    ax, ay = point_arg(func, anchor, kw, kh)
    mode = border.check_mode(func, borderMode)
    fill = fill_arg(func, borderVal, depth)
    return Filter(func, make_type(depth, cn), lambda m: box_nodes(m._value(func), kw, kh, ax, ay, mode, fill))


def _sum_filter(func, axis, srcType, dstType, ksize, anchor, borderMode, borderVal):
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, ((cv2.CV_8U, 1),))
    if int_arg(func, dstType, "dstType") != cv2.CV_32FC1:
        raise cv_error(func, f"dstType == CV_32FC1: got {type_name(int(dstType))}", StsUnsupportedFormat)
    ksize = int_arg(func, ksize, "ksize")
    if ksize <= 0:
        raise cv_error(func, f"ksize must be positive, got {ksize}", StsBadSize)
    a = anchor_arg(func, anchor, ksize)
    mode = border.check_mode(func, borderMode)
    fill = fill_arg(func, borderVal, depth)
    offsets = row_offsets(ksize, a) if axis == "row" else column_offsets(ksize, a)
    return Filter(func, make_type(depth, cn), lambda m: neighbourhood_node(
        m._value(func), offsets, mode, "sum", "keep", cv2.CV_32F, fill=fill))


@cuda_api("createRowSumFilter")
def createRowSumFilter(srcType, dstType, ksize, anchor=-1, borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createRowSumFilter(srcType, dstType, ksize[, anchor[, borderMode[, borderVal]]]): 8UC1 -> 32FC1."""
    return _sum_filter("createRowSumFilter", "row", srcType, dstType, ksize, anchor, borderMode, borderVal)


@cuda_api("createColumnSumFilter")
def createColumnSumFilter(srcType, dstType, ksize, anchor=-1, borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createColumnSumFilter(srcType, dstType, ksize[, anchor[, borderMode[, borderVal]]]): 8UC1 -> 32FC1."""
    return _sum_filter("createColumnSumFilter", "column", srcType, dstType, ksize, anchor, borderMode, borderVal)


# ---------------------------------------------------------------------------------------------
# Linear filters

_LINEAR_TYPES = tuple((d, c) for d in (cv2.CV_8U, cv2.CV_16U, cv2.CV_32F) for c in (1, 4))
_SEPARABLE_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32S, cv2.CV_32F)
_SEPARABLE_TYPES = tuple((d, c) for d in _SEPARABLE_DEPTHS for c in (1, 3, 4))
MAX_SEPARABLE = 32          # OpenCV's row and column kernels hold at most 32 taps


def linear_filter(func, srcType, dstType, kernel, anchor, borderMode, borderVal):
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, _LINEAR_TYPES)
    dst_depth(func, dstType, depth, cn, (depth,))
    k = kernel_arg(func, kernel)
    kh, kw = k.shape
    ax, ay = point_arg(func, anchor, kw, kh)
    mode = border.check_mode(func, borderMode)
    fill = fill_arg(func, borderVal, depth)
    offsets = [(i - ay, j - ax) for i in range(kh) for j in range(kw)]
    weights = f32(k)
    return Filter(func, make_type(depth, cn), lambda m: neighbourhood_node(
        m._value(func), offsets, mode, "wsum", "saturate", depth, weights, fill))


@cuda_api("createLinearFilter")
def createLinearFilter(srcType, dstType, kernel, anchor=(-1, -1), borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createLinearFilter(srcType, dstType, kernel[, anchor[, borderMode[, borderVal]]]): 8U, 16U, 32F;
    1 or 4 channels; float32 sums of the kernel's taps in row order (OpenCV's CUDA filter2D)."""
    return linear_filter("createLinearFilter", srcType, dstType, kernel, anchor, borderMode, borderVal)


@cuda_api("createLaplacianFilter")
def createLaplacianFilter(srcType, dstType, ksize=1, scale=1, borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createLaplacianFilter(srcType, dstType[, ksize[, scale[, borderMode[, borderVal]]]]): ksize 1 or 3."""
    func = "createLaplacianFilter"
    ksize = int_arg(func, ksize, "ksize")
    if ksize not in (1, 3):
        raise cv_error(func, f"ksize == 1 || ksize == 3: got {ksize}", StsAssert)
    k = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]] if ksize == 1 else [[2, 0, 2], [0, -8, 0], [2, 0, 2]],
                 np.float32)
    scale = float_arg(func, scale, "scale", 1.0)
    if scale != 1:
        k = k * np.float32(scale)
    return linear_filter(func, srcType, dstType, k, (-1, -1), borderMode, borderVal)


def separable_filter(func, srcType, dstType, row_kernel, column_kernel, anchor, row_mode, column_mode):
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, _SEPARABLE_TYPES)
    ddepth = dst_depth(func, dstType, depth, cn, _SEPARABLE_DEPTHS)
    kx = f32(kernel_arg(func, row_kernel, "rowKernel"))
    ky = f32(kernel_arg(func, column_kernel, "columnKernel"))
    for name, k in (("rowKernel", kx), ("columnKernel", ky)):
        if len(k) > MAX_SEPARABLE:
            raise cv_error(func, f"{name} has {len(k)} taps: OpenCV's CUDA separable filter takes at most "
                                 f"{MAX_SEPARABLE}", StsAssert)
    ax, ay = point_arg(func, anchor, len(kx), len(ky))
    row_mode = border.check_mode(func, row_mode, name="rowBorderMode")
    column_mode = row_mode if int_arg(func, column_mode, "columnBorderMode") < 0 else \
        border.check_mode(func, column_mode, name="columnBorderMode")

    def build(m):
        rows = neighbourhood_node(m._value(func), row_offsets(len(kx), ax), row_mode, "wsum", "keep",
                                  cv2.CV_32F, kx)
        return neighbourhood_node(rows, column_offsets(len(ky), ay), column_mode, "wsum", "saturate",
                                  ddepth, ky)
    return Filter(func, make_type(depth, cn), build)


@cuda_api("createSeparableLinearFilter")
def createSeparableLinearFilter(srcType, dstType, rowKernel, columnKernel, anchor=(-1, -1),
                                rowBorderMode=cv2.BORDER_DEFAULT, columnBorderMode=-1):
    """createSeparableLinearFilter(srcType, dstType, rowKernel, columnKernel[, anchor[, rowBorderMode[,
    columnBorderMode]]]): 8U 16U 16S 32S 32F with 1, 3 or 4 channels; kernels of up to 32 taps."""
    return separable_filter("createSeparableLinearFilter", srcType, dstType, rowKernel, columnKernel, anchor,
                            rowBorderMode, columnBorderMode)


def deriv_filter(func, srcType, dstType, dx, dy, ksize, normalize, scale, row_mode, column_mode):
    dx, dy, ksize = int_arg(func, dx, "dx"), int_arg(func, dy, "dy"), int_arg(func, ksize, "ksize")
    try:
        kx, ky = cv2.getDerivKernels(dx, dy, ksize, normalize=bool(normalize), ktype=cv2.CV_32F)
    except cv2.error as e:
        raise cv_error(func, getattr(e, "err", None) or str(e).strip().splitlines()[-1], StsBadArg) from None
    scale = float_arg(func, scale, "scale", 1.0)
    if scale != 1:                  # OpenCV scales the smoothing kernel
        if dx == 0:
            kx = kx * np.float32(scale)
        else:
            ky = ky * np.float32(scale)
    return separable_filter(func, srcType, dstType, kx, ky, (-1, -1), row_mode, column_mode)


@cuda_api("createDerivFilter")
def createDerivFilter(srcType, dstType, dx, dy, ksize, normalize=False, scale=1,
                      rowBorderMode=cv2.BORDER_DEFAULT, columnBorderMode=-1):
    """createDerivFilter(srcType, dstType, dx, dy, ksize[, normalize[, scale[, rowBorderMode[, columnBorderMode]]]])."""
    return deriv_filter("createDerivFilter", srcType, dstType, dx, dy, ksize, normalize, scale,
                        rowBorderMode, columnBorderMode)


@cuda_api("createSobelFilter")
def createSobelFilter(srcType, dstType, dx, dy, ksize=3, scale=1, rowBorderMode=cv2.BORDER_DEFAULT,
                      columnBorderMode=-1):
    """createSobelFilter(srcType, dstType, dx, dy[, ksize[, scale[, rowBorderMode[, columnBorderMode]]]])."""
    return deriv_filter("createSobelFilter", srcType, dstType, dx, dy, ksize, False, scale,
                        rowBorderMode, columnBorderMode)


@cuda_api("createScharrFilter")
def createScharrFilter(srcType, dstType, dx, dy, scale=1, rowBorderMode=cv2.BORDER_DEFAULT, columnBorderMode=-1):
    """createScharrFilter(srcType, dstType, dx, dy[, scale[, rowBorderMode[, columnBorderMode]]])."""
    return deriv_filter("createScharrFilter", srcType, dstType, dx, dy, -1, False, scale,
                        rowBorderMode, columnBorderMode)


@cuda_api("createGaussianFilter")
def createGaussianFilter(srcType, dstType, ksize, sigma1, sigma2=0, rowBorderMode=cv2.BORDER_DEFAULT,
                         columnBorderMode=-1):
    """createGaussianFilter(srcType, dstType, ksize, sigma1[, sigma2[, rowBorderMode[, columnBorderMode]]]):
    a ksize of 0 comes from sigma (3 sigma for 8U, 4 otherwise); sides must be odd."""
    func = "createGaussianFilter"
    depth, _ = type_arg(func, srcType)
    kw, kh = size_arg(func, ksize, "ksize")
    sigma1 = float_arg(func, sigma1, "sigma1", 0.0)
    sigma2 = float_arg(func, sigma2, "sigma2", 0.0)
    if sigma2 <= 0:
        sigma2 = sigma1
    reach = 3 if depth == cv2.CV_8U else 4
    if kw <= 0 and sigma1 > 0:
        kw = int(np.rint(sigma1 * reach * 2 + 1)) | 1
    if kh <= 0 and sigma2 > 0:
        kh = int(np.rint(sigma2 * reach * 2 + 1)) | 1
    if not (kw > 0 and kw % 2 == 1 and kh > 0 and kh % 2 == 1):
        raise cv_error(func, f"ksize.width > 0 && ksize.width % 2 == 1 && ksize.height > 0 && "
                             f"ksize.height % 2 == 1: got {(kw, kh)}", StsAssert)
    kx = cv2.getGaussianKernel(kw, max(sigma1, 0.0), cv2.CV_32F)
    ky = cv2.getGaussianKernel(kh, max(sigma2, 0.0), cv2.CV_32F)
    return separable_filter(func, srcType, dstType, kx, ky, (-1, -1), rowBorderMode, columnBorderMode)


def gpumat_of(value):
    """A lazy GpuMat holding a recorded node (to feed it to another cv2.cuda call)."""
    return gpumat_cls()._lazy(value)


__all__ = ["Filter", "Neighbourhood", "neighbourhood_node", "read_tap", "border_values", "box_nodes",
           "type_arg", "check_type", "anchor_arg", "point_arg", "fill_arg", "kernel_arg", "gpumat_of",
           "row_offsets", "column_offsets"]
