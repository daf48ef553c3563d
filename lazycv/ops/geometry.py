"""resize: NEAREST and LINEAR fused (every depth), and 8U by exactly 2 both ways (LINEAR or AREA:
CPU OpenCV's area fast path, ``ResizeHalf``); AREA otherwise, CUBIC, LANCZOS4 and the *_EXACT
modes fall back to CPU OpenCV until they are fused.

Mapping: by default CPU cv2.resize's (pixel centres, ``src = (dst + 0.5) * scale - 0.5``);
``lazycv.enable(resize_mapping="opencv-cuda")`` gives OpenCV's CUDA module's ``src = dst *
scale`` for LINEAR. NEAREST is ``floor(dst * scale)`` in both.
"""
import cv2

from .._types import DEPTH_NAME, is_float
from ..errors import StsBadArg, StsBadSize, StsOutOfRange, StsUnsupportedFormat, cv_error
from .. import runtime
from ..runtime import STATE
from .base import OpDef, saturate
from .common import cuda_api, float_arg, int_arg, node, result, size_arg, src_mat
from .fallback import cpu_fallback

FUSED = (cv2.INTER_NEAREST, cv2.INTER_LINEAR)
_NEAREST_ONLY = (cv2.CV_8S, cv2.CV_32S)
_NO_8S_32S = (cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA, cv2.INTER_LANCZOS4)
FALLBACK = tuple(getattr(cv2, n) for n in ("INTER_AREA", "INTER_CUBIC", "INTER_LANCZOS4",
                                            "INTER_LINEAR_EXACT", "INTER_NEAREST_EXACT") if hasattr(cv2, n))
COEF_BITS = 11                       # OpenCV's INTER_RESIZE_COEF_BITS for 8U linear
INT_MAX = 2 ** 31 - 1


class Resize(OpDef):
    """static = (interpolation, mapping); dyn = (src_rows, src_cols, scale_x, scale_y)."""
    name = "resize"
    pointwise = False

    def tap_count(self, n):
        return 1 if n.static[0] == cv2.INTER_NEAREST else 4

    def emit(self, ctx, n, y, x):
        interp, mapping = n.static
        src = n.inputs[0]
        sh, sw = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        sx, sy = ctx.dyn(n, 2, "f64"), ctx.dyn(n, 3, "f64")
        if interp == cv2.INTER_NEAREST:
            iy = ctx.let(f"min({ctx.spell('floor_i32', f'{y} * {sy}')}, {sh} - 1)", "y")
            ix = ctx.let(f"min({ctx.spell('floor_i32', f'{x} * {sx}')}, {sw} - 1)", "x")
            return list(ctx.read(src, iy, ix))
        y0, y1, fy = self._axis(ctx, y, sy, sh, mapping, rows=True)
        x0, x1, fx = self._axis(ctx, x, sx, sw, mapping)
        p00, p01 = ctx.read(src, y0, x0), ctx.read(src, y0, x1)
        p10, p11 = ctx.read(src, y1, x0), ctx.read(src, y1, x1)
        if n.depth == cv2.CV_8U and mapping == "cpu":
            return self._fixed_point(ctx, p00, p01, p10, p11, fx, fy)
        ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
        one = f"{ft}(1)"
        wx0, wy0 = ctx.let(f"{one} - {fx}"), ctx.let(f"{one} - {fy}")
        out = []
        for c in range(n.cn):
            top = f"({ft}({p00[c]}) * {wx0} + {ft}({p01[c]}) * {fx})"
            bot = f"({ft}({p10[c]}) * {wx0} + {ft}({p11[c]}) * {fx})"
            if is_float(n.depth):
                # a neighbour of weight 0 stays out of the sum (inf * 0 would make it NaN): a
                # resize to the same size is a copy, as OpenCV's
                top = ctx.let(f"{ft}({p00[c]}) if {fx} == 0 else {top}", "h")
                bot = ctx.let(f"{ft}({p10[c]}) if {fx} == 0 else {bot}", "h")
                out.append(f"{top} if {fy} == 0 else {top} * {wy0} + {bot} * {fy}")
            else:
                out.append(saturate(ctx, f"{top} * {wy0} + {bot} * {fy}", n.depth))
        return out

    @staticmethod
    def _axis(ctx, d, scale, size, mapping, rows=False):
        """(i0, i1, frac) along one axis, clamped at the borders as cv::resize does: a column
        past the border takes the edge pixel alone (its weight set to 0, as OpenCV's column
        table does); a row past it keeps both weights and reads the edge row twice (OpenCV's
        row table keeps 1 - fy, fy and clamps only the row index; the 8U vertical pass rounds
        each term apart, so the two forms can differ by 1)."""
        if mapping == "cpu":
            f = ctx.let(f"np.float32(({d} + 0.5) * {scale} - 0.5)", "f")
        else:
            f = ctx.let(f"np.float32({d} * {scale})", "f")
        # int32 throughout (the size is an int64 table entry; Numba widens mixed arithmetic and
        # a 64-bit min/max is four instructions on a GPU)
        last = ctx.let(f"np.int32({size} - 1)", "i")
        i = ctx.let(ctx.spell("floor_i32", f), "i")
        i0 = ctx.let(f"min(max({i}, np.int32(0)), {last})", "i")
        if rows and mapping == "cpu":
            frac = ctx.let(f"{f} - np.float32({i})", "f")
            i1 = ctx.let(f"min(max(np.int32({i} + 1), np.int32(0)), {last})", "i")
            return i0, i1, frac
        frac = ctx.let(f"np.float32(0) if ({i} < np.int32(0) or {i} >= {last}) else {f} - np.float32({i})", "f")
        i1 = ctx.let(f"min(np.int32({i0} + 1), {last})", "i")
        return i0, i1, frac

    @staticmethod
    def _fixed_point(ctx, p00, p01, p10, p11, fx, fy):
        """OpenCV's 8U path: 11-bit weights, integer horizontal pass, then the vertical pass its
        SIMD code uses ((r >> 4) * w >> 16, summed, + 2 >> 2): bit-exact for downscaling.

        Every step fits in 32 bits (255 * 4096 before the shift, 65535 * 2048 after), so each is
        cast to int32: Numba widens integer arithmetic to 64 bits, which costs two instructions
        per operation on a GPU; the casts let the compiler narrow it back. The weights round
        half to even through the target's cheapest spelling (``Backend.spellings``)."""
        scale = f"np.float32({1 << COEF_BITS})"
        ax0 = ctx.let(ctx.spell("rint_f32_i32", f"(np.float32(1) - {fx}) * {scale}"), "w")
        ax1 = ctx.let(ctx.spell("rint_f32_i32", f"{fx} * {scale}"), "w")
        by0 = ctx.let(ctx.spell("rint_f32_i32", f"(np.float32(1) - {fy}) * {scale}"), "w")
        by1 = ctx.let(ctx.spell("rint_f32_i32", f"{fy} * {scale}"), "w")
        out = []
        for c in range(len(p00)):
            r0 = ctx.let(f"np.int32({p00[c]} * {ax0} + {p01[c]} * {ax1})")
            r1 = ctx.let(f"np.int32({p10[c]} * {ax0} + {p11[c]} * {ax1})")
            a0 = ctx.let(f"np.int32(np.int32({r0} >> 4) * {by0})")
            a1 = ctx.let(f"np.int32(np.int32({r1} >> 4) * {by1})")
            out.append(f"min(max(np.int32(np.int32(np.int32({a0} >> 16) + np.int32({a1} >> 16) + 2) >> 2), "
                       "np.int32(0)), np.int32(255))")
        return out


class ResizeHalf(OpDef):
    """8U halving both ways, as CPU OpenCV's INTER_AREA fast path computes it (which its
    INTER_LINEAR takes too when the scale is exactly 2): a full 2x2 block is ``(sum + 2) >> 2``;
    at the bottom and right of an odd size the pixels that exist are averaged in float32 and
    rounded. dyn = (src_rows, src_cols)."""
    name = "resize_half"
    pointwise = False
    taps = 4

    def emit(self, ctx, n, y, x):
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        has_y = ctx.let(f"2 * {y} + 1 < {rows}", "h")
        has_x = ctx.let(f"2 * {x} + 1 < {cols}", "h")
        y0, x0 = ctx.let(f"2 * {y}", "y"), ctx.let(f"2 * {x}", "x")
        y1 = ctx.let(f"min(2 * {y} + 1, {rows} - 1)", "y")
        x1 = ctx.let(f"min(2 * {x} + 1, {cols} - 1)", "x")
        p00, p01 = ctx.read(n.inputs[0], y0, x0), ctx.read(n.inputs[0], y0, x1)
        p10, p11 = ctx.read(n.inputs[0], y1, x0), ctx.read(n.inputs[0], y1, x1)
        count = ctx.let(f"np.float32(1 + int({has_x}) + int({has_y}) + int({has_x} and {has_y}))", "h")
        out = []
        for c in range(n.cn):
            s = ctx.let(f"{p00[c]} + ({p01[c]} if {has_x} else 0) + ({p10[c]} if {has_y} else 0) + "
                        f"({p11[c]} if ({has_x} and {has_y}) else 0)", "h")
            part = ctx.spell("rint_f32_i32", f"np.float32({s}) / {count}")
            out.append(f"(({s} + 2) >> 2) if ({has_x} and {has_y}) else {part}")
        return out


def _is_halving(scale_x, scale_y):
    """cv::resize's test for its area fast path at scale 2 (|scale - 2| < DBL_EPSILON)."""
    return abs(scale_x - 2) < 2.220446049250313e-16 and abs(scale_y - 2) < 2.220446049250313e-16


def output_size(func, src_w, src_h, dsize, fx, fy):
    """(dst_w, dst_h, scale_x, scale_y) by cv::resize's rules."""
    if dsize is not None:
        dw, dh = size_arg(func, dsize)
    else:
        dw = dh = 0
    if dw < 0 or dh < 0:
        raise cv_error(func, f"dsize must not be negative, got {(dw, dh)}", StsBadSize)
    if dw > INT_MAX or dh > INT_MAX:
        # OpenCV's binding parses a Size as two C ints
        raise cv_error(func, f"can't parse 'dsize': {(dw, dh)} does not fit int", StsBadArg)
    if dw == 0 and dh == 0:
        fx, fy = float(fx or 0), float(fy or 0)
        if not (fx > 0 and fy > 0):
            raise cv_error(func, "dsize is (0, 0) and fx, fy are not both positive "
                                 f"(!dsize.empty() || (inv_scale_x > 0 && inv_scale_y > 0)); got fx={fx}, fy={fy}",
                           StsOutOfRange)
        dw, dh = int(round(src_w * fx)), int(round(src_h * fy))
        if dw > INT_MAX or dh > INT_MAX:
            raise cv_error(func, f"fx={fx}, fy={fy} give a {dw}x{dh} output, past int", StsBadSize)
        if dw <= 0 or dh <= 0:
            raise cv_error(func, f"fx={fx}, fy={fy} give an empty {dw}x{dh} output", StsBadSize)
        return dw, dh, 1.0 / fx, 1.0 / fy
    if dw == 0 or dh == 0:
        raise cv_error(func, f"dsize has a zero side: {(dw, dh)}", StsBadSize)
    return dw, dh, 1.0 / (dw / src_w), 1.0 / (dh / src_h)


_PLAIN = (int, float)


@cuda_api("resize")
def resize(src, dsize, dst=None, fx=0, fy=0, interpolation=cv2.INTER_LINEAR, stream=None):
    """cv2.cuda.resize(src, dsize[, dst[, fx[, fy[, interpolation[, stream]]]]])."""
    func = "resize"
    m = src_mat(func, src)
    if type(fx) not in _PLAIN or type(fy) not in _PLAIN:      # (the common case skips the parse)
        fx, fy = float_arg(func, fx, "fx", 0.0), float_arg(func, fy, "fy", 0.0)
    dw, dh, scale_x, scale_y = output_size(func, m._cols, m._rows, dsize, fx, fy)
    if dw * dh * m._cn > runtime.SURELY_FITS:                 # (recording is the hot path)
        runtime.check_fits(func, dh, dw, m._depth, m._cn)
    interpolation = cv2.INTER_LINEAR if interpolation is None else int_arg(func, interpolation, "interpolation")
    if (dw, dh) == (m._cols, m._rows) and (interpolation in FUSED or interpolation in FALLBACK):
        # OpenCV (CPU and CUDA) copies when the size does not change, whatever the mode and
        # depth: also when fx, fy round back to the source's size (they would otherwise
        # resample by 1/fx). A fused mode samples at scale 1, which is that copy, and stays the
        # same kernel (no recompile when a size happens to match); others copy.
        if interpolation in FUSED and not (m._depth in _NEAREST_ONLY and interpolation in _NO_8S_32S):
            scale_x = scale_y = 1.0
        else:
            nd = node("crop", [m._value(func)], (), (0, 0), dh, dw, m._depth, m._cn)
            return result(func, nd, dst, stream)
    if m._depth in _NEAREST_ONLY and interpolation in _NO_8S_32S:
        # OpenCV (CPU and CUDA) resizes 8S and 32S only by nearest neighbour (and CPU by
        # LINEAR_EXACT, which the fallback runs)
        raise cv_error(func, f"unsupported depth of src for interpolation {interpolation}: expected "
                             f"8U/16U/16S/32F/64F (8S and 32S only with INTER_NEAREST or "
                             f"INTER_LINEAR_EXACT), got {DEPTH_NAME[m._depth]}", StsUnsupportedFormat)
    if m._depth == cv2.CV_8U and _is_halving(scale_x, scale_y) and (
            interpolation == cv2.INTER_AREA or
            (interpolation == cv2.INTER_LINEAR and STATE.resize_mapping != "opencv-cuda")):
        nd = node("resize_half", [m._value(func)], (), (m._rows, m._cols), dh, dw, m._depth, m._cn)
        return result(func, nd, dst, stream)
    if interpolation in FUSED:
        mapping = "cuda" if (STATE.resize_mapping == "opencv-cuda" and interpolation == cv2.INTER_LINEAR) \
            else "cpu"
        nd = node("resize", [m._value(func)], (interpolation, mapping),
                  (m._rows, m._cols, scale_x, scale_y), dh, dw, m._depth, m._cn)
        return result(func, nd, dst, stream)
    if interpolation in FALLBACK:
        # OpenCV's own arguments: with dsize (0, 0) its scale is 1/fx, not the rounded size's
        by_scale = dsize is None or (int(dsize[0]), int(dsize[1])) == (0, 0)
        return cpu_fallback(func, lambda a: cv2.resize(a, (0, 0), fx=fx, fy=fy, interpolation=interpolation)
                            if by_scale else cv2.resize(a, (dw, dh), interpolation=interpolation),
                            [m], dst, stream, why=f"interpolation {interpolation} is not fused yet")
    raise cv_error(func, f"unknown interpolation {interpolation}: expected one of cv2.INTER_NEAREST, "
                         "INTER_LINEAR, INTER_CUBIC, INTER_AREA, INTER_LANCZOS4", StsBadArg)


def reference(src, dsize, fx=0, fy=0, interpolation=cv2.INTER_LINEAR):
    return cv2.resize(src, dsize, fx=fx, fy=fy, interpolation=interpolation)
