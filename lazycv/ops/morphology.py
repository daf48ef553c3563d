"""Non-linear filters: morphology (erode, dilate, open, close, gradient, top hat, black hat),
box max/min and median (cudafilters), and cudaimgproc's bilateralFilter.

Erosion and dilation are min and max over the structuring element's non-zero taps
(:class:`filters.Neighbourhood`); a full rectangle is a row pass and a column pass (k + k taps,
exact for min and max). ``iterations`` repeats the node; for a rectangle it is one larger
rectangle instead, as CPU OpenCV rewrites it (the same result). Borders follow CPU cv::erode/dilate (a tap off the image is left out:
OpenCV's morphologyDefaultBorderValue); OpenCV's CUDA build pads by reflection instead, which
differs only where the element is not symmetric about its anchor — its own tests skip the border.
Box max/min take a border mode and value as OpenCV's NPP path does (copyMakeBorder, then the rank).

The median (8UC1, as OpenCV CUDA) counts instead of sorting: for each of the 8 bits from the
top it keeps the bit if fewer than half the window's pixels lie below the candidate — 8 passes of
k*k compares in straight-line code, replicating the border as CPU cv::medianBlur does.
"""
import cv2
import numpy as np

from .._types import is_float, make_type
from ..errors import StsAssert, StsBadArg, StsBadSize, cv_error
from . import border
from .arith import arith_node
from .base import OpDef, saturate
from .common import cuda_api, float_arg, int_arg, node, result, size_arg, src_mat
from .core import crop_node
from .filters import (Filter, check_type, column_offsets, fill_arg, gpumat_of, kernel_arg,
                      neighbourhood_node, point_arg, read_tap, row_offsets, type_arg)

_MORPH_TYPES = ((cv2.CV_8U, 1), (cv2.CV_8U, 4), (cv2.CV_32F, 1), (cv2.CV_32F, 4))
_RANK_TYPES = ((cv2.CV_8U, 1), (cv2.CV_8U, 4))
# CPU OpenCV's morphologyDefaultBorderValue (+-DBL_MAX) as each depth saturates it
_FLT_MAX = float(np.finfo(np.float32).max)
_NEUTRAL = {(cv2.MORPH_ERODE, cv2.CV_8U): 255, (cv2.MORPH_DILATE, cv2.CV_8U): 0,
            (cv2.MORPH_ERODE, cv2.CV_32F): _FLT_MAX, (cv2.MORPH_DILATE, cv2.CV_32F): -_FLT_MAX}


def rank_nodes(value, mask, ax, ay, reduce, mode, fill):
    """min or max over ``mask``'s non-zero taps (anchor (ax, ay)); a full rectangle as two passes."""
    kh, kw = mask.shape
    if mask.all():
        rows = neighbourhood_node(value, row_offsets(kw, ax), mode, reduce, "keep", value.depth, fill=fill)
        return neighbourhood_node(rows, column_offsets(kh, ay), mode, reduce, "keep", value.depth, fill=fill)
    offsets = [(i - ay, j - ax) for i in range(kh) for j in range(kw) if mask[i, j]]
    if not offsets:                    # an element without taps copies (CPU OpenCV's output is shifted)
        offsets = [(0, 0)]
    return neighbourhood_node(value, offsets, mode, reduce, "keep", value.depth, fill=fill)


def morph_value(value, op, mask, ax, ay, iterations):
    """``iterations`` erosions or dilations of ``value``, a tap off the image reads the border value
    CPU OpenCV uses (the depth's extreme: it changes nothing unless every tap is off the image)."""
    reduce = "min" if op == cv2.MORPH_ERODE else "max"
    fill = (_NEUTRAL[(op, value.depth)],) * 4
    if iterations > 1 and mask.all():
        # n passes of a rectangle are one pass of the rectangle n - 1 steps wider, anchored n
        # times further in (CPU OpenCV's rewrite; equal with the border left out): 2 kernels, not 2n
        kh, kw = mask.shape
        mask = np.ones((kh + (iterations - 1) * (kh - 1), kw + (iterations - 1) * (kw - 1)), bool)
        ax, ay, iterations = ax * iterations, ay * iterations, 1
    for _ in range(iterations):
        value = rank_nodes(value, mask, ax, ay, reduce, border.CONSTANT, fill)
    return value


def _difference(func, a, b):
    return arith_node(func, "sub", gpumat_of(a), gpumat_of(b))[0]


@cuda_api("createMorphologyFilter")
def createMorphologyFilter(op, srcType, kernel, anchor=(-1, -1), iterations=1):
    """createMorphologyFilter(op, srcType, kernel[, anchor[, iterations]]): 8UC1, 8UC4, 32FC1, 32FC4;
    an empty kernel is a 3x3 rectangle."""
    func = "createMorphologyFilter"
    op = int_arg(func, op, "op")
    ops = (cv2.MORPH_ERODE, cv2.MORPH_DILATE, cv2.MORPH_OPEN, cv2.MORPH_CLOSE, cv2.MORPH_GRADIENT,
           cv2.MORPH_TOPHAT, cv2.MORPH_BLACKHAT)
    if op not in ops:
        raise cv_error(func, f"Unknown morphological operation {op}", StsBadArg)
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, _MORPH_TYPES)
    empty = kernel is None or np.asarray(kernel).size == 0
    mask = np.ones((3, 3), bool) if empty else kernel_arg(func, kernel) != 0
    kh, kw = mask.shape
    ax, ay = point_arg(func, anchor, kw, kh)
    iterations = int_arg(func, iterations, "iterations")
    if iterations < 0:
        raise cv_error(func, f"iterations must not be negative, got {iterations}", StsBadArg)

    def morph(value, o):
        return morph_value(value, o, mask, ax, ay, iterations)

    def build(m):
        v = m._value(func)
        if op in (cv2.MORPH_ERODE, cv2.MORPH_DILATE):
            return morph(v, op) if iterations else crop_node(v, 0, 0, m._rows, m._cols)
        if op in (cv2.MORPH_OPEN, cv2.MORPH_CLOSE) and not iterations:
            return crop_node(v, 0, 0, m._rows, m._cols)
        if op == cv2.MORPH_OPEN:
            return morph(morph(v, cv2.MORPH_ERODE), cv2.MORPH_DILATE)
        if op == cv2.MORPH_CLOSE:
            return morph(morph(v, cv2.MORPH_DILATE), cv2.MORPH_ERODE)
        if op == cv2.MORPH_GRADIENT:
            return _difference(func, morph(v, cv2.MORPH_DILATE), morph(v, cv2.MORPH_ERODE))
        if op == cv2.MORPH_TOPHAT:
            return _difference(func, v, morph(morph(v, cv2.MORPH_ERODE), cv2.MORPH_DILATE))
        return _difference(func, morph(morph(v, cv2.MORPH_DILATE), cv2.MORPH_ERODE), v)
    return Filter(func, make_type(depth, cn), build)


def _box_rank(func, reduce, srcType, ksize, anchor, borderMode, borderVal):
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, _RANK_TYPES)
    kw, kh = size_arg(func, ksize, "ksize")
    if kw <= 0 or kh <= 0:
        raise cv_error(func, f"ksize must be positive, got {(kw, kh)}", StsBadSize)
    ax, ay = point_arg(func, anchor, kw, kh)
    mode = border.check_mode(func, borderMode)
    fill = fill_arg(func, borderVal, depth)
    mask = np.ones((kh, kw), bool)
    return Filter(func, make_type(depth, cn), lambda m: rank_nodes(m._value(func), mask, ax, ay, reduce, mode, fill))


@cuda_api("createBoxMaxFilter")
def createBoxMaxFilter(srcType, ksize, anchor=(-1, -1), borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createBoxMaxFilter(srcType, ksize[, anchor[, borderMode[, borderVal]]]): 8UC1, 8UC4."""
    return _box_rank("createBoxMaxFilter", "max", srcType, ksize, anchor, borderMode, borderVal)


@cuda_api("createBoxMinFilter")
def createBoxMinFilter(srcType, ksize, anchor=(-1, -1), borderMode=cv2.BORDER_DEFAULT, borderVal=None):
    """createBoxMinFilter(srcType, ksize[, anchor[, borderMode[, borderVal]]]): 8UC1, 8UC4."""
    return _box_rank("createBoxMinFilter", "min", srcType, ksize, anchor, borderMode, borderVal)


class Median(OpDef):
    """The median of the (2r+1)^2 window of an 8-bit image, by a bitwise search over counts.
    static = (r,); dyn = (rows, cols)."""
    name = "median"
    pointwise = False

    def tap_count(self, n):
        return (2 * n.static[0] + 1) ** 2

    def emit(self, ctx, n, y, x):
        r = n.static[0]
        src = n.inputs[0]
        vals = [read_tap(ctx, n, src, y, x, dy, dx, border.REPLICATE, None)[0]
                for dy in range(-r, r + 1) for dx in range(-r, r + 1)]
        half = len(vals) // 2
        found = "0"
        for bit in range(7, -1, -1):        # (int() of a compare: no branches for the compiler)
            candidate = ctx.let(f"{found} + {1 << bit}", "m")
            below = ctx.let(" + ".join(f"int({v} < {candidate})" for v in vals), "k")
            found = ctx.let(f"{found} + {1 << bit} * int({below} <= {half})", "m")
        return [found]


@cuda_api("createMedianFilter")
def createMedianFilter(srcType, windowSize, partition=128):
    """createMedianFilter(srcType, windowSize[, partition]): 8UC1, windowSize >= 3 (a window of
    2 * (windowSize / 2) + 1); ``partition`` tunes OpenCV's kernel and changes nothing here."""
    func = "createMedianFilter"
    depth, cn = type_arg(func, srcType)
    check_type(func, depth, cn, ((cv2.CV_8U, 1),))
    window = int_arg(func, windowSize, "windowSize")
    if window < 3:
        raise cv_error(func, f"windowSize >= 3: got {window}", StsAssert)
    if int_arg(func, partition, "partition") < 1:
        raise cv_error(func, f"partition >= 1: got {partition}", StsAssert)
    r = window // 2

    def build(m):
        if r >= m._rows or r >= m._cols:
            raise cv_error(func, f"windowSize / 2 < src.rows and src.cols: windowSize {window} on a "
                                 f"{m._cols}x{m._rows} image", StsAssert)
        return node("median", [m._value(func)], (r,), (m._rows, m._cols), m._rows, m._cols, depth, cn)
    return Filter(func, make_type(depth, cn), build)


# ---------------------------------------------------------------------------------------------
# Bilateral filter (cudaimgproc)

_BILATERAL_TYPES = tuple((d, c) for d in (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32F) for c in (1, 3, 4))


class Bilateral(OpDef):
    """OpenCV CUDA's bilateral kernel: the taps of a disc of radius r, each weighted by
    exp(d2 * space + l1^2 * color) in float32, where l1 is the L1 distance of the tap's colour
    to the centre's; a NaN tap is skipped. static = (r, border mode); dyn = (rows, cols, space,
    color)."""
    name = "bilateral"
    pointwise = False

    def tap_count(self, n):
        return len(disc(n.static[0]))

    def emit(self, ctx, n, y, x):
        radius, mode = n.static
        src = n.inputs[0]
        fill = ["np.float32(0)"] * n.cn if mode == border.CONSTANT else None
        space, color = ctx.dyn(n, 2, "f32"), ctx.dyn(n, 3, "f32")
        centre = [ctx.let(f"np.float32({v})", "f") for v in ctx.read(src, y, x)]
        sums, wsum = [None] * n.cn, None
        for dy, dx in disc(radius):
            vals = [ctx.let(f"np.float32({v})", "f") for v in read_tap(ctx, n, src, y, x, dy, dx, mode, fill)]
            l1 = ctx.let(" + ".join(f"abs({v} - {c})" for v, c in zip(vals, centre)), "l")
            w = ctx.let(f"np.float32(math.exp(np.float32({dy * dy + dx * dx}) * {space} + {l1} * {l1} * {color}))",
                        "w")
            if is_float(src.depth):             # a NaN tap (its L1 is NaN) adds nothing
                w = ctx.let(f"({w} if {l1} == {l1} else np.float32(0))", "w")
                vals = [ctx.let(f"({v} if {l1} == {l1} else np.float32(0))", "f") for v in vals]
            wsum = w if wsum is None else ctx.let(f"{wsum} + {w}", "s")
            sums = [ctx.let(f"{w} * {v}" if s is None else f"{s} + {w} * {v}", "s") for s, v in zip(sums, vals)]
        return [saturate(ctx, f"{s} / {wsum}", n.depth) for s in sums]


def disc(radius):
    """Tap offsets within ``radius`` of the centre, in OpenCV CUDA's loop order."""
    return [(dy, dx) for dy in range(-radius, radius + 1) for dx in range(-radius, radius + 1)
            if dy * dy + dx * dx <= radius * radius]


@cuda_api("bilateralFilter")
def bilateralFilter(src, kernel_size, sigma_color, sigma_spatial, dst=None, borderMode=cv2.BORDER_DEFAULT,
                    stream=None):
    """bilateralFilter(src, kernel_size, sigma_color, sigma_spatial[, dst[, borderMode[, stream]]]):
    8U 16U 16S 32F with 1, 3 or 4 channels; a non-positive sigma is 1, kernel_size <= 0 takes the
    radius from sigma_spatial (1.5 sigma)."""
    func = "bilateralFilter"
    m = src_mat(func, src)
    check_type(func, m._depth, m._cn, _BILATERAL_TYPES)
    kernel_size = int_arg(func, kernel_size, "kernel_size")
    sigma_color = float(np.float32(float_arg(func, sigma_color, "sigma_color", 0.0)))
    sigma_spatial = float(np.float32(float_arg(func, sigma_spatial, "sigma_spatial", 0.0)))
    sigma_color = 1.0 if sigma_color <= 0 else sigma_color
    sigma_spatial = 1.0 if sigma_spatial <= 0 else sigma_spatial
    radius = int(np.rint(sigma_spatial * 1.5)) if kernel_size <= 0 else kernel_size // 2
    radius = max(radius, 1)
    mode = border.check_mode(func, borderMode)
    space = float(np.float32(-0.5) / (np.float32(sigma_spatial) * np.float32(sigma_spatial)))
    color = float(np.float32(-0.5) / (np.float32(sigma_color) * np.float32(sigma_color)))
    nd = node("bilateral", [m._value(func)], (radius, mode), (m._rows, m._cols, space, color),
              m._rows, m._cols, m._depth, m._cn)
    return result(func, nd, dst, stream)
