"""warpAffine, warpPerspective, remap, rotate and buildWarpAffineMaps/buildWarpPerspectiveMaps:
gathers that read the source at a mapped coordinate, fused, with OpenCV's border modes.

What CPU OpenCV 5 computes (the reference; checked against cv2 over depths, modes and maps):

* the coordinate of output (x, y) is float32: ``sx = fma(M0, x, float(y*M1 + M2))`` (affine),
  the same over ``fma(M6, x, float(y*M7 + M8))`` (perspective), or the map's value (remap);
  ``M`` is the inverse map, inverted in double on the host unless WARP_INVERSE_MAP is given.
* NEAREST takes the pixel at ``round(sx)`` (half to even); LINEAR interpolates in float32 from
  ``floor(sx)`` (``p0 + fx * (p1 - p0)``, rows then columns); CUBIC sums 4x4 taps weighted by
  ``interpolateCubic`` (A = -0.75) of the fraction. Integers round and saturate at the end.
* 16S LINEAR (and 16S NEAREST in warpAffine) still take OpenCV's older path: coordinates in
  fixed point with INTER_BITS = 5 (1/32 pixel; warpAffine's rows in 1/1024 first), weights
  from the 1/32 tables. ``coords="q"`` reproduces it.
* A tap outside the source takes the border: BORDER_CONSTANT's value (saturated to the depth)
  or the pixel ``border.index`` maps it to.

The matrix and the border value are kernel arguments (``dyn``): a new matrix never recompiles.
"""
import cv2
import numpy as np

from .._types import DEPTH_NAME, is_float
from ..errors import StsBadArg, StsBadSize, StsUnmatchedSizes, StsUnsupportedFormat, cv_error
from .. import runtime
from . import border
from .base import OpDef, saturate
from .common import (check_channels, check_depth, check_stream, cuda_api, float_arg, int_arg, node,
                     result, scalar4, size_arg, src_mat)
from .core import fill_values

INTERPOLATIONS = {cv2.INTER_NEAREST: 1, cv2.INTER_LINEAR: 4, cv2.INTER_CUBIC: 16}   # -> taps
DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32F)
CUBIC_A = -0.75
CLAMP = 1e8            # coordinates beyond it (and NaN) are clamped there: off any image, int32-safe


def _f32(v):
    return f"np.float32({v})"


def clamped(ctx, s):
    """A float32 coordinate clamped to [-CLAMP, CLAMP] (NaN to -CLAMP), so floor/round to int32
    is defined on every target."""
    return ctx.let(f"(np.float32({-CLAMP}) if not ({s} > np.float32({-CLAMP})) else "
                   f"(np.float32({CLAMP}) if {s} > np.float32({CLAMP}) else {s}))", "c")


def mapped_coords(ctx, n, kind, y, x, m0):
    """(sx, sy): float32 source coordinates of output (y, x) for an affine or perspective map
    whose coefficients are ``n.dyn[m0:]`` (the inverse map, row-major)."""
    m = [ctx.dyn(n, m0 + k, "f64") for k in range(9 if kind == "perspective" else 6)]
    fx = _f32(x)

    def row(k):                         # M[k]*x + float(y*M[k+1] + M[k+2]), one rounding
        base = ctx.let(_f32(f"{y} * {m[k + 1]} + {m[k + 2]}"), "m")
        return ctx.let(ctx.spell("fma_f32", _f32(m[k]), fx, base), "m")
    sx, sy = row(0), row(3)
    if kind == "perspective":
        w = row(6)
        # w == 0 maps off every image (OpenCV's division gives inf or NaN there)
        off = f"np.float32({-2 * CLAMP})"
        sx = ctx.let(f"{_f32(f'{sx} / {w}')} if {w} != np.float32(0) else {off}", "m")
        sy = ctx.let(f"{_f32(f'{sy} / {w}')} if {w} != np.float32(0) else {off}", "m")
    return sx, sy


def fixed_point_coords(ctx, n, kind, y, x, m0, sx=None, sy=None, nearest=False):
    """(ix, iy, fx, fy) by OpenCV's fixed-point path: the coordinate rounded to 1/32 pixel
    (to a whole pixel for warpAffine's NEAREST), fractions as float32 multiples of 1/32."""
    lim = "1073741823.0"

    def rnd(v):                          # cvRound of a double, clamped into int32 first
        return ctx.spell("rint_i32", f"min(max({v}, -{lim}), {lim})")
    if kind == "remap":
        xs = [rnd(f"np.float64({clamped(ctx, _f32(f'{s} * np.float32(32)'))})") for s in (sx, sy)]
    elif kind == "affine":
        m = [ctx.dyn(n, m0 + k, "f64") for k in range(6)]
        shift, half = (10, 512) if nearest else (5, 16)
        xs = []
        for k in (0, 3):
            base = ctx.let(f"np.int32({rnd(f'({y} * {m[k + 1]} + {m[k + 2]}) * 1024.0')} + {half})", "q")
            xs.append(ctx.let(f"np.int32({base} + {rnd(f'{m[k]} * {x} * 1024.0')}) >> {shift}", "q"))
        if nearest:
            return xs[0], xs[1], None, None
    else:
        m = [ctx.dyn(n, m0 + k, "f64") for k in range(9)]
        w = ctx.let(f"{m[6]} * {x} + {m[7]} * {y} + {m[8]}", "q")
        w = ctx.let(f"(32.0 / {w}) if {w} != 0.0 else 0.0", "q")
        xs = [rnd(f"({m[k]} * {x} + {m[k + 1]} * {y} + {m[k + 2]}) * {w}") for k in (0, 3)]
    X, Y = (ctx.let(v, "q") for v in xs)
    step = "np.float32(0.03125)"
    return (ctx.let(f"np.int32({X} >> 5)", "q"), ctx.let(f"np.int32({Y} >> 5)", "q"),
            ctx.let(f"np.float32({X} & 31) * {step}", "q"), ctx.let(f"np.float32({Y} & 31) * {step}", "q"))


def tap(ctx, src, yy, xx, rows, cols, mode, bval):
    """The channels of ``src`` at (yy, xx), which may lie outside: the border's pixel or value."""
    v = ctx.read(src, border.index(ctx, yy, rows, mode), border.index(ctx, xx, cols, mode))
    if mode != border.CONSTANT:
        return v
    ok = border.inside(ctx, yy, xx, rows, cols)
    return [ctx.let(f"{c} if {ok} else {b}", "t") for c, b in zip(v, bval)]


def cubic_weights(ctx, f):
    """OpenCV's interpolateCubic(f) in float32: the weights of taps -1, 0, 1, 2."""
    A = f"np.float32({CUBIC_A})"
    one = "np.float32(1)"
    g = ctx.let(f"{f} + {one}", "w")
    h = ctx.let(f"{one} - {f}", "w")
    c0 = ctx.let(f"(({A} * {g} - np.float32({5 * CUBIC_A})) * {g} + np.float32({8 * CUBIC_A})) * {g} "
                 f"- np.float32({4 * CUBIC_A})", "w")
    c1 = ctx.let(f"((np.float32({CUBIC_A + 2}) * {f} - np.float32({CUBIC_A + 3})) * {f}) * {f} + {one}", "w")
    c2 = ctx.let(f"((np.float32({CUBIC_A + 2}) * {h} - np.float32({CUBIC_A + 3})) * {h}) * {h} + {one}", "w")
    return [c0, c1, c2, ctx.let(f"{one} - {c0} - {c1} - {c2}", "w")]


def sample(ctx, n, src, sx, sy, rows, cols, coords, interp, mode, bval):
    """One output pixel's channels from float32 coordinates (or OpenCV's fixed-point ones)."""
    ft = "np.float32"
    if coords is not None:                                       # (ix, iy, fx, fy), fixed point
        ix, iy, fx, fy = coords
        if fx is None:
            return tap(ctx, src, iy, ix, rows, cols, mode, bval)
        w = [ctx.let(f"({a}) * ({b})", "w") for a in (f"{ft}(1) - {fy}", fy) for b in (f"{ft}(1) - {fx}", fx)]
        p = [tap(ctx, src, ctx.let(f"{iy} + {dy}", "y"), ctx.let(f"{ix} + {dx}", "x"), rows, cols, mode, bval)
             for dy in (0, 1) for dx in (0, 1)]
        return [saturate(ctx, " + ".join(f"{ft}({p[k][c]}) * {w[k]}" for k in range(4)), n.depth)
                for c in range(n.cn)]
    sx, sy = clamped(ctx, sx), clamped(ctx, sy)
    if interp == cv2.INTER_NEAREST:
        ix, iy = ctx.let(ctx.spell("rint_f32_i32", sx), "x"), ctx.let(ctx.spell("rint_f32_i32", sy), "y")
        return tap(ctx, src, iy, ix, rows, cols, mode, bval)
    ix, iy = ctx.let(ctx.spell("floor_i32", sx), "x"), ctx.let(ctx.spell("floor_i32", sy), "y")
    fx, fy = ctx.let(f"{sx} - {ft}({ix})", "f"), ctx.let(f"{sy} - {ft}({iy})", "f")
    if interp == cv2.INTER_LINEAR:
        p = [[tap(ctx, src, ctx.let(f"{iy} + {dy}", "y"), ctx.let(f"{ix} + {dx}", "x"), rows, cols, mode, bval)
              for dx in (0, 1)] for dy in (0, 1)]
        out = []
        for c in range(n.cn):
            v = [[ctx.let(f"{ft}({p[a][b][c]})", "p") for b in (0, 1)] for a in (0, 1)]
            v0 = ctx.let(f"{ft}({v[0][0]} + {fx} * {ft}({v[0][1]} - {v[0][0]}))", "l")
            v1 = ctx.let(f"{ft}({v[1][0]} + {fx} * {ft}({v[1][1]} - {v[1][0]}))", "l")
            out.append(saturate(ctx, f"{ft}({v0} + {fy} * {ft}({v1} - {v0}))", n.depth))
        return out
    wx, wy = cubic_weights(ctx, fx), cubic_weights(ctx, fy)
    rows_ = [[tap(ctx, src, ctx.let(f"{iy} + {dy}", "y"), ctx.let(f"{ix} + {dx}", "x"), rows, cols, mode, bval)
              for dx in (-1, 0, 1, 2)] for dy in (-1, 0, 1, 2)]
    out = []
    for c in range(n.cn):
        rs = [ctx.let(" + ".join(f"{ft}({r[k][c]}) * {wx[k]}" for k in range(4)), "r") for r in rows_]
        out.append(saturate(ctx, " + ".join(f"{rs[k]} * {wy[k]}" for k in range(4)), n.depth))
    return out


class Warp(OpDef):
    """static = (kind: affine|perspective|remap, interpolation, borderMode, coords: f|q);
    dyn = (src_rows, src_cols, border value x4, M...). remap's inputs are (src, xmap, ymap)."""
    name = "warp"
    pointwise = False
    size_in_dyn = (0,)          # (remap's maps are read where the output is)

    def tap_count(self, n):
        return INTERPOLATIONS[n.static[1]]

    def emit(self, ctx, n, y, x):
        kind, interp, mode, coords = n.static
        src = n.inputs[0]
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        kind_b = "i" if not is_float(n.depth) else "f32"
        bval = [ctx.dyn(n, 2 + c, kind_b) for c in range(n.cn)]
        if kind == "remap":
            sx, sy = ctx.read(n.inputs[1], y, x)[0], ctx.read(n.inputs[2], y, x)[0]
        else:
            sx = sy = None
        q = None
        if coords == "q":
            q = fixed_point_coords(ctx, n, kind, y, x, 6, sx, sy, nearest=interp == cv2.INTER_NEAREST)
        elif kind != "remap":
            sx, sy = mapped_coords(ctx, n, kind, y, x, 6)
        return sample(ctx, n, src, sx, sy, rows, cols, q, interp, mode, bval)


class WarpMap(OpDef):
    """The source coordinates an affine or perspective warp reads: (xmap, ymap) as 2 channels.
    static = (kind,); dyn = M (the inverse map)."""
    name = "warp_map"
    pointwise = False

    def emit(self, ctx, n, y, x):
        return list(mapped_coords(ctx, n, n.static[0], y, x, 0))


def _matrix(func, M, shape):
    if isinstance(M, cv2.UMat):
        M = M.get()
    try:
        a = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError):
        raise cv_error(func, f"M must be a {shape[0]}x{shape[1]} matrix, got {type(M).__name__}", StsBadArg)
    if a.shape != shape:
        raise cv_error(func, f"M must be {shape[0]}x{shape[1]} (M.rows == {shape[0]} && M.cols == {shape[1]}), "
                             f"got shape {a.shape}", StsBadSize)
    return a


def inverse_matrix(func, M, kind, inverse):
    """The dst -> src map OpenCV warps with: M itself with WARP_INVERSE_MAP, else its inverse
    in double (cv2.invertAffineTransform / cv2.invert, as CPU warpAffine/warpPerspective)."""
    shape = (2, 3) if kind == "affine" else (3, 3)
    a = _matrix(func, M, shape)
    if not inverse:
        a = cv2.invertAffineTransform(a) if kind == "affine" else cv2.invert(a)[1]
    return tuple(float(v) for v in a.ravel())


def _dsize(func, dsize):
    w, h = size_arg(func, dsize)
    if w <= 0 or h <= 0:
        raise cv_error(func, f"dsize must be positive, got {(w, h)}", StsBadSize)
    return w, h


def _interp_mode(func, interpolation, border_mode):
    interp = int_arg(func, interpolation, "interpolation")
    if interp not in INTERPOLATIONS:
        raise cv_error(func, f"unsupported interpolation {interp}: expected INTER_NEAREST, INTER_LINEAR or "
                             "INTER_CUBIC", StsBadArg)
    mode = border.check_mode(func, int_arg(func, border_mode, "borderMode"))
    return interp, mode


def _check_src(func, m):
    check_depth(func, m, DEPTHS)
    check_channels(func, m, (1, 3, 4))


def warp_node(func, m, kind, interp, mode, border_value, matrix, w, h, maps=()):
    coords = "q" if m._depth == cv2.CV_16S and (interp == cv2.INTER_LINEAR or
                                                (interp == cv2.INTER_NEAREST and kind == "affine")) else "f"
    bval = fill_values(m._depth, scalar4(func, border_value or 0, "borderValue"))
    inputs = [m._value(func)] + [mp._value(func, name) for mp, name in zip(maps, ("xmap", "ymap"))]
    if w * h * m._cn > runtime.SURELY_FITS:
        runtime.check_fits(func, h, w, m._depth, m._cn)
    return node("warp", inputs, (kind, interp, mode, coords), (m._rows, m._cols) + bval + tuple(matrix),
                h, w, m._depth, m._cn)


def _warp(func, kind, src, M, dsize, dst, flags, borderMode, borderValue, stream):
    m = src_mat(func, src)
    _check_src(func, m)
    flags = int_arg(func, flags, "flags")
    interp, mode = _interp_mode(func, flags & cv2.INTER_MAX, borderMode)
    matrix = inverse_matrix(func, M, kind, bool(flags & cv2.WARP_INVERSE_MAP))
    w, h = _dsize(func, dsize)
    return result(func, warp_node(func, m, kind, interp, mode, borderValue, matrix, w, h), dst, stream)


@cuda_api("warpAffine")
def warpAffine(src, M, dsize, dst=None, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
               borderValue=None, stream=None):
    """cv2.cuda.warpAffine(src, M, dsize[, dst[, flags[, borderMode[, borderValue[, stream]]]]])."""
    return _warp("warpAffine", "affine", src, M, dsize, dst, flags, borderMode, borderValue, stream)


@cuda_api("warpPerspective")
def warpPerspective(src, M, dsize, dst=None, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                    borderValue=None, stream=None):
    """cv2.cuda.warpPerspective(src, M, dsize[, dst[, flags[, borderMode[, borderValue[, stream]]]]])."""
    return _warp("warpPerspective", "perspective", src, M, dsize, dst, flags, borderMode, borderValue, stream)


@cuda_api("remap")
def remap(src, xmap, ymap, interpolation, dst=None, borderMode=cv2.BORDER_CONSTANT, borderValue=None,
          stream=None):
    """cv2.cuda.remap(src, xmap, ymap, interpolation[, dst[, borderMode[, borderValue[, stream]]]]):
    dst(x, y) = src(xmap(x, y), ymap(x, y)); the maps are CV_32FC1 GpuMats of dst's size."""
    func = "remap"
    m = src_mat(func, src)
    _check_src(func, m)
    mx, my = src_mat(func, xmap, "xmap"), src_mat(func, ymap, "ymap")
    for mp, name in ((mx, "xmap"), (my, "ymap")):
        if mp._depth != cv2.CV_32F or mp._cn != 1:
            raise cv_error(func, f"{name} must be CV_32FC1, got {DEPTH_NAME[mp._depth]}C{mp._cn}",
                           StsUnsupportedFormat)
    if (mx._rows, mx._cols) != (my._rows, my._cols):
        raise cv_error(func, f"xmap ({mx._cols}x{mx._rows}) and ymap ({my._cols}x{my._rows}) differ in size",
                       StsUnmatchedSizes)
    interp, mode = _interp_mode(func, interpolation, borderMode)
    nd = warp_node(func, m, "remap", interp, mode, borderValue, (), mx._cols, mx._rows, (mx, my))
    return result(func, nd, dst, stream)


def rotation_matrix(angle, x_shift, y_shift):
    """The forward map of OpenCV CUDA's rotate (NPP's nppiRotate): by ``angle`` degrees around
    the origin, then shifted — the matrix OpenCV's own rotate test warps with."""
    a = np.deg2rad(angle)
    return np.array([[np.cos(a), np.sin(a), x_shift], [-np.sin(a), np.cos(a), y_shift]])


@cuda_api("rotate")
def rotate(src, dsize, angle, dst=None, xShift=0, yShift=0, interpolation=cv2.INTER_LINEAR, stream=None):
    """cv2.cuda.rotate(src, dsize, angle[, dst[, xShift[, yShift[, interpolation[, stream]]]]]):
    warpAffine by :func:`rotation_matrix` with a constant 0 border (8U, 16U, 32F; 1, 3, 4 channels)."""
    func = "rotate"
    m = src_mat(func, src)
    check_depth(func, m, (cv2.CV_8U, cv2.CV_16U, cv2.CV_32F))
    check_channels(func, m, (1, 3, 4))
    M = rotation_matrix(float_arg(func, angle, "angle", 0.0), float_arg(func, xShift, "xShift", 0.0),
                        float_arg(func, yShift, "yShift", 0.0))
    interp, _ = _interp_mode(func, interpolation, cv2.BORDER_CONSTANT)
    w, h = _dsize(func, dsize)
    nd = warp_node(func, m, "affine", interp, border.CONSTANT, 0, inverse_matrix(func, M, "affine", False), w, h)
    return result(func, nd, dst, stream)


def _build_maps(func, kind, M, inverse, dsize, xmap, ymap, stream):
    check_stream(func, stream)
    matrix = inverse_matrix(func, M, kind, bool(inverse))
    w, h = _dsize(func, dsize)
    both = node("warp_map", [], (kind,), matrix, h, w, cv2.CV_32F, 2)
    planes = [node("channel", [both], (c,), (), h, w, cv2.CV_32F, 1) for c in (0, 1)]
    return tuple(result(func, p, d, stream) for p, d in zip(planes, (xmap, ymap)))


@cuda_api("buildWarpAffineMaps")
def buildWarpAffineMaps(M, inverse, dsize, xmap=None, ymap=None, stream=None):
    """cv2.cuda.buildWarpAffineMaps(M, inverse, dsize[, xmap[, ymap[, stream]]]) -> xmap, ymap
    (CV_32FC1): the coordinates warpAffine reads, so remap(src, xmap, ymap) equals it."""
    return _build_maps("buildWarpAffineMaps", "affine", M, inverse, dsize, xmap, ymap, stream)


@cuda_api("buildWarpPerspectiveMaps")
def buildWarpPerspectiveMaps(M, inverse, dsize, xmap=None, ymap=None, stream=None):
    """cv2.cuda.buildWarpPerspectiveMaps(M, inverse, dsize[, xmap[, ymap[, stream]]]) -> xmap, ymap."""
    return _build_maps("buildWarpPerspectiveMaps", "perspective", M, inverse, dsize, xmap, ymap, stream)


def reference_rotate(src, dsize, angle, x_shift=0, y_shift=0, interpolation=cv2.INTER_LINEAR):
    return cv2.warpAffine(src, rotation_matrix(angle, x_shift, y_shift), dsize, flags=interpolation,
                          borderMode=cv2.BORDER_CONSTANT)
