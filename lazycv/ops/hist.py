"""Histograms and integral images: calcHist, histEven, histRange, evenLevels, equalizeHist,
integral, sqrIntegral — precompiled kernels (backends/reduce_kernels.py) run at the call on
their input, computed first (ops/reduce.py ``region``); the results stay on the device.

OpenCV's rules: calcHist counts 8UC1 values into 256 bins (1x256 CV_32SC1); histEven and
histRange count 8UC1/16UC1/16SC1 (histRange also 32FC1) values into bins
``levels[k] <= v < levels[k + 1]``, where histEven's levels are evenLevels': NPP's integer
levels ``lower + (upper - lower) * k // (nLevels - 1)`` — except 8U histEven, which OpenCV
CUDA runs through its own kernel (whole bins of ceil((upper - lower) / histSize), any channel
count: see ``_hist_even_8u``); equalizeHist is CPU cv::equalizeHist
(its table in float, bins before the first non-empty one mapped to 0) applied as a fused
table lookup; integral / sqrIntegral of 8UC1 give (rows + 1) x (cols + 1) CV_32SC1 / CV_64FC1
with a zero first row and column.
"""
import cv2
import numpy as np

from ..errors import StsBadArg, StsOutOfRange, StsUnsupportedFormat, cv_error
from .base import OpDef
from .common import check_channels, check_depth, cuda_api, gpumat_cls, int_arg, node, result, src_mat
from .reduce import deliver, kernels, region, stat_mat

_HIST_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S)


def _hist_src(func, src, depths=_HIST_DEPTHS):
    m = src_mat(func, src)
    check_channels(func, m, (1,))
    check_depth(func, m, depths)
    return m


def _mask_or_hist(func, m, args, mask, hist):
    """calcHist's positional GpuMats by its two overloads: an 8UC1 GpuMat of src's size is the
    mask (``calcHist(src, mask[, hist])``), any other the output (``calcHist(src[, hist])``)."""
    if len(args) > 3:                        # (src, mask, hist, stream at most)
        raise cv_error(func, f"{func}() takes at most 4 positional arguments ({len(args) + 1} given)", StsBadArg)
    GpuMat = gpumat_cls()
    for a in args:
        if isinstance(a, GpuMat) and mask is None and not a.empty() and a.type() == cv2.CV_8UC1 \
                and a.size() == m.size():
            mask = a
        elif isinstance(a, GpuMat) and hist is None:
            hist = a
        elif a is not None:
            raise cv_error(func, f"unexpected argument {a!r}", StsBadArg)
    return mask, hist


@cuda_api("calcHist")
def calcHist(src, *args, mask=None, hist=None, stream=None):
    """calcHist(src[, mask][, hist[, stream]]) -> hist (1x256 CV_32SC1)."""
    func = "calcHist"
    m = _hist_src(func, src, (cv2.CV_8U,))
    mask, hist = _mask_or_hist(func, m, args, mask, hist)
    mask_region = None
    if mask is not None:
        from .core import mask_mat
        mask_region = region(func, mask_mat(func, mask, m), "mask")
    buf = kernels().histogram(region(func, m), 256, scale=1.0, offset=0.0, mask=mask_region)
    return deliver(func, stat_mat(buf, cv2.CV_32S, 1), hist, stream)


def even_levels(func, n_levels, lower, upper):
    n_levels = int_arg(func, n_levels, "nLevels")
    lower, upper = int_arg(func, lower, "lowerLevel"), int_arg(func, upper, "upperLevel")
    if n_levels < 2:
        raise cv_error(func, f"nLevels must be at least 2, got {n_levels}", StsOutOfRange)
    if upper <= lower:
        raise cv_error(func, f"upperLevel ({upper}) must exceed lowerLevel ({lower})", StsOutOfRange)
    k = np.arange(n_levels, dtype=np.int64)
    return (lower + (upper - lower) * k // (n_levels - 1)).astype(np.int32).reshape(1, -1)


@cuda_api("evenLevels")
def evenLevels(nLevels, lowerLevel, upperLevel, levels=None, stream=None):
    """-> levels (1 x nLevels CV_32SC1), computed on the host and uploaded (as OpenCV does)."""
    host = even_levels("evenLevels", nLevels, lowerLevel, upperLevel)
    out = levels if isinstance(levels, gpumat_cls()) else gpumat_cls()()
    out.upload(host, stream)
    return out


def _levels_hist(func, m, levels_mat, hist, stream):
    lv = region(func, levels_mat, "levels")
    n = lv[4]
    if lv[3] != 1:
        raise cv_error(func, f"levels must be a row (1 x nLevels), got {lv[4]}x{lv[3]}", StsBadArg)
    if n < 2:
        raise cv_error(func, f"levels must hold at least 2 values, got {n}", StsOutOfRange)
    buf = kernels().histogram(region(func, m), n - 1, levels=lv)
    return deliver(func, stat_mat(buf, cv2.CV_32S, 1), hist, stream)


@cuda_api("histEven")
def histEven(src, histSize, lowerLevel, upperLevel, hist=None, stream=None):
    """histEven(src, histSize, lowerLevel, upperLevel[, hist[, stream]]) -> hist (1 x histSize
    CV_32SC1): 8U sources as OpenCV CUDA's own kernel (``_hist_even_8u``), 16U/16S over
    evenLevels(histSize + 1, lowerLevel, upperLevel), as NPP."""
    func = "histEven"
    m = src_mat(func, src)
    if m._depth == cv2.CV_8U:
        return _hist_even_8u(func, m, histSize, lowerLevel, upperLevel, hist, stream)
    m = _hist_src(func, src)
    host = even_levels(func, int_arg(func, histSize, "histSize") + 1, lowerLevel, upperLevel)
    levels = gpumat_cls()(host)
    return _levels_hist(func, m, levels, hist, stream)


def _hist_even_8u(func, m, hist_size, lower, upper, hist, stream):
    """OpenCV CUDA takes every 8U source (on any GPU since compute 3.0) to its histEven8u
    kernel, which bins ``lower <= v <= upper`` into ``(v - lower) // binSize`` with ``binSize =
    ceil((upper - lower) / histSize)`` (a value past the last bin is dropped), and reads each
    row's first ``cols`` bytes whatever the channel count (so 3 or 4 channels count the
    interleaved bytes of the row's first third or quarter). The same as levels ``lower + k *
    binSize``, the last one ``min(lower + histSize * binSize, upper + 1)``."""
    n = int_arg(func, hist_size, "histSize")
    lower, upper = int_arg(func, lower, "lowerLevel"), int_arg(func, upper, "upperLevel")
    if n < 1:
        raise cv_error(func, f"histSize must be at least 1, got {n}", StsOutOfRange)
    if upper <= lower:
        raise cv_error(func, f"upperLevel ({upper}) must exceed lowerLevel ({lower})", StsOutOfRange)
    bin_size = -(-(upper - lower) // n)
    host = np.array([[lower + k * bin_size for k in range(n)] + [min(lower + n * bin_size, upper + 1)]], np.int32)
    lv = region(func, gpumat_cls()(host), "levels")
    buf, y0, x0, rows, cols, cn = region(func, m)
    counts = kernels().histogram((buf, y0, x0 * cn, rows, cols, 1), n, levels=lv)
    return deliver(func, stat_mat(counts, cv2.CV_32S, 1), hist, stream)


@cuda_api("histRange")
def histRange(src, levels, hist=None, stream=None):
    """histRange(src, levels[, hist[, stream]]) -> hist (1 x (nLevels - 1) CV_32SC1); levels
    CV_32SC1 (CV_32FC1 for a 32F src)."""
    func = "histRange"
    m = _hist_src(func, src, _HIST_DEPTHS + (cv2.CV_32F,))
    lv = src_mat(func, levels, "levels")
    want = cv2.CV_32FC1 if m._depth == cv2.CV_32F else cv2.CV_32SC1
    if lv.type() != want:
        raise cv_error(func, f"levels must be {'CV_32FC1' if want == cv2.CV_32FC1 else 'CV_32SC1'} for this "
                             "src", StsUnsupportedFormat)
    return _levels_hist(func, m, lv, hist, stream)


class TableLookup(OpDef):
    """dst = table[src]: a 1 x 256 table read at the pixel's value (one tap)."""
    name = "table_lookup"
    pointwise = False

    def emit(self, ctx, n, y, x):
        v = ctx.read(n.inputs[0], y, x)[0]
        return [ctx.read(n.inputs[1], "0", v)[0]]


@cuda_api("equalizeHist")
def equalizeHist(src, dst=None, stream=None):
    """equalizeHist(src[, dst[, stream]]) for 8UC1: histogram and table on the device, then a
    fused lookup."""
    func = "equalizeHist"
    m = _hist_src(func, src, (cv2.CV_8U,))
    hist = kernels().histogram(region(func, m), 256, scale=1.0, offset=0.0)
    lut = stat_mat(kernels().equalize_lut(hist, m._rows * m._cols), cv2.CV_8U, 1)
    nd = node("table_lookup", [m._value(func), lut._value(func, "lut")], (), (), m._rows, m._cols, cv2.CV_8U, 1)
    return result(func, nd, dst, stream)


def _integral(func, src, dst, stream, square):
    m = _hist_src(func, src, (cv2.CV_8U,))
    buf = kernels().integral(region(func, m), square)
    return deliver(func, stat_mat(buf, cv2.CV_64F if square else cv2.CV_32S, 1), dst, stream)


@cuda_api("integral")
def integral(src, sum=None, stream=None):
    """integral(src[, sum[, stream]]) -> (rows + 1) x (cols + 1) CV_32SC1."""
    return _integral("integral", src, sum, stream, False)


@cuda_api("sqrIntegral")
def sqrIntegral(src, sqsum=None, stream=None):
    """sqrIntegral(src[, sqsum[, stream]]) -> (rows + 1) x (cols + 1) CV_64FC1 of squares."""
    return _integral("sqrIntegral", src, sqsum, stream, True)


def reference_calc_hist(src, mask=None):
    return cv2.calcHist([src], [0], mask, [256], [0, 256]).reshape(1, 256).astype(np.int32)
