"""flip, transpose, copyMakeBorder, pyrDown and pyrUp: gathers at integer coordinates, fused.

flip and transpose move pixels (one tap each: they fuse anywhere). copyMakeBorder reads
``border.index`` of the shifted coordinate, or its value off the image (BORDER_CONSTANT).
pyrDown and pyrUp are CPU OpenCV's 5x5 Gaussian ``[1 4 6 4 1] / 16`` both ways: pyrDown
smooths with BORDER_REFLECT_101 and keeps every second pixel (``((cols + 1) / 2, (rows + 1) /
2)``); pyrUp doubles the size, each output a 3x3 sum of the source (weights ``1 6 1`` at even
positions, ``4 4`` at odd ones, over 64), whose border is REFLECT_101 on the doubled grid
(``borderInterpolate(2 * i, 2 * n) / 2``: reflect at the top and left, replicate at the bottom
and right, as OpenCV's pyrUp). Integers sum exactly and round (``(s + 128) >> 8``, ``(s + 32) >>
6``); floats sum rows then columns in float32 and scale.
"""
import cv2

from .._types import is_float
from ..errors import StsBadSize, cv_error
from .. import runtime
from . import border
from .base import OpDef, saturate
from .common import check_channels, check_depth, cuda_api, int_arg, node, result, scalar4, src_mat
from .core import fill_values

PYR_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32F)
BORDER_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32S, cv2.CV_32F)


class Flip(OpDef):
    """static = (rows flipped, columns flipped); dyn = (rows, cols)."""
    name = "flip"
    pointwise = False

    def emit(self, ctx, n, y, x):
        flip_rows, flip_cols = n.static
        yy = ctx.let(f"{ctx.dyn(n, 0, 'i')} - 1 - {y}", "y") if flip_rows else y
        xx = ctx.let(f"{ctx.dyn(n, 1, 'i')} - 1 - {x}", "x") if flip_cols else x
        return list(ctx.read(n.inputs[0], yy, xx))


class Transpose(OpDef):
    """Output (y, x) is input (x, y)."""
    name = "transpose"
    pointwise = False

    def emit(self, ctx, n, y, x):
        return list(ctx.read(n.inputs[0], x, y))


class MakeBorder(OpDef):
    """static = (borderType,); dyn = (top, left, src_rows, src_cols, value x4)."""
    name = "make_border"
    pointwise = False

    def emit(self, ctx, n, y, x):
        (mode,) = n.static
        top, left, rows, cols = (ctx.dyn(n, k, "i") for k in range(4))
        yy, xx = ctx.let(f"{y} - {top}", "y"), ctx.let(f"{x} - {left}", "x")
        v = ctx.read(n.inputs[0], border.index(ctx, yy, rows, mode), border.index(ctx, xx, cols, mode))
        if mode != border.CONSTANT:
            return list(v)
        kind = "f32" if is_float(n.depth) else "i"
        ok = border.inside(ctx, yy, xx, rows, cols)
        return [f"{c} if {ok} else {ctx.dyn(n, 4 + k, kind)}" for k, c in enumerate(v)]


def _weighted(terms, ft):
    """sum(w * v) as source text (weights are small integers; 1 is left out)."""
    return " + ".join((f"{ft}({v})" if w == 1 else f"{ft}({v}) * {ft}({w})") if ft else
                      (v if w == 1 else f"{v} * {w}") for w, v in terms)


class PyrDown(OpDef):
    """dyn = (src_rows, src_cols)."""
    name = "pyr_down"
    pointwise = False
    taps = 25

    def emit(self, ctx, n, y, x):
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        k = (1, 4, 6, 4, 1)
        ys = [border.index(ctx, f"2 * {y} + {d}", rows, border.REFLECT_101) for d in range(-2, 3)]
        xs = [border.index(ctx, f"2 * {x} + {d}", cols, border.REFLECT_101) for d in range(-2, 3)]
        return _pyramid(ctx, n, [[ctx.read(n.inputs[0], yy, xx) for xx in xs] for yy in ys], k, k, 256)


class PyrUp(OpDef):
    """dyn = (src_rows, src_cols). Output (y, x) reads the 3x3 source pixels around (y/2, x/2)."""
    name = "pyr_up"
    pointwise = False
    taps = 9

    def emit(self, ctx, n, y, x):
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")

        def axis(d, size):
            s = ctx.let(f"({d}) >> 1", "p")
            odd = ctx.let(f"({d}) & 1", "p")
            idx = [ctx.let(f"{border.index(ctx, f'2 * ({s} + {o})', f'2 * {size}', border.REFLECT_101)} >> 1", "p")
                   for o in (-1, 0, 1)]
            weights = [ctx.let(f"np.int32(1 - {odd})", "p"), ctx.let(f"np.int32(6 - 2 * {odd})", "p"),
                       ctx.let(f"np.int32(1 + 3 * {odd})", "p")]
            return idx, weights
        ys, wy = axis(y, rows)
        xs, wx = axis(x, cols)
        return _pyramid(ctx, n, [[ctx.read(n.inputs[0], yy, xx) for xx in xs] for yy in ys], wx, wy, 64)


def _pyramid(ctx, n, taps, wx, wy, total):
    """The separable weighted sum of ``taps`` (rows of columns of channel lists) with weights
    ``wx`` along a row and ``wy`` down the rows, over ``total``."""
    ft = "np.float32" if is_float(n.depth) else None
    out = []
    for c in range(n.cn):
        row_sums = [ctx.let(_weighted([(w, t[c]) for w, t in zip(wx, row)], ft), "r") for row in taps]
        s = ctx.let(_weighted(list(zip(wy, row_sums)), ft), "s")
        if ft:
            out.append(f"{ft}({s} * {ft}({1 / total}))")
        else:
            out.append(saturate(ctx, f"({s} + {total // 2}) >> {total.bit_length() - 1}", n.depth, src_is_float=False))
    return out


def _check_fits(func, rows, cols, m):
    if rows * cols * m._cn > runtime.SURELY_FITS:
        runtime.check_fits(func, rows, cols, m._depth, m._cn)


@cuda_api("flip")
def flip(src, flipCode, dst=None, stream=None):
    """cv2.cuda.flip(src, flipCode[, dst[, stream]]): 0 flips rows (around the x-axis), > 0
    columns, < 0 both."""
    func = "flip"
    m = src_mat(func, src)
    code = int_arg(func, flipCode, "flipCode")
    nd = node("flip", [m._value(func)], (code <= 0, code != 0), (m._rows, m._cols), m._rows, m._cols, m._depth, m._cn)
    return result(func, nd, dst, stream)


@cuda_api("transpose")
def transpose(src1, dst=None, stream=None):
    """cv2.cuda.transpose(src1[, dst[, stream]])."""
    func = "transpose"
    m = src_mat(func, src1, "src1")
    nd = node("transpose", [m._value(func, "src1")], (), (), m._cols, m._rows, m._depth, m._cn)
    return result(func, nd, dst, stream)


@cuda_api("copyMakeBorder")
def copyMakeBorder(src, top, bottom, left, right, borderType, dst=None, value=None, stream=None):
    """cv2.cuda.copyMakeBorder(src, top, bottom, left, right, borderType[, dst[, value[, stream]]])."""
    func = "copyMakeBorder"
    m = src_mat(func, src)
    check_depth(func, m, BORDER_DEPTHS)
    check_channels(func, m, (1, 2, 3, 4))
    sides = [int_arg(func, v, name) for v, name in ((top, "top"), (bottom, "bottom"), (left, "left"),
                                                     (right, "right"))]
    if min(sides) < 0:
        raise cv_error(func, f"border widths must not be negative, got {tuple(sides)}", StsBadSize)
    mode = border.check_mode(func, int_arg(func, borderType, "borderType"), name="borderType")
    t, b, l, r = sides
    rows, cols = m._rows + t + b, m._cols + l + r
    _check_fits(func, rows, cols, m)
    fill = fill_values(m._depth, scalar4(func, 0 if value is None else value, "value"))
    nd = node("make_border", [m._value(func)], (mode,), (t, l, m._rows, m._cols) + fill, rows, cols, m._depth, m._cn)
    return result(func, nd, dst, stream)


def _pyr_src(func, src):
    m = src_mat(func, src)
    check_depth(func, m, PYR_DEPTHS)
    check_channels(func, m, (1, 3, 4))
    return m


@cuda_api("pyrDown")
def pyrDown(src, dst=None, stream=None):
    """cv2.cuda.pyrDown(src[, dst[, stream]]): ((cols + 1) / 2, (rows + 1) / 2)."""
    func = "pyrDown"
    m = _pyr_src(func, src)
    nd = node("pyr_down", [m._value(func)], (), (m._rows, m._cols), (m._rows + 1) // 2, (m._cols + 1) // 2,
              m._depth, m._cn)
    return result(func, nd, dst, stream)


@cuda_api("pyrUp")
def pyrUp(src, dst=None, stream=None):
    """cv2.cuda.pyrUp(src[, dst[, stream]]): (cols * 2, rows * 2)."""
    func = "pyrUp"
    m = _pyr_src(func, src)
    _check_fits(func, m._rows * 2, m._cols * 2, m)
    nd = node("pyr_up", [m._value(func)], (), (m._rows, m._cols), m._rows * 2, m._cols * 2, m._depth, m._cn)
    return result(func, nd, dst, stream)


def reference_flip(src, code):
    return cv2.flip(src, code)
