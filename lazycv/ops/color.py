"""cvtColor: channel reorders, alpha add/drop and the gray conversions here; the colour spaces
(color_spaces.py) and the Bayer and YUV 4:2:0 layouts (color_layouts.py), all fused. The codes
left (VNG and edge-aware demosaicing, packed 4:2:2 YUV, BGR -> YUV 4:2:0) fall back to CPU
OpenCV (correct, counted as a fallback)."""
import cv2

from .._types import DEPTH_ALPHA, is_float
from ..errors import StsBadArg, StsBadSize, cv_error
from .base import OpDef
from .common import check_channels, check_depth, cuda_api, int_arg, node, result, src_mat
from .fallback import cpu_fallback
from . import color_layouts, color_spaces

ALPHA = -1
_OPENCV_MAJOR = int(cv2.__version__.split(".")[0])
# Integer gray weights (B, G, R) and shift: OpenCV 5 uses 15 bits, 4.x 14 bits (checked bit-exact
# against CPU cvtColor for 8U and 16U).
GRAY_FIXED = ((3735, 19235, 9798), 15) if _OPENCV_MAJOR >= 5 else ((1868, 9617, 4899), 14)
GRAY_FLOAT = (0.114, 0.587, 0.299)


def _c(name):
    return getattr(cv2, "COLOR_" + name, None)


# code -> (input channels, output channel sources; ALPHA = opaque alpha)
REORDER = {}
for _name, _scn, _order in [
        ("BGR2BGRA", 3, (0, 1, 2, ALPHA)), ("RGB2RGBA", 3, (0, 1, 2, ALPHA)),
        ("BGRA2BGR", 4, (0, 1, 2)), ("RGBA2RGB", 4, (0, 1, 2)),
        ("BGR2RGBA", 3, (2, 1, 0, ALPHA)), ("RGB2BGRA", 3, (2, 1, 0, ALPHA)),
        ("RGBA2BGR", 4, (2, 1, 0)), ("BGRA2RGB", 4, (2, 1, 0)),
        ("BGR2RGB", 3, (2, 1, 0)), ("RGB2BGR", 3, (2, 1, 0)),
        ("BGRA2RGBA", 4, (2, 1, 0, 3)), ("RGBA2BGRA", 4, (2, 1, 0, 3)),
        ("GRAY2BGR", 1, (0, 0, 0)), ("GRAY2RGB", 1, (0, 0, 0)),
        ("GRAY2BGRA", 1, (0, 0, 0, ALPHA)), ("GRAY2RGBA", 1, (0, 0, 0, ALPHA))]:
    if _c(_name) is not None:
        REORDER[_c(_name)] = (_scn, _order)

# code -> (input channels, index of blue in the input)
TO_GRAY = {}
for _name, _scn, _bidx in [("BGR2GRAY", 3, 0), ("RGB2GRAY", 3, 2), ("BGRA2GRAY", 4, 0), ("RGBA2GRAY", 4, 2)]:
    TO_GRAY[_c(_name)] = (_scn, _bidx)

_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_32F)
KNOWN_CODES = {getattr(cv2, n) for n in dir(cv2) if n.startswith("COLOR_")}


class Reorder(OpDef):
    """Output channel k = input channel order[k], or the depth's opaque alpha."""
    name = "reorder"

    def emit(self, ctx, n, y, x):
        v = ctx.read(n.inputs[0], y, x)
        alpha = repr(DEPTH_ALPHA[n.depth])
        return [alpha if i == ALPHA else v[i] for i in n.static[0]]


class Gray(OpDef):
    """Y = 0.299 R + 0.587 G + 0.114 B: fixed point for integers (bit-exact with OpenCV),
    float for 32F."""
    name = "gray"

    def emit(self, ctx, n, y, x):
        (bidx,) = n.static
        v = ctx.read(n.inputs[0], y, x)
        b, g, r = v[bidx], v[1], v[2 - bidx]
        if is_float(n.depth):
            ft = "np.float64" if n.depth == cv2.CV_64F else "np.float32"
            cb, cg, cr = (f"{ft}({c!r})" for c in GRAY_FLOAT)
            return [f"{b} * {cb} + {g} * {cg} + {r} * {cr}"]
        (cb, cg, cr), sh = GRAY_FIXED
        return [f"({b} * {cb} + {g} * {cg} + {r} * {cr} + {1 << (sh - 1)}) >> {sh}"]


def cvt_node(func, m, code, dcn=0):
    """The node for a fused cvtColor code, or None when the code needs the fallback.

    As CPU OpenCV 5 does: a colour code takes a 3- or 4-channel image (its alpha, if any, is
    copied when the output has one) or a 1-channel one (as grey), and ``dcn`` 3 or 4 chooses
    the output's channels; the grey codes take 3 or 4 channels and ignore ``dcn``."""
    if code in REORDER:
        scn, order = REORDER[code]
        colour_in = scn != 1
        check_channels(func, m, (1, 3, 4) if colour_in else (1,))
        if dcn not in (0, 3, 4):
            raise cv_error(func, f"dcn must be 0, 3 or 4 for this code, got {dcn}", StsBadArg)
        check_depth(func, m, _DEPTHS)
        rgb = order[:3] if m._cn != 1 else (0, 0, 0)
        alpha = (3 if colour_in and m._cn == 4 else ALPHA,) if (dcn or len(order)) == 4 else ()
        order = rgb + alpha
        return node("reorder", [m._value(func)], (order,), (), m._rows, m._cols, m._depth, len(order))
    if code in TO_GRAY:
        scn, bidx = TO_GRAY[code]
        check_channels(func, m, (3, 4))
        check_depth(func, m, _DEPTHS)
        return node("gray", [m._value(func)], (bidx,), (), m._rows, m._cols, m._depth, 1)
    if code in color_spaces.CODES and (code, m._depth) not in color_spaces.NOT_FUSED:
        op, static, depths, to_bgr = color_spaces.CODES[code]
        check_channels(func, m, (3,) if to_bgr else (3, 4))
        check_depth(func, m, depths)
        if to_bgr and dcn not in (0, 3, 4):
            raise cv_error(func, f"dcn must be 0, 3 or 4 for this code, got {dcn}", StsBadArg)
        out_cn = (dcn or 3) if to_bgr else 3
        return node(op, [m._value(func)], color_spaces.static_for(op, static, m._depth, out_cn), (),
                    m._rows, m._cols, m._depth, out_cn)
    if code in color_layouts.YUV420 or code in color_layouts.YUV420_GRAY:
        return yuv420_node(func, m, code, dcn)
    if code in color_layouts.BAYER:
        red, bidx, code_dcn = color_layouts.BAYER[code]
        check_channels(func, m, (1,))
        check_depth(func, m, (cv2.CV_8U, cv2.CV_16U))
        if dcn not in (0, 3, 4):
            raise cv_error(func, f"dcn must be 0, 3 or 4 for this code, got {dcn}", StsBadArg)
        if m._rows < 3 or m._cols < 3:
            return None                      # (CPU OpenCV's answer for images without an inside)
        out_cn = dcn or code_dcn
        return node("bayer", [m._value(func)], (red, bidx, out_cn), (m._rows, m._cols),
                    m._rows, m._cols, m._depth, out_cn)
    return None


def yuv420_node(func, m, code, dcn):
    """A YUV 4:2:0 frame, (H * 3 / 2) x W 8-bit single channel, to H x W colour or grey."""
    check_channels(func, m, (1,))
    check_depth(func, m, (cv2.CV_8U,))
    if m._cols % 2 or m._rows % 3:
        raise cv_error(func, f"a YUV 4:2:0 frame needs an even width and a height divisible by 3 "
                             f"((H * 3 / 2) x W), got {m._cols}x{m._rows}", StsBadSize)
    rows = m._rows * 2 // 3
    if code in color_layouts.YUV420_GRAY:
        return node("crop", [m._value(func)], (), (0, 0), rows, m._cols, m._depth, 1)
    if dcn not in (0, 3, 4):
        raise cv_error(func, f"dcn must be 0, 3 or 4 for this code, got {dcn}", StsBadArg)
    planar, u_first, bidx, code_dcn = color_layouts.YUV420[code]
    out_cn = dcn or code_dcn
    return node("yuv420", [m._value(func)], (planar, u_first, bidx, out_cn), (rows, m._cols),
                rows, m._cols, m._depth, out_cn)


@cuda_api("cvtColor")
def cvtColor(src, code, dst=None, dcn=0, stream=None):
    """cv2.cuda.cvtColor(src, code[, dst[, dcn[, stream]]])."""
    func = "cvtColor"
    m = src_mat(func, src)
    code = int_arg(func, code, "code")              # 2.7 is an error, as in OpenCV's binding
    dcn = 0 if dcn is None else int_arg(func, dcn, "dcn")
    nd = cvt_node(func, m, code, dcn)
    if nd is not None:
        return result(func, nd, dst, stream)
    if code not in KNOWN_CODES:
        raise cv_error(func, f"unknown color conversion code {code}", StsBadArg)
    return cpu_fallback(func, lambda a: cv2.cvtColor(a, code, dstCn=dcn), [m], dst, stream,
                        why=f"colour code {code} is not fused yet")


# OpenCV CUDA's Malvar-He-Cutler codes (cudaimgproc's DemosaicTypes): no CPU equivalent
MHT_CODES = range(256, 264)
BAYER_CODES = {c for c in KNOWN_CODES
               if any(n.startswith(("COLOR_Bayer", "COLOR_BAYER")) and getattr(cv2, n) == c for n in dir(cv2))}


@cuda_api("demosaicing")
def demosaicing(src, code, dst=None, dcn=-1, stream=None):
    """cv2.cuda.demosaicing(src, code[, dst[, dcn[, stream]]]): the Bayer codes of cvtColor
    (bilinear, fused, as CPU OpenCV computes them) and the CUDA module's Malvar-He-Cutler codes
    (fused, as its kernel computes them)."""
    func = "demosaicing"
    m = src_mat(func, src)
    code = int_arg(func, code, "code")
    dcn = 0 if dcn is None or dcn == -1 else int_arg(func, dcn, "dcn")
    if code in MHT_CODES:
        return result(func, color_layouts.mht_node(func, m, code, dcn), dst, stream)
    if code not in BAYER_CODES:
        raise cv_error(func, f"unsupported code {code}: expected a COLOR_Bayer* code", StsBadArg)
    nd = cvt_node(func, m, code, dcn)
    if nd is not None:
        return result(func, nd, dst, stream)
    return cpu_fallback(func, lambda a: cv2.demosaicing(a, code, dstCn=dcn), [m], dst, stream,
                        why=f"Bayer code {code} is not fused yet")


def reference(src, code, dcn=0):
    return cv2.cvtColor(src, code, dstCn=dcn)
