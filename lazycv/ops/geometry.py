"""resize: NEAREST, LINEAR, CUBIC and AREA fused (every depth OpenCV resizes with them);
LANCZOS4 and the *_EXACT modes fall back to CPU OpenCV.

Mapping: by default CPU cv2.resize's (pixel centres, ``src = (dst + 0.5) * scale - 0.5``);
``lazycv.enable(resize_mapping="opencv-cuda")`` gives OpenCV's CUDA module's ``src = dst *
scale`` for LINEAR. NEAREST is ``floor(dst * scale)`` in both.

What CPU OpenCV computes for the other modes (checked against cv2 over depths and sizes):

* CUBIC: 4x4 taps weighted by ``interpolateCubic`` (A = -0.75) of the float32 fraction, taps
  past the border clamped to the edge; a row of 4 taps summed first, then the 4 rows. The x86
  build hands 8U/16U/16S/32F to IPP, which sums in float32 (8U included, not in OpenCV's 11-bit
  fixed point): the float32 sums here agree with it within 1 (integers) and 2e-5 (32F); 64F is
  OpenCV's own code, exactly.
* AREA, shrinking both ways by whole factors: the mean of each block (``resizeAreaFast``;
  ``(sum + 2) >> 2`` for integer 2x2 blocks of 1, 3 or 4 channels); at the bottom and right of
  a size that is no multiple, the pixels that exist are averaged.
* AREA, shrinking by other factors: each output pixel the area-weighted sum of the source
  cells it covers (``computeResizeAreaTab``); a cell spans at most ceil(scale) + 1 source
  pixels, which is the kernel's fixed tap count per axis (weights of 0 past the cell), so a new
  scale below the same ceiling does not recompile.
* AREA, enlarging either way: LINEAR with OpenCV's area coefficients (``fx = (dx + 1) - (sx +
  1) / scale``, 0 where that is not positive, otherwise its fraction).
"""
import math

import cv2
import numpy as np

from .._types import DEPTH_NAME, is_float
from ..errors import StsBadArg, StsBadSize, StsOutOfRange, StsUnsupportedFormat, cv_error
from .. import runtime
from ..runtime import STATE
from .base import OpDef, saturate
from .common import cuda_api, float_arg, int_arg, node, result, size_arg, src_mat
from .fallback import cpu_fallback
from .warp import cubic_weights

FUSED = (cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA)
_NEAREST_ONLY = (cv2.CV_8S, cv2.CV_32S)
_NO_8S_32S = (cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA, cv2.INTER_LANCZOS4)
FALLBACK = tuple(getattr(cv2, n) for n in ("INTER_LANCZOS4", "INTER_LINEAR_EXACT", "INTER_NEAREST_EXACT")
                 if hasattr(cv2, n))
_SAMPLE_AT_SCALE_1 = (cv2.INTER_NEAREST, cv2.INTER_LINEAR)
COEF_BITS = 11                       # OpenCV's INTER_RESIZE_COEF_BITS for 8U linear
DBL_EPSILON = 2.220446049250313e-16
MAX_AREA_TAPS = 400                  # source pixels an AREA output pixel may read, fused (20 x 20)
INT_MAX = 2 ** 31 - 1


class Resize(OpDef):
    """static = (interpolation, mapping); dyn = (src_rows, src_cols, scale_x, scale_y), and for
    AREA (which comes here only when it enlarges) OpenCV's inverse scales after them."""
    name = "resize"
    pointwise = False
    size_in_dyn = (0,)

    def tap_count(self, n):
        return {cv2.INTER_NEAREST: 1, cv2.INTER_CUBIC: 16}.get(n.static[0], 4)

    def emit(self, ctx, n, y, x):
        interp, mapping = n.static
        src = n.inputs[0]
        sh, sw = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        sx, sy = ctx.dyn(n, 2, "f64"), ctx.dyn(n, 3, "f64")
        if interp == cv2.INTER_NEAREST:
            iy = ctx.let(f"min({ctx.spell('floor_i32', f'{y} * {sy}')}, {sh} - 1)", "y")
            ix = ctx.let(f"min({ctx.spell('floor_i32', f'{x} * {sx}')}, {sw} - 1)", "x")
            return list(ctx.read(src, iy, ix))
        if interp == cv2.INTER_CUBIC:
            return self._cubic(ctx, n, src, self._cubic_axis(ctx, y, sy, sh), self._cubic_axis(ctx, x, sx, sw))
        if interp == cv2.INTER_AREA:
            y0, y1, fy = self._area_axis(ctx, y, sy, ctx.dyn(n, 5, "f64"), sh, rows=True)
            x0, x1, fx = self._area_axis(ctx, x, sx, ctx.dyn(n, 4, "f64"), sw)
        else:
            y0, y1, fy = self._axis(ctx, y, sy, sh, mapping, rows=True)
            x0, x1, fx = self._axis(ctx, x, sx, sw, mapping)
        p00, p01 = ctx.read(src, y0, x0), ctx.read(src, y0, x1)
        p10, p11 = ctx.read(src, y1, x0), ctx.read(src, y1, x1)
        if n.depth == cv2.CV_8U and mapping == "cpu":
            return self._fixed_point(ctx, p00, p01, p10, p11, fx, fy)
        ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
        # OpenCV's weights are float32 (1.f - fx), also when it sums in double
        wx0, wy0 = ctx.let(f"{ft}(np.float32(1) - {fx})"), ctx.let(f"{ft}(np.float32(1) - {fy})")
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
    def _area_axis(ctx, d, scale, inv_scale, size, rows=False):
        """(i0, i1, frac) of AREA enlarging, by OpenCV's area coefficients: ``s = floor(d *
        scale)``, ``f = (d + 1) - (s + 1) * inv_scale`` as float32, 0 where not positive,
        otherwise its fraction. Past the last column the edge pixel alone (weight 0); rows keep
        their weights and read the edge row twice, as in ``_axis``."""
        s = ctx.let(ctx.spell("floor_i32", f"{d} * {scale}"), "i")
        last = ctx.let(f"np.int32({size} - 1)", "i")
        raw = ctx.let(f"np.float32(({d} + 1) - ({s} + 1) * {inv_scale})", "f")
        frac = ctx.let(f"np.float32(0) if {raw} <= np.float32(0) else "
                       f"{raw} - np.float32({ctx.spell('floor_i32', raw)})", "f")
        i0 = ctx.let(f"min({s}, {last})", "i")
        i1 = ctx.let(f"min(np.int32({s} + 1), {last})", "i")
        if not rows:
            frac = ctx.let(f"np.float32(0) if {s} >= {last} else {frac}", "f")
        return i0, i1, frac

    @staticmethod
    def _cubic_axis(ctx, d, scale, size):
        """([4 source indices, clamped to the image], [4 weights]) along one axis."""
        f = ctx.let(f"np.float32(({d} + 0.5) * {scale} - 0.5)", "f")
        i = ctx.let(ctx.spell("floor_i32", f), "i")
        last = ctx.let(f"np.int32({size} - 1)", "i")
        idx = [ctx.let(f"min(max(np.int32({i} + {k}), np.int32(0)), {last})", "i") for k in (-1, 0, 1, 2)]
        return idx, cubic_weights(ctx, ctx.let(f"{f} - np.float32({i})", "f"))

    @staticmethod
    def _cubic(ctx, n, src, rows, cols):
        """4 taps of a row summed in order, then the 4 rows: float32 (float64 for 64F, whose
        weights stay float32 as OpenCV's), rounded and saturated once at the end."""
        (iy, wy), (ix, wx) = rows, cols
        ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
        if ft == "np.float64":
            wy = [ctx.let(f"np.float64({w})", "w") for w in wy]
            wx = [ctx.let(f"np.float64({w})", "w") for w in wx]
        taps = [[ctx.read(src, yy, xx) for xx in ix] for yy in iy]
        out = []
        for c in range(n.cn):
            sums = [ctx.let(" + ".join(f"{ft}({row[k][c]}) * {wx[k]}" for k in range(4)), "h") for row in taps]
            out.append(saturate(ctx, " + ".join(f"{sums[j]} * {wy[j]}" for j in range(4)), n.depth))
        return out

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
    size_in_dyn = (0,)
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


class ResizeArea(OpDef):
    """AREA shrinking both ways. static = ("blocks", kx, ky): whole factors, dyn = (src_rows,
    src_cols); static = ("cells", kx, ky): other factors, at most kx x ky source pixels a cell,
    dyn = (src_rows, src_cols, scale_x, scale_y)."""
    name = "resize_area"
    pointwise = False
    size_in_dyn = (0,)

    def tap_count(self, n):
        return n.static[1] * n.static[2]

    def emit(self, ctx, n, y, x):
        kind, kx, ky = n.static
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        if kind == "blocks":
            return self._blocks(ctx, n, y, x, kx, ky, rows, cols)
        ys, wy, vy = self._cell_axis(ctx, y, ctx.dyn(n, 3, "f64"), rows, ky)
        xs, wx, vx = self._cell_axis(ctx, x, ctx.dyn(n, 2, "f64"), cols, kx)
        ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
        if ft == "np.float64":
            wy = [ctx.let(f"np.float64({w})", "w") for w in wy]
            wx = [ctx.let(f"np.float64({w})", "w") for w in wx]
        taps = [[ctx.read(n.inputs[0], yy, xx) for xx in xs] for yy in ys]
        out = []
        for c in range(n.cn):
            # computeResizeAreaTab's entries in order: the row's weighted sum, then the rows'
            acc = None
            for j in range(ky):
                row = None
                for k in range(kx):
                    term = f"{ft}({taps[j][k][c]}) * {wx[k]}"
                    row = ctx.let(term if row is None else f"({row} + {term}) if {vx[k]} else {row}", "a")
                term = f"{wy[j]} * {row}"
                acc = ctx.let(term if acc is None else f"({acc} + {term}) if {vy[j]} else {acc}", "a")
            out.append(saturate(ctx, acc, n.depth))
        return out

    @staticmethod
    def _cell_axis(ctx, d, scale, size, taps):
        """(indices, float32 weights, taken) of the ``taps`` source pixels the cell of output
        ``d`` may cover, by computeResizeAreaTab: a partial first pixel, whole ones, a partial
        last one (partial ones under 1e-3 left out); pixels past the cell weigh 0, not taken."""
        fs1 = ctx.let(f"{d} * {scale}", "c")
        fs2 = ctx.let(f"{fs1} + {scale}", "c")
        width = ctx.let(f"min({scale}, {size} - {fs1})", "c")
        last = ctx.let(f"np.int32({size} - 1)", "i")
        s2 = ctx.let(f"min({ctx.spell('floor_i32', fs2)}, {last})", "i")
        s1 = ctx.let(f"min(np.int32(-{ctx.spell('floor_i32', f'-{fs1}')}), {s2})", "i")
        head = ctx.let(f"{s1} - {fs1} > 1e-3", "c")
        tail = ctx.let(f"{fs2} - {s2} > 1e-3", "c")
        start = ctx.let(f"np.int32({s1} - 1) if {head} else {s1}", "i")
        w_head = ctx.let(f"np.float32(({s1} - {fs1}) / {width})", "w")
        w_whole = ctx.let(f"np.float32(1.0 / {width})", "w")
        w_tail = ctx.let(f"np.float32(min(min({fs2} - {s2}, 1.0), {width}) / {width})", "w")
        idx, weights, taken = [], [], []
        for k in range(taps):
            i = ctx.let(f"np.int32({start} + {k})", "i")
            idx.append(ctx.let(f"min({i}, {last})", "i"))
            rest = f"({w_whole} if {i} < {s2} else ({w_tail} if ({tail} and {i} == {s2}) else np.float32(0)))"
            weights.append(ctx.let(f"{w_head} if {head} else {rest}" if k == 0 else rest, "w"))
            taken.append(ctx.let(f"{i} < {s2} or ({tail} and {i} == {s2})" + (f" or {head}" if k == 0 else ""), "c"))
        return idx, weights, taken

    @staticmethod
    def _blocks(ctx, n, y, x, kx, ky, rows, cols):
        """resizeAreaFast: a whole block's sum times 1/area (integer 2x2 blocks of 1, 3 or 4
        channels: ``(sum + 2) >> 2``); a partial block at the bottom or right, its float32 sum
        over the pixels that exist. Integer sums are exact in int32; float ones in OpenCV's
        order (4 taps grouped, as its unrolled loop, for whole blocks; one by one for partial)."""
        y0, x0 = ctx.let(f"np.int32({y} * {ky})", "y"), ctx.let(f"np.int32({x} * {kx})", "x")
        whole = ctx.let(f"{y0} + {ky} <= {rows} and {x} < {cols} // {kx}", "b")
        count = ctx.let(f"np.float32((min({y0} + {ky}, {rows}) - {y0}) * (min({x0} + {kx}, {cols}) - {x0}))", "b")
        ys = [ctx.let(f"min(np.int32({y0} + {j}), np.int32({rows} - 1))", "y") for j in range(ky)]
        xs = [ctx.let(f"min(np.int32({x0} + {i}), np.int32({cols} - 1))", "x") for i in range(kx)]
        inside = [ctx.let(f"{y0} + {j} < {rows} and {x0} + {i} < {cols}", "b") for j in range(ky) for i in range(kx)]
        taps = [ctx.read(n.inputs[0], yy, xx) for yy in ys for xx in xs]
        area = kx * ky
        scale = f"np.float32({float(np.float32(1) / np.float32(area))!r})"
        out = []
        for c in range(n.cn):
            if not is_float(n.depth):
                total = ctx.let("np.int32(" + " + ".join(f"({t[c]} if {v} else 0)" for t, v in zip(taps, inside)) + ")", "b")
                part = saturate(ctx, f"np.float32({total}) / {count}", n.depth)
                if (kx, ky) == (2, 2) and n.cn != 2:
                    out.append(f"np.int32({total} + 2) >> 2 if {whole} else {part}")
                else:
                    out.append(f"{saturate(ctx, f'np.float32({total}) * {scale}', n.depth)} if {whole} else {part}")
                continue
            ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
            # OpenCV's loop adds 4 taps at a time, then the rest one by one
            whole_sum = None
            for g in range(0, area - area % 4, 4):
                group = " + ".join(taps[k][c] for k in range(g, g + 4))
                whole_sum = ctx.let(group if whole_sum is None else f"{whole_sum} + ({group})", "b")
            for k in range(area - area % 4, area):
                whole_sum = taps[k][c] if whole_sum is None else ctx.let(f"{whole_sum} + {taps[k][c]}", "b")
            part_sum = None
            for t, v in zip(taps, inside):
                part_sum = ctx.let(f"{t[c]} if {v} else {ft}(0)" if part_sum is None
                                   else f"({part_sum} + {t[c]}) if {v} else {part_sum}", "b")
            # OpenCV divides a partial block's sum as float, in 64F too
            part = f"{ft}(np.float32({part_sum}) / {count})"
            out.append(f"{ft}({whole_sum}) * {ft}({scale}) if {whole} else {part}")
        return out


def _is_halving(scale_x, scale_y):
    """cv::resize's test for its area fast path at scale 2 (|scale - 2| < DBL_EPSILON)."""
    return abs(scale_x - 2) < DBL_EPSILON and abs(scale_y - 2) < DBL_EPSILON


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
        # resample by 1/fx). NEAREST and LINEAR sample at scale 1, which is that copy, and stay
        # the same kernel (no recompile when a size happens to match); others copy.
        if interpolation in _SAMPLE_AT_SCALE_1 and not (m._depth in _NEAREST_ONLY and interpolation in _NO_8S_32S):
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
    by_scale = dsize is None or (int(dsize[0]), int(dsize[1])) == (0, 0)
    if m._depth == cv2.CV_8U and _is_halving(scale_x, scale_y) and (
            interpolation == cv2.INTER_AREA or
            (interpolation == cv2.INTER_LINEAR and STATE.resize_mapping != "opencv-cuda")):
        if m._cn != 2:
            nd = node("resize_half", [m._value(func)], (), (m._rows, m._cols), dh, dw, m._depth, m._cn)
            return result(func, nd, dst, stream)
        interpolation = cv2.INTER_AREA          # 2 channels: the general area path's rounding
    if interpolation == cv2.INTER_AREA and scale_x >= 1 and scale_y >= 1:
        return _area_shrink(func, m, dw, dh, scale_x, scale_y, dst, stream,
                            lambda a: _cpu_resize(a, by_scale, dw, dh, fx, fy, interpolation))
    if interpolation in FUSED:
        mapping = "cuda" if (STATE.resize_mapping == "opencv-cuda" and interpolation == cv2.INTER_LINEAR) \
            else "cpu"
        dyn = (m._rows, m._cols, scale_x, scale_y)
        if interpolation == cv2.INTER_AREA:      # OpenCV's inverse scales, as it has them
            dyn += (float(fx), float(fy)) if by_scale else (dw / m._cols, dh / m._rows)
        nd = node("resize", [m._value(func)], (interpolation, mapping), dyn, dh, dw, m._depth, m._cn)
        return result(func, nd, dst, stream)
    if interpolation in FALLBACK:
        return cpu_fallback(func, lambda a: _cpu_resize(a, by_scale, dw, dh, fx, fy, interpolation),
                            [m], dst, stream, why=f"interpolation {interpolation} is not fused yet")
    raise cv_error(func, f"unknown interpolation {interpolation}: expected one of cv2.INTER_NEAREST, "
                         "INTER_LINEAR, INTER_CUBIC, INTER_AREA, INTER_LANCZOS4", StsBadArg)


def _cpu_resize(a, by_scale, dw, dh, fx, fy, interpolation):
    """CPU OpenCV with the user's own arguments: with dsize (0, 0) its scale is 1/fx, not the
    rounded size's."""
    if by_scale:
        return cv2.resize(a, (0, 0), fx=fx, fy=fy, interpolation=interpolation)
    return cv2.resize(a, (dw, dh), interpolation=interpolation)


def _cell_taps(scale):
    """Source pixels one AREA cell of ``scale`` may touch: ``scale`` when it is whole (cells
    start on pixel edges), else ceil(scale) + 1 (a partial pixel at either end)."""
    return int(scale) if scale == int(scale) else math.ceil(scale) + 1


def _area_shrink(func, m, dw, dh, scale_x, scale_y, dst, stream, on_cpu):
    """AREA shrinking both ways: blocks for whole factors (cv::resize's test: within
    DBL_EPSILON of saturate_cast<int>), cells otherwise."""
    ix, iy = round(scale_x), round(scale_y)
    if abs(scale_x - ix) < DBL_EPSILON and abs(scale_y - iy) < DBL_EPSILON:
        static, dyn = ("blocks", ix, iy), (m._rows, m._cols)
    else:
        static, dyn = ("cells", _cell_taps(scale_x), _cell_taps(scale_y)), (m._rows, m._cols, scale_x, scale_y)
    if static[1] * static[2] > MAX_AREA_TAPS:
        return cpu_fallback(func, on_cpu, [m], dst, stream,
                            why=f"INTER_AREA by {scale_x:g}x{scale_y:g} reads more than {MAX_AREA_TAPS} "
                                "source pixels an output pixel")
    nd = node("resize_area", [m._value(func)], static, dyn, dh, dw, m._depth, m._cn)
    return result(func, nd, dst, stream)


def reference(src, dsize, fx=0, fy=0, interpolation=cv2.INTER_LINEAR):
    return cv2.resize(src, dsize, fx=fx, fy=fy, interpolation=interpolation)
