"""cvtColor's sampled layouts as gathers: YUV 4:2:0 frames (NV12, NV21, I420/IYUV, YV12) to
BGR/RGB(A) and grey, bilinear Bayer demosaicing to BGR/RGB(A), and OpenCV CUDA's
Malvar-He-Cutler demosaicing — one op reading luma and chroma (or the Bayer neighbourhood), so a
decoded frame -> convertTo -> split is one kernel.

Numerics are CPU OpenCV's: YUV 4:2:0 is its BT.601 20-bit fixed point (color_yuv.simd.hpp,
bit-exact); Bayer is its bilinear interpolation with the border rows and columns copied from
their inner neighbours (demosaicing.cpp). The MHT codes have no CPU counterpart: they follow
the CUDA module's kernel (debayer.cu, MHCdemosaic), see ``BayerMHT``.
"""
import cv2

from .._types import DEPTH_ALPHA
from ..errors import StsBadArg, cv_error
from .base import OpDef, saturate
from .common import check_channels, check_depth, node

# BT.601 "video range" YUV -> RGB, 20-bit fixed point (OpenCV's ITUR_BT_601_*)
BT601_SHIFT = 20
CY, CUB, CUG, CVG, CVR = 1220542, 2116026, -409993, -852492, 1673527


def _code(name):
    return getattr(cv2, "COLOR_" + name, None)


# code -> (planar, u_first_or_uidx, bidx, dcn). planar False: one interleaved chroma plane
# (uidx 0: U then V, NV12; 1: NV21); planar True: U plane then V plane (I420) or V then U (YV12).
YUV420 = {}
for _fmt, _planar, _u_first in (("NV12", False, True), ("NV21", False, False), ("I420", True, True),
                                ("IYUV", True, True), ("YV12", True, False)):
    for _out, _bidx, _dcn in (("BGR", 0, 3), ("RGB", 2, 3), ("BGRA", 0, 4), ("RGBA", 2, 4)):
        if _code(f"YUV2{_out}_{_fmt}") is not None:
            YUV420[_code(f"YUV2{_out}_{_fmt}")] = (_planar, _u_first, _bidx, _dcn)
YUV420_GRAY = {_code(n) for n in ("YUV2GRAY_420", "YUV2GRAY_NV12", "YUV2GRAY_I420") if _code(n) is not None}

# code -> (row and column of red in the 2x2 cell, bidx, dcn). OpenCV names a pattern by the
# second row's second and third pixels: BayerBG has blue at (1, 1), so red at (0, 0).
BAYER = {}
for _pat, _red in (("BG", (0, 0)), ("GB", (0, 1)), ("RG", (1, 1)), ("GR", (1, 0))):
    for _out, _bidx, _dcn in (("BGR", 0, 3), ("RGB", 2, 3), ("BGRA", 0, 4), ("RGBA", 2, 4)):
        if _code(f"Bayer{_pat}2{_out}") is not None:
            BAYER[_code(f"Bayer{_pat}2{_out}")] = (_red, _bidx, _dcn)


def _bt601(ctx, lum, u, v):
    """(b, g, r) of one pixel from 8-bit Y, U, V, as OpenCV's yRGBuvToRGBA."""
    yy = ctx.let(f"max(0, {lum} - 16) * {CY}", "i")
    du = ctx.let(f"{u} - 128", "i")
    dv = ctx.let(f"{v} - 128", "i")
    half = 1 << (BT601_SHIFT - 1)
    clamp = lambda e: f"min(max(({e}) >> {BT601_SHIFT}, 0), 255)"      # noqa: E731
    return (clamp(f"{yy} + {half} + {CUB} * {du}"),
            clamp(f"{yy} + {half} + {CVG} * {dv} + {CUG} * {du}"),
            clamp(f"{yy} + {half} + {CVR} * {dv}"))


class Yuv420(OpDef):
    """(H * 3 / 2) x W 8-bit YUV 4:2:0 -> H x W BGR/RGB(A); static (planar, u_first, bidx, dcn),
    dyn (H, W) of the luma plane."""
    name = "yuv420"
    taps = 3
    pointwise = False

    def emit(self, ctx, n, y, x):
        planar, u_first, bidx, dcn = n.static
        src = n.inputs[0]
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        (lum,) = ctx.read(src, y, x)
        if planar:
            # each chroma plane is (H / 2) x (W / 2) bytes, stored row after row below the luma
            k = ctx.let(f"({y} // 2) * ({cols} // 2) + {x} // 2", "i")
            k2 = ctx.let(f"{k} + ({rows} // 2) * ({cols} // 2)", "i")
            (first,) = ctx.read(src, ctx.let(f"{rows} + {k} // {cols}", "r"), ctx.let(f"{k} % {cols}", "c"))
            (second,) = ctx.read(src, ctx.let(f"{rows} + {k2} // {cols}", "r"), ctx.let(f"{k2} % {cols}", "c"))
        else:
            row = ctx.let(f"{rows} + {y} // 2", "r")
            col = ctx.let(f"({x} // 2) * 2", "c")
            (first,) = ctx.read(src, row, col)
            (second,) = ctx.read(src, row, ctx.let(f"{col} + 1", "c"))
        u, v = (first, second) if u_first else (second, first)
        b, g, r = _bt601(ctx, lum, u, v)
        out = [b, g, r] if bidx == 0 else [r, g, b]
        return out + ["255"] * (dcn == 4)


class Bayer(OpDef):
    """Bilinear demosaicing as CPU OpenCV: a colour the pixel lacks is the mean of its two or four
    nearest samples of that colour (rounded); the outer rows and columns repeat their inner
    neighbours. static (red_row, red_col, bidx, dcn); dyn (H, W)."""
    name = "bayer"
    taps = 9
    pointwise = False

    def emit(self, ctx, n, y, x):
        (red_y, red_x), bidx, dcn = n.static
        src = n.inputs[0]
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        cy = ctx.let(f"min(max({y}, 1), {rows} - 2)", "r")
        cx = ctx.let(f"min(max({x}, 1), {cols} - 2)", "c")
        ys = [ctx.let(f"{cy} - 1", "r"), cy, ctx.let(f"{cy} + 1", "r")]
        xs = [ctx.let(f"{cx} - 1", "c"), cx, ctx.let(f"{cx} + 1", "c")]
        p = [[ctx.read(src, yy, xx)[0] for xx in xs] for yy in ys]
        centre = p[1][1]
        cross = f"({p[0][1]} + {p[2][1]} + {p[1][0]} + {p[1][2]} + 2) >> 2"
        diag = f"({p[0][0]} + {p[0][2]} + {p[2][0]} + {p[2][2]} + 2) >> 2"
        horiz = f"({p[1][0]} + {p[1][2]} + 1) >> 1"
        vert = f"({p[0][1]} + {p[2][1]} + 1) >> 1"
        on_red_row = ctx.let(f"({cy} & 1) == {red_y}", "b")
        on_red_col = ctx.let(f"({cx} & 1) == {red_x}", "b")
        # red site: (row, col) both match; blue site: neither; green: one of them
        r = (f"({centre} if {on_red_col} else {horiz}) if {on_red_row} else "
             f"({vert} if {on_red_col} else {diag})")
        b = (f"({diag} if {on_red_col} else {vert}) if {on_red_row} else "
             f"({horiz} if {on_red_col} else {centre})")
        g = f"({cross} if {on_red_row} == {on_red_col} else {centre})"
        out = [f"({b})", g, f"({r})"] if bidx == 0 else [f"({r})", g, f"({b})"]
        return out + [repr(DEPTH_ALPHA[n.depth])] * (dcn == 4)



# OpenCV CUDA's Malvar-He-Cutler codes (cudaimgproc's DemosaicTypes; the RGB names alias these)
MHT_BGR = {256: "BG", 257: "GB", 258: "RG", 259: "GR"}
MHT_GRAY = range(260, 264)
MHT_CODES = range(256, 264)
# MHCdemosaic's 5x5 filters in sixteenths (kC, kD, kA, kE, kB, kF of debayer.cu times 16), per
# pattern: x cross, y checker, z theta, w phi; terms C centre, D diagonals, A vertical +-2,
# E horizontal +-2, B vertical +-1, F horizontal +-1
MHT_FILTERS = {"x": {"C": 8, "A": -2, "E": -2, "B": 4, "F": 4},
               "y": {"C": 12, "D": 4, "A": -3, "E": -3},
               "z": {"C": 10, "D": -2, "A": 1, "E": -2, "F": 8},
               "w": {"C": 10, "D": -2, "A": -2, "E": 1, "B": 8}}
GRAY_WEIGHTS = (1868, 9617, 4899)           # B, G, R in 14 bits (the CUDA module's bgr_to_gray)


class BayerMHT(OpDef):
    """Malvar-He-Cutler demosaicing as OpenCV CUDA's MHCdemosaic: each interior pixel's missing
    colours from 5x5 gradient-corrected filters (taps past the image clamped to its edge, as its
    texture reads); the outer ring of pixels stays 0 (it zeroes the output first). Its float32
    sums are exact (sixteenths of small integers), so they are computed here in integers and
    rounded half to even once, as its saturate_cast. static (first_red_x, first_red_y, dcn);
    dyn (H, W)."""
    name = "bayer_mht"
    taps = 13
    pointwise = False

    def emit(self, ctx, n, y, x):
        red_x, red_y, dcn = n.static
        src = n.inputs[0]
        rows, cols = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        inside = ctx.let(f"{y} >= 1 and {y} < {rows} - 1 and {x} >= 1 and {x} < {cols} - 1", "b")
        ys = {d: ctx.let(f"min(max({y} + {d}, 0), {rows} - 1)", "r") for d in (-2, -1, 1, 2)}
        xs = {d: ctx.let(f"min(max({x} + {d}, 0), {cols} - 1)", "c") for d in (-2, -1, 1, 2)}
        ys[0], xs[0] = y, x

        def at(dy, dx):
            return ctx.read(src, ys[dy], xs[dx])[0]
        centre = at(0, 0)
        terms = {"C": centre,
                 "D": ctx.let(f"{at(-1, -1)} + {at(1, -1)} + {at(-1, 1)} + {at(1, 1)}", "m"),
                 "A": ctx.let(f"{at(-2, 0)} + {at(2, 0)}", "m"), "B": ctx.let(f"{at(-1, 0)} + {at(1, 0)}", "m"),
                 "E": ctx.let(f"{at(0, -2)} + {at(0, 2)}", "m"), "F": ctx.let(f"{at(0, -1)} + {at(0, 1)}", "m")}
        p = {}
        for k, filt in MHT_FILTERS.items():
            sixteenths = ctx.let(" + ".join(f"{w} * {terms[t]}" for t, w in filt.items()), "m")
            p[k] = ctx.let(saturate(ctx, f"np.float32({sixteenths}) * np.float32(0.0625)", cv2.CV_8U), "m")
        even_x = ctx.let(f"(({x} + {red_x}) & 1) == 0", "b")
        even_y = ctx.let(f"(({y} + {red_y}) & 1) == 0", "b")
        # (B, G, R) by site, as MHCdemosaic's make_3 calls
        b = f"({p['y']} if {even_x} else {p['w']}) if {even_y} else ({p['z']} if {even_x} else {centre})"
        g = f"({p['x']} if {even_x} else {centre}) if {even_y} else ({centre} if {even_x} else {p['x']})"
        r = f"({centre} if {even_x} else {p['z']}) if {even_y} else ({p['w']} if {even_x} else {p['y']})"
        if dcn == 1:
            bgr = [ctx.let(v, "m") for v in (b, g, r)]
            gray = " + ".join(f"{c} * {w}" for c, w in zip(bgr, GRAY_WEIGHTS))
            return [f"(({gray} + 8192) >> 14) if {inside} else 0"]
        out = [f"({v}) if {inside} else 0" for v in (b, g, r)]
        return out + [f"255 if {inside} else 0"] * (dcn == 4)


def mht_node(func, m, code, dcn):
    """The node of demosaicing(src, COLOR_Bayer*_MHT[, dcn]) with the CUDA module's checks: 8UC1
    in; BGR codes give dcn 3 (default) or 4, GRAY codes 1. The first red site is its firstRed,
    which for the GRAY codes it derives from BGR names they never equal: (1, 1) for all four."""
    check_depth(func, m, (cv2.CV_8U,))
    check_channels(func, m, (1,))
    if code in MHT_GRAY:
        dcn, pattern = 1, None
    else:
        dcn = 3 if dcn <= 0 else dcn
        if dcn not in (3, 4):
            raise cv_error(func, f"dcn must be 3 or 4 for code {code}, got {dcn}", StsBadArg)
        pattern = MHT_BGR[code]
    red_x = 0 if pattern in ("RG", "GB") else 1
    red_y = 0 if pattern in ("RG", "GR") else 1
    return node("bayer_mht", [m._value(func)], (red_x, red_y, dcn), (m._rows, m._cols),
                m._rows, m._cols, cv2.CV_8U, dcn)
