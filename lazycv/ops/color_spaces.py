"""cvtColor's colour spaces, fused as element-wise ops: YCrCb, YUV, XYZ, HSV, HLS, Lab, Luv
(both directions, the linear LBGR/LRGB variants of Lab and Luv), BGR565/BGR555, and alpha
premultiplication (mRGBA).

The formulas are CPU OpenCV's (modules/imgproc/src/color_*.simd.hpp): YCrCb, YUV and XYZ of
integer images use its fixed point (14- and 12-bit coefficients) and are bit-exact; HSV of 8U
uses its 12-bit reciprocal tables, computed per pixel (the table entry is cvRound of a double
quotient, which the kernel computes the same way). Lab and Luv run OpenCV's float formulas
(8U: on pixels / 255, rounded), with the exact sRGB power law where OpenCV interpolates a
1024-entry spline of it; where OpenCV's own approximations differ from the formulas by more
than its tolerances (``NOT_FUSED``) the code runs through the CPU fallback.
"""
import cv2

from .._types import DEPTH_ALPHA, DEPTH_RANGE
from .base import OpDef, saturate

U8, U16, F32 = cv2.CV_8U, cv2.CV_16U, cv2.CV_32F
INT_OR_FLOAT = (U8, U16, F32)       # YCrCb, YUV, XYZ
BYTE_OR_FLOAT = (U8, F32)           # HSV, HLS, Lab, Luv

# BT.601 as OpenCV writes it: float coefficients and their 14-bit fixed-point forms
YUV_SHIFT = 14
Y_FLOAT = (0.114, 0.587, 0.299)                     # B, G, R
Y_FIXED = (1868, 9617, 4899)
CHROMA = {False: ((0.564, 9241), (0.713, 11682)),   # YCrCb: (Cb, Cr) from (B - Y, R - Y)
          True: ((0.492, 8061), (0.877, 14369))}    # YUV: (U, V)
TO_RGB = {False: (1.773, -0.344, -0.714, 1.403, (29049, -5636, -11698, 22987)),   # Cb2B Cb2G Cr2G Cr2R
          True: (2.032, -0.395, -0.581, 1.140, (33292, -6472, -9519, 18678))}      # U2B U2G V2G V2R

XYZ_SHIFT = 12
RGB2XYZ = ((0.412453, 0.357580, 0.180423),          # rows X, Y, Z; columns R, G, B
           (0.212671, 0.715160, 0.072169),
           (0.019334, 0.119193, 0.950227))
XYZ2RGB = ((3.240479, -1.53715, -0.498535),         # rows R, G, B; columns X, Y, Z
           (-0.969256, 1.875991, 0.041556),
           (0.055648, -0.204043, 1.057311))
D65 = (0.950456, 1.0, 1.088754)

HSV_SHIFT = 12
FLT_EPSILON = 1.1920928955078125e-07
LUV_U, LUV_V = (-134.0, 354.0), (-140.0, 262.0)     # 8U Luv: u, v (low, range) mapped onto 0..255
SECTORS = ((1, 3, 0), (1, 0, 2), (3, 0, 1), (0, 2, 1), (0, 1, 3), (2, 1, 0))    # (b, g, r) of each hue sector


def f32(c):
    return f"np.float32({float(c)!r})"


def rgb_of(ctx, n, y, x, bidx, as_float=False):
    """(b, g, r) of the input pixel; float32 expressions when ``as_float``."""
    v = ctx.read(n.inputs[0], y, x)
    b, g, r = v[bidx], v[1], v[bidx ^ 2]
    if as_float:
        b, g, r = (ctx.let(f"np.float32({c})", "f") for c in (b, g, r))
    return b, g, r


def bgr_out(n, b, g, r, bidx, dcn):
    """Output channels in the code's order, with the depth's opaque alpha when ``dcn`` is 4."""
    out = [b, g, r] if bidx == 0 else [r, g, b]
    return out + [repr(DEPTH_ALPHA[n.depth])] * (dcn == 4)


def clamp_int(expr, depth):
    lo, hi = DEPTH_RANGE[depth]
    return f"min(max({expr}, {lo}), {hi})"


def descale(expr, shift):
    return f"(({expr}) + {1 << (shift - 1)}) >> {shift}"


class Ycc(OpDef):
    """BGR -> YCrCb / YUV; static (yuv, bidx). Integers: OpenCV's 14-bit fixed point."""
    name = "cvt_ycc"

    def emit(self, ctx, n, y, x):
        yuv, bidx = n.static
        (cb_f, cb_i), (cr_f, cr_i) = CHROMA[yuv]
        if n.depth == F32:
            b, g, r = rgb_of(ctx, n, y, x, bidx)
            lum = ctx.let(f"{b} * {f32(Y_FLOAT[0])} + {g} * {f32(Y_FLOAT[1])} + {r} * {f32(Y_FLOAT[2])}", "f")
            cr = f"({r} - {lum}) * {f32(cr_f)} + np.float32(0.5)"
            cb = f"({b} - {lum}) * {f32(cb_f)} + np.float32(0.5)"
        else:
            b, g, r = rgb_of(ctx, n, y, x, bidx)
            half = (DEPTH_RANGE[n.depth][1] + 1) // 2 << YUV_SHIFT
            lum = ctx.let(descale(f"{b} * {Y_FIXED[0]} + {g} * {Y_FIXED[1]} + {r} * {Y_FIXED[2]}", YUV_SHIFT), "i")
            cr = clamp_int(descale(f"({r} - {lum}) * {cr_i} + {half}", YUV_SHIFT), n.depth)
            cb = clamp_int(descale(f"({b} - {lum}) * {cb_i} + {half}", YUV_SHIFT), n.depth)
            lum = clamp_int(lum, n.depth)
        return [lum, cb, cr] if yuv else [lum, cr, cb]


class YccToBgr(OpDef):
    """YCrCb / YUV -> BGR; static (yuv, bidx, dcn)."""
    name = "cvt_ycc2bgr"

    def emit(self, ctx, n, y, x):
        yuv, bidx, dcn = n.static
        v = ctx.read(n.inputs[0], y, x)
        lum, cr, cb = (v[0], v[2], v[1]) if yuv else (v[0], v[1], v[2])
        cb2b, cb2g, cr2g, cr2r, fixed = TO_RGB[yuv]
        if n.depth == F32:
            dcb = ctx.let(f"{cb} - np.float32(0.5)", "f")
            dcr = ctx.let(f"{cr} - np.float32(0.5)", "f")
            b = f"{lum} + {dcb} * {f32(cb2b)}"
            g = f"{lum} + {dcb} * {f32(cb2g)} + {dcr} * {f32(cr2g)}"
            r = f"{lum} + {dcr} * {f32(cr2r)}"
        else:
            half = (DEPTH_RANGE[n.depth][1] + 1) // 2
            dcb = ctx.let(f"{cb} - {half}", "i")
            dcr = ctx.let(f"{cr} - {half}", "i")
            i_cb2b, i_cb2g, i_cr2g, i_cr2r = fixed
            b = clamp_int(f"{lum} + ({descale(f'{dcb} * {i_cb2b}', YUV_SHIFT)})", n.depth)
            g = clamp_int(f"{lum} + ({descale(f'{dcb} * {i_cb2g} + {dcr} * {i_cr2g}', YUV_SHIFT)})", n.depth)
            r = clamp_int(f"{lum} + ({descale(f'{dcr} * {i_cr2r}', YUV_SHIFT)})", n.depth)
        return bgr_out(n, b, g, r, bidx, dcn)


def _matrix_rows(rows, bidx, to_rgb):
    """The 3x3 matrix as (row for output channel k) of (coefficient for input channel j),
    in the code's channel order."""
    rows = [list(r) for r in rows]
    if not to_rgb and bidx == 0:             # BGR input: swap the R and B columns
        rows = [[r[2], r[1], r[0]] for r in rows]
    if to_rgb and bidx == 0:                 # BGR output: the B row first
        rows = rows[::-1]
    return rows


class Xyz(OpDef):
    """BGR <-> XYZ (D65); static (to_rgb, bidx, dcn). Integers: 12-bit coefficients."""
    name = "cvt_xyz"

    def emit(self, ctx, n, y, x):
        to_rgb, bidx, dcn = n.static
        v = ctx.read(n.inputs[0], y, x)
        rows = _matrix_rows(XYZ2RGB if to_rgb else RGB2XYZ, bidx, to_rgb)
        if n.depth == F32:
            out = [" + ".join(f"{v[j]} * {f32(c)}" for j, c in enumerate(row)) for row in rows]
        else:
            out = [clamp_int(descale(" + ".join(f"{v[j]} * {round(c * (1 << XYZ_SHIFT))}"
                                                for j, c in enumerate(row)), XYZ_SHIFT), n.depth)
                   for row in rows]
        if to_rgb:
            out += [repr(DEPTH_ALPHA[n.depth])] * (dcn == 4)
        return out


def _hsv_float(ctx, b, g, r, hls, hscale):
    """OpenCV's RGB2HSV_f / RGB2HLS_f on float32 (b, g, r): (h * hscale, s, v) or (h, l, s)."""
    vmax = ctx.let(f"max({r}, {g}, {b})", "f")
    vmin = ctx.let(f"min({r}, {g}, {b})", "f")
    diff = ctx.let(f"{vmax} - {vmin}", "f")
    if hls:
        lum = ctx.let(f"({vmax} + {vmin}) * np.float32(0.5)", "f")
        chroma = ctx.let(f"{diff} > {f32(FLT_EPSILON)}", "b")
        sat = (f"(({diff} / ({vmax} + {vmin}) if {lum} < np.float32(0.5) else "
               f"{diff} / (np.float32(2) - {vmax} - {vmin})) if {chroma} else np.float32(0))")
        step = ctx.let(f"np.float32(60) / ({diff} if {chroma} else np.float32(1))", "f")
    else:
        sat = f"{diff} / (abs({vmax}) + {f32(FLT_EPSILON)})"
        step = ctx.let(f"np.float32(np.float64(60) / np.float64({diff} + {f32(FLT_EPSILON)}))", "f")
    hue = ctx.let(f"(({g} - {b}) * {step} if {vmax} == {r} else "
                  f"(({b} - {r}) * {step} + np.float32(120) if {vmax} == {g} else "
                  f"({r} - {g}) * {step} + np.float32(240)))", "f")
    hue = ctx.let(f"{hue} + np.float32(360) if {hue} < np.float32(0) else {hue}", "f")
    if hls:
        hue = ctx.let(f"{hue} if {chroma} else np.float32(0)", "f")
    hue = f"{hue} * {f32(hscale)}" if hscale != 1 else hue
    return (hue, lum, sat) if hls else (hue, sat, vmax)


def _hsv_byte(ctx, b, g, r, hrange):
    """OpenCV's RGB2HSV_b: 12-bit reciprocals sdiv[v] = cvRound(255 << 12 / v) and
    hdiv[diff] = cvRound(hrange << 12 / (6 diff)), computed as the tables are (in double)."""
    vmax = ctx.let(f"max({r}, {g}, {b})", "i")
    diff = ctx.let(f"{vmax} - min({r}, {g}, {b})", "i")
    rint = lambda e: ctx.spell("rint_i32", e)       # noqa: E731
    sdiv = ctx.let(f"{rint(f'np.float64({255 << HSV_SHIFT}) / np.float64(max({vmax}, 1))')} "
                   f"if {vmax} > 0 else 0", "i")
    hdiv = ctx.let(f"{rint(f'np.float64({hrange << HSV_SHIFT}) / np.float64(6 * max({diff}, 1))')} "
                   f"if {diff} > 0 else 0", "i")
    sat = descale(f"{diff} * {sdiv}", HSV_SHIFT)
    hue = ctx.let(f"(({g} - {b}) if {vmax} == {r} else (({b} - {r} + 2 * {diff}) if {vmax} == {g} else "
                  f"({r} - {g} + 4 * {diff})))", "i")
    hue = ctx.let(descale(f"{hue} * {hdiv}", HSV_SHIFT), "i")
    hue = f"({hue} + {hrange} if {hue} < 0 else {hue})"
    return hue, sat, vmax


class Hsv(OpDef):
    """BGR -> HSV / HLS; static (hls, bidx, hrange). 8U HSV is OpenCV's integer path; 8U HLS
    runs the float formula on pixels / 255, as OpenCV does."""
    name = "cvt_hsv"

    def emit(self, ctx, n, y, x):
        hls, bidx, hrange = n.static
        if n.depth == U8 and not hls:
            hue, sat, val = _hsv_byte(ctx, *rgb_of(ctx, n, y, x, bidx), hrange)
            return [clamp_int(hue, U8), sat, val]
        b, g, r = rgb_of(ctx, n, y, x, bidx, as_float=True)
        if n.depth == F32:
            return list(_hsv_float(ctx, b, g, r, hls, hrange / 360.0))
        b, g, r = (ctx.let(f"{c} * np.float32(1 / 255)", "f") for c in (b, g, r))
        hue, lum, sat = _hsv_float(ctx, b, g, r, hls, hrange / 360.0)
        return [saturate(ctx, hue, U8), saturate(ctx, f"{lum} * np.float32(255)", U8),
                saturate(ctx, f"{sat} * np.float32(255)", U8)]


def _sector_pick(sector, tab, k):
    """tab[SECTORS[sector][k]] as one nested conditional."""
    expr = tab[SECTORS[5][k]]
    for s in range(4, -1, -1):
        expr = f"({tab[SECTORS[s][k]]} if {sector} == {s} else {expr})"
    return expr


class HsvToBgr(OpDef):
    """HSV / HLS -> BGR; static (hls, bidx, hrange, dcn). 8U: the float formula on
    (h, s / 255, v / 255), then * 255, as OpenCV: HSV (hue 0..180) truncated, as its SIMD path
    does; the _FULL codes (hue 0..255, IPP's path in OpenCV) and HLS rounded."""
    name = "cvt_hsv2bgr"

    def emit(self, ctx, n, y, x):
        hls, bidx, hrange, dcn = n.static
        v = ctx.read(n.inputs[0], y, x)
        hue, c1, c2 = (ctx.let(f"np.float32({c})", "f") for c in v)
        if n.depth == U8:
            c1, c2 = (ctx.let(f"{c} * np.float32(1 / 255)", "f") for c in (c1, c2))
        lum, sat = (c1, c2) if hls else (None, c1)
        h = ctx.let(f"{hue} * {f32(6.0 / hrange)}", "f")
        floor = ctx.let(ctx.spell("floor_i32", h), "i")
        frac = ctx.let(f"{h} - np.float32({floor})", "f")
        sector = ctx.let(f"{floor} % 6", "i")
        if hls:
            p2 = ctx.let(f"({lum} * (np.float32(1) + {sat}) if {lum} <= np.float32(0.5) else "
                         f"{lum} + {sat} - {lum} * {sat})", "f")
            p1 = ctx.let(f"np.float32(2) * {lum} - {p2}", "f")
            tab = [p2, p1, ctx.let(f"{p1} + ({p2} - {p1}) * (np.float32(1) - {frac})", "f"),
                   ctx.let(f"{p1} + ({p2} - {p1}) * {frac}", "f")]
            grey = lum
        else:
            val = c2
            tab = [val, ctx.let(f"{val} * (np.float32(1) - {sat})", "f"),
                   ctx.let(f"{val} * (np.float32(1) - {sat} * {frac})", "f"),
                   ctx.let(f"{val} * (np.float32(1) - {sat} * (np.float32(1) - {frac}))", "f")]
            grey = val
        b, g, r = (f"({grey} if {sat} == np.float32(0) else {_sector_pick(sector, tab, k)})" for k in range(3))
        if n.depth == U8 and not hls and hrange == 180:     # OpenCV's SIMD path truncates
            b, g, r = (clamp_int(ctx.spell("floor_i32", f"{c} * np.float32(255)"), U8) for c in (b, g, r))
        elif n.depth == U8:
            b, g, r = (saturate(ctx, f"{c} * np.float32(255)", U8) for c in (b, g, r))
        return bgr_out(n, b, g, r, bidx, dcn)


def _lab_matrix(bidx, luv, to_rgb):
    """OpenCV's Lab/Luv coefficient matrices in the code's channel order: RGB -> XYZ divided by
    the white point for Lab (not for Luv); XYZ -> RGB times the white point for Lab."""
    if to_rgb:
        rows = [[c * (D65[j] if not luv else 1.0) for j, c in enumerate(row)] for row in XYZ2RGB]
    else:
        rows = [[c / (D65[i] if not luv else 1.0) for c in row] for i, row in enumerate(RGB2XYZ)]
    return _matrix_rows(rows, bidx, to_rgb)


def _gamma(ctx, c):
    """sRGB to linear, on a value clipped to [0, 1]."""
    return ctx.let(f"({c} / np.float32(12.92) if {c} <= np.float32(0.04045) else "
                   f"np.float32(math.pow(({c} + np.float32(0.055)) / np.float32(1.055), 2.4)))", "f")


def _inv_gamma(ctx, c):
    """Linear to sRGB, on a value clipped to [0, 1]."""
    return ctx.let(f"({c} * np.float32(12.92) if {c} <= np.float32(0.0031308) else "
                   f"np.float32(np.float32(1.055) * np.float32(math.pow({c}, 1 / 2.4)) - np.float32(0.055)))",
                   "f")


def _cbrt_f(ctx, t):
    """Lab's f(t): the cube root above (6/29)^3, the linear segment below."""
    return ctx.let(f"(np.float32(math.pow({t}, 1 / 3)) if {t} > np.float32(0.008856) else "
                   f"np.float32(7.787) * {t} + np.float32(16 / 116))", "f")


class Lab(OpDef):
    """BGR -> Lab / Luv (D65); static (luv, srgb, bidx). OpenCV's float formulas; 8U maps
    L to L * 255 / 100, a and b to +128, Luv's u and v onto 0..255."""
    name = "cvt_lab"

    def emit(self, ctx, n, y, x):
        luv, srgb, bidx = n.static
        v = ctx.read(n.inputs[0], y, x)
        scale = " * np.float32(1 / 255)" if n.depth == U8 else ""
        rgb = [ctx.let(f"min(max(np.float32({c}){scale}, np.float32(0)), np.float32(1))", "f") for c in v[:3]]
        if srgb:
            rgb = [_gamma(ctx, c) for c in rgb]
        X, Y, Z = (ctx.let(" + ".join(f"{rgb[j]} * {f32(c)}" for j, c in enumerate(row)), "f")
                   for row in _lab_matrix(bidx, luv, False))
        fy = _cbrt_f(ctx, Y)
        lum = ctx.let(f"np.float32(116) * {fy} - np.float32(16)", "f")
        if luv:
            wx, wy, wz = D65
            d = 1.0 / (wx + 15 * wy + 3 * wz)
            un, vn = 13 * 4 * wx * d, 13 * 9 * wy * d
            dd = ctx.let(f"np.float32(52) / max({X} + np.float32(15) * {Y} + np.float32(3) * {Z}, "
                         f"{f32(FLT_EPSILON)})", "f")
            c1 = f"{lum} * ({X} * {dd} - {f32(un)})"
            c2 = f"{lum} * (np.float32(2.25) * {Y} * {dd} - {f32(vn)})"
        else:
            lum = ctx.let(f"({lum} if {Y} > np.float32(0.008856) else np.float32(903.3) * {Y})", "f")
            c1 = f"np.float32(500) * ({_cbrt_f(ctx, X)} - {fy})"
            c2 = f"np.float32(200) * ({fy} - {_cbrt_f(ctx, Z)})"
        if n.depth == F32:
            return [lum, c1, c2]
        if luv:
            (ul, ur), (vl, vr) = LUV_U, LUV_V
            return [saturate(ctx, f"{lum} * np.float32(2.55)", U8),
                    saturate(ctx, f"({c1} - {f32(ul)}) * {f32(255 / ur)}", U8),
                    saturate(ctx, f"({c2} - {f32(vl)}) * {f32(255 / vr)}", U8)]
        return [saturate(ctx, f"{lum} * np.float32(2.55)", U8),
                saturate(ctx, f"{c1} + np.float32(128)", U8), saturate(ctx, f"{c2} + np.float32(128)", U8)]


class LabToBgr(OpDef):
    """Lab / Luv -> BGR; static (luv, srgb, bidx, dcn)."""
    name = "cvt_lab2bgr"

    def emit(self, ctx, n, y, x):
        luv, srgb, bidx, dcn = n.static
        v = ctx.read(n.inputs[0], y, x)
        L, c1, c2 = (ctx.let(f"np.float32({c})", "f") for c in v)
        if n.depth == U8:
            L = ctx.let(f"{L} * np.float32(100 / 255)", "f")
            if luv:
                (ul, ur), (vl, vr) = LUV_U, LUV_V
                c1 = ctx.let(f"{c1} * {f32(ur / 255)} + {f32(ul)}", "f")
                c2 = ctx.let(f"{c2} * {f32(vr / 255)} + {f32(vl)}", "f")
            else:
                c1, c2 = (ctx.let(f"{c} - np.float32(128)", "f") for c in (c1, c2))
        if luv:
            X, Y, Z = self._luv_xyz(ctx, L, c1, c2)
        else:
            X, Y, Z = self._lab_xyz(ctx, L, c1, c2)
        out = []
        for row in _lab_matrix(bidx, luv, True):
            c = ctx.let(f"min(max({X} * {f32(row[0])} + {Y} * {f32(row[1])} + {Z} * {f32(row[2])}, "
                        "np.float32(0)), np.float32(1))", "f")
            c = _inv_gamma(ctx, c) if srgb else c
            out.append(saturate(ctx, f"{c} * np.float32(255)", U8) if n.depth == U8 else c)
        return out + [repr(DEPTH_ALPHA[n.depth])] * (dcn == 4)

    @staticmethod
    def _lab_xyz(ctx, L, a, b):
        lin = ctx.let(f"{L} <= np.float32({0.008856 * 903.3!r})", "b")
        f_hi = ctx.let(f"({L} + np.float32(16)) / np.float32(116)", "f")
        Y = ctx.let(f"({L} / np.float32(903.3) if {lin} else {f_hi} * {f_hi} * {f_hi})", "f")
        fy = ctx.let(f"(np.float32(7.787) * {Y} + np.float32(16 / 116) if {lin} else {f_hi})", "f")
        f_lo = f32(7.787 * 0.008856 + 16 / 116)
        fx = ctx.let(f"{a} / np.float32(500) + {fy}", "f")
        fz = ctx.let(f"{fy} - {b} / np.float32(200)", "f")
        X, Z = (ctx.let(f"(({t} - np.float32(16 / 116)) / np.float32(7.787) if {t} <= {f_lo} else "
                        f"{t} * {t} * {t})", "f") for t in (fx, fz))
        return X, Y, Z

    @staticmethod
    def _luv_xyz(ctx, L, u, v):
        wx, wy, wz = D65
        d = 1.0 / (wx + 15 * wy + 3 * wz)
        un, vn = 4 * 13 * wx * d, 9 * 13 * wy * d
        f_hi = ctx.let(f"({L} + np.float32(16)) * np.float32(1 / 116)", "f")
        Y = ctx.let(f"({f_hi} * {f_hi} * {f_hi} if {L} >= np.float32(8) else {L} * np.float32(1 / 903.3))", "f")
        up = ctx.let(f"np.float32(3) * ({u} + {L} * {f32(un)})", "f")
        den = ctx.let(f"{v} + {L} * {f32(vn)}", "f")
        vp = ctx.let(f"(min(max(np.float32(0.25) / {den}, np.float32(-0.25)), np.float32(0.25)) "
                     f"if {den} != np.float32(0) else np.float32(0.25))", "f")
        X = ctx.let(f"{Y} * np.float32(3) * {up} * {vp}", "f")
        Z = ctx.let(f"{Y} * ((np.float32(156) * {L} - {up}) * {vp} - np.float32(5))", "f")
        return X, Y, Z


def _code(name):
    return getattr(cv2, "COLOR_" + name, None)


# code -> (op, static before dcn, depths, to_bgr). Codes to a colour space take 3 or 4 channels
# (alpha ignored) and give 3; codes back take 3 and give 3, or 4 with dcn=4 (opaque alpha).
CODES = {}
for _b, _bidx in (("BGR", 0), ("RGB", 2)):
    for _space, _op, _static, _depths in (
            ("YCrCb", "cvt_ycc", (False,), INT_OR_FLOAT), ("YUV", "cvt_ycc", (True,), INT_OR_FLOAT),
            ("Lab", "cvt_lab", (False, True), BYTE_OR_FLOAT), ("Luv", "cvt_lab", (True, True), BYTE_OR_FLOAT)):
        CODES[_code(f"{_b}2{_space}")] = (_op, _static + (_bidx,), _depths, False)
        CODES[_code(f"{_space}2{_b}")] = (_op + "2bgr", _static + (_bidx,), _depths, True)
    CODES[_code(f"{_b}2XYZ")] = ("cvt_xyz", (False, _bidx), INT_OR_FLOAT, False)
    CODES[_code(f"XYZ2{_b}")] = ("cvt_xyz", (True, _bidx), INT_OR_FLOAT, True)
    for _space, _luv in (("Lab", False), ("Luv", True)):
        CODES[_code(f"L{_b}2{_space}")] = ("cvt_lab", (_luv, False, _bidx), BYTE_OR_FLOAT, False)
        CODES[_code(f"{_space}2L{_b}")] = ("cvt_lab2bgr", (_luv, False, _bidx), BYTE_OR_FLOAT, True)
    for _full, _suffix in ((False, ""), (True, "_FULL")):
        for _space, _hls in (("HSV", False), ("HLS", True)):
            # hue range: 180 (8U), 256 (8U _FULL), 360 (32F either way), chosen by depth at the call
            CODES[_code(f"{_b}2{_space}{_suffix}")] = ("cvt_hsv", (_hls, _bidx, _full), BYTE_OR_FLOAT, False)
            CODES[_code(f"{_space}2{_b}{_suffix}")] = ("cvt_hsv2bgr", (_hls, _bidx, _full), BYTE_OR_FLOAT, True)


# (code, depth) pairs CPU OpenCV computes by its own approximations, which the float formulas
# miss by more than OpenCV's tolerances: sRGB -> Lab interpolates a 33^3 table (8U and 32F: up
# to 3 levels, 0.4 in a and b); 8U Lab/Luv -> BGR is an integer path that clips out-of-gamut
# colours its own way (Luv: up to 255 levels). These run through the CPU fallback.
NOT_FUSED = {(_code(f"{_b}2Lab"), _d) for _b in ("BGR", "RGB") for _d in BYTE_OR_FLOAT}
NOT_FUSED |= {(_code(f"{_s}2{_b}"), U8) for _s in ("Lab", "Luv") for _b in ("BGR", "RGB", "LBGR", "LRGB")
              if (_s, _b[0]) != ("Lab", "L")}


def static_for(op, static, depth, dcn):
    """The node's static tuple: a hue range in place of the _FULL flag; dcn for codes back."""
    if op in ("cvt_hsv", "cvt_hsv2bgr"):
        hls, bidx, full = static
        static = (hls, bidx, 360 if depth == F32 else 180 if not full else 256 if op == "cvt_hsv" and not hls else 255)
    if op == "cvt_xyz":
        return static + (dcn,)
    return static + (dcn,) if op.endswith("2bgr") else static
