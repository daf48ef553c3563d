"""Per-pixel image ops: look-up tables (createLookUpTable), gammaCorrection, alphaComp,
blendLinear and swapChannels. All fuse with their neighbours.

* A look-up table is a 1 x 256 image on the device, read by the transform at column = pixel
  value (a gather into a tiny source): new table values are new data, never a new kernel. The
  table may have one channel (for every channel of the image) or the image's channel count;
  its depth is the result's (CPU cv::LUT's rule; OpenCV's CUDA module takes 8U tables).
* gammaCorrection is a table too: NPP's forward / inverse gamma (BT.709: 4.5 v below 0.018,
  else 1.099 v^0.45 - 0.099; the inverse below 0.081), rounded to the nearest 8-bit value; the
  alpha of an 8UC4 image is kept.
* alphaComp composes two 4-channel images by Porter and Duff's operators as NPP's AlphaComp:
  colour = c1 * a1 * F1 + c2 * a2 * F2 (the *_PREMUL forms leave out the a1, a2 of colours that
  already carry them), alpha = a1 * F1 + a2 * F2, with alphas scaled to [0, 1] by the depth's
  maximum (1 for 32F); ALPHA_PREMUL multiplies img1's colours by its alpha.
* blendLinear is CPU cv::blendLinear: (p1 w1 + p2 w2) / (w1 + w2 + 1e-5) in float32.
* swapChannels reorders the channels of an 8UC4 image in place.
"""
import cv2
import numpy as np

from .._types import DEPTH_RANGE, DTYPE_DEPTH, is_float
from ..errors import StsBadArg, StsBadSize, StsUnsupportedFormat, binding_class, cv_error
from ..runtime import STATE
from .base import OpDef, saturate
from .common import (check_channels, check_depth, check_same, check_stream, cuda_api, gpumat_cls, int_arg,
                     node, result, src_mat)

# ------------------------------------------------------------------------------------------ LUT


class Lut(OpDef):
    """Output channel c = table[0, src_c] (channel c of the table, or its only channel)."""
    name = "lut"
    pointwise = False

    def emit(self, ctx, n, y, x):
        src, table = n.inputs
        return [ctx.read(table, "0", v)[c if table.cn > 1 else 0] for c, v in enumerate(ctx.read(src, y, x))]


def _table_mat(func, lut):
    """``lut`` (a host array or GpuMat of 256 entries) as lazycv's own 1 x 256 device table."""
    if isinstance(lut, gpumat_cls()):
        lut = src_mat(func, lut, "lut").download()
    if not isinstance(lut, np.ndarray):
        raise cv_error(func, f"lut must be a numpy array or a GpuMat, got {type(lut).__name__}", StsBadArg)
    if lut.dtype not in DTYPE_DEPTH:
        raise cv_error(func, f"unsupported lut dtype {lut.dtype}", StsUnsupportedFormat)
    cn = lut.shape[2] if lut.ndim == 3 else 1
    if lut.ndim > 3 or lut.size != 256 * cn or cn > 4:
        raise cv_error(func, f"lut must have 256 entries of 1 to 4 channels, got shape {lut.shape}", StsBadSize)
    table = gpumat_cls()()
    table.upload(np.ascontiguousarray(lut.reshape((1, 256, cn) if cn > 1 else (1, 256))))
    return table


def lut_node(func, m, table):
    if m._depth != cv2.CV_8U:
        raise cv_error(func, f"src must be CV_8U, got {m}", StsUnsupportedFormat)
    if table._cn not in (1, m._cn):
        raise cv_error(func, f"the table has {table._cn} channels, the image {m._cn} (expected 1 or "
                             f"{m._cn})", StsBadArg)
    return node("lut", [m._value(func), table._value(func, "lut")], (), (), m._rows, m._cols, table._depth, m._cn)


@binding_class
class LookUpTable:
    """cv2.cuda.LookUpTable: ``transform(src[, dst[, stream]])`` maps each pixel through the table."""

    def __init__(self, lut):
        self._table = _table_mat("createLookUpTable", lut)

    def transform(self, src, dst=None, stream=None):
        func = "LookUpTable::transform"
        m = src_mat(func, src)
        return result(func, lut_node(func, m, self._table), dst, stream)


@cuda_api("createLookUpTable")
def createLookUpTable(lut):
    """cv2.cuda.createLookUpTable(lut) -> LookUpTable (lut: 256 entries, 1 or the image's channels)."""
    return LookUpTable(lut)


# ------------------------------------------------------------------------------ gammaCorrection

def gamma_table(forward):
    """NPP's gamma as a 256-entry 8-bit table (BT.709's transfer function and its inverse)."""
    v = np.arange(256) / 255.0
    if forward:
        out = np.where(v < 0.018, 4.5 * v, 1.099 * np.power(v, 0.45) - 0.099)
    else:
        out = np.where(v < 0.0812, v / 4.5, np.power((v + 0.099) / 1.099, 1 / 0.45))
    return np.clip(np.rint(out * 255.0), 0, 255).astype(np.uint8)


_GAMMA_TABLES = {}       # (forward, cn) -> (backend, device table): uploaded once per backend


def _gamma_mat(forward, cn):
    got = _GAMMA_TABLES.get((forward, cn))
    if got is not None and got[0] is STATE.backend:
        return got[1]
    table = np.repeat(gamma_table(forward)[:, None], cn, axis=1)
    if cn == 4:
        table[:, 3] = np.arange(256)                  # alpha passes through
    mat = _table_mat("gammaCorrection", table.reshape(1, 256, cn))
    _GAMMA_TABLES[(forward, cn)] = (STATE.backend, mat)
    return mat


@cuda_api("gammaCorrection")
def gammaCorrection(src, dst=None, forward=True, stream=None):
    """cv2.cuda.gammaCorrection(src[, dst[, forward[, stream]]]) — 8UC3 or 8UC4."""
    func = "gammaCorrection"
    m = src_mat(func, src)
    if m._depth != cv2.CV_8U or m._cn not in (3, 4):
        raise cv_error(func, f"src must be CV_8UC3 or CV_8UC4, got {m}", StsUnsupportedFormat)
    return result(func, lut_node(func, m, _gamma_mat(bool(forward), m._cn)), dst, stream)


# ------------------------------------------------------------------------------------ alphaComp

ALPHA_OPS = {"ALPHA_OVER": 0, "ALPHA_IN": 1, "ALPHA_OUT": 2, "ALPHA_ATOP": 3, "ALPHA_XOR": 4, "ALPHA_PLUS": 5,
             "ALPHA_OVER_PREMUL": 6, "ALPHA_IN_PREMUL": 7, "ALPHA_OUT_PREMUL": 8, "ALPHA_ATOP_PREMUL": 9,
             "ALPHA_XOR_PREMUL": 10, "ALPHA_PLUS_PREMUL": 11, "ALPHA_PREMUL": 12}
# Porter and Duff's factors F1 = k0 + k1 a2, F2 = m0 + m1 a1 of each operator, and whether the
# colours are premultiplied; ALPHA_PREMUL is img1 alone, its colours times its alpha
_PORTER_DUFF = {0: (1, 0, 1, -1), 1: (0, 1, 0, 0), 2: (1, -1, 0, 0), 3: (0, 1, 1, -1), 4: (1, -1, 1, -1),
                5: (1, 0, 1, 0), 12: (1, 0, 0, 0)}
_ALPHA_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_32S, cv2.CV_32F)


def alpha_scale(depth):
    """The value of an opaque alpha: the depth's maximum, 1 for floats."""
    return 1.0 if is_float(depth) else float(DEPTH_RANGE[depth][1])


def alpha_factors(op):
    """(k0, k1, m0, m1, premultiplied) of ``alpha_op``: the kernel's arguments."""
    return _PORTER_DUFF[op if op == 12 else op % 6] + (int(6 <= op < 12),)


class AlphaComp(OpDef):
    """dyn = :func:`alpha_factors`: the operator is an argument, one kernel serves all 13."""
    name = "alpha_comp"

    def emit(self, ctx, n, y, x):
        wt = "f64" if n.depth == cv2.CV_32S else "f32"
        ft = "np.float64" if wt == "f64" else "np.float32"
        p = [f"{ft}({v})" for v in ctx.read(n.inputs[0], y, x)]
        q = [f"{ft}({v})" for v in ctx.read(n.inputs[1], y, x)]
        k0, k1, m0, m1 = (ctx.dyn(n, i, wt) for i in range(4))
        premul = ctx.dyn(n, 4, "i")
        scale = f"{ft}({alpha_scale(n.depth)!r})"
        a1, a2 = ctx.let(f"{p[3]} / {scale}", "a"), ctx.let(f"{q[3]} / {scale}", "a")
        f1, f2 = ctx.let(f"{k0} + {k1} * {a2}", "f"), ctx.let(f"{m0} + {m1} * {a1}", "f")
        w1 = ctx.let(f"{f1} if {premul} == 1 else {a1} * {f1}", "w")
        w2 = ctx.let(f"{f2} if {premul} == 1 else {a2} * {f2}", "w")
        colours = [f"{c1} * {w1} + {c2} * {w2}" for c1, c2 in zip(p[:3], q[:3])]
        alpha = f"({a1} * {f1} + {a2} * {f2}) * {scale}"
        return [saturate(ctx, e, n.depth) for e in colours + [alpha]]


@cuda_api("alphaComp")
def alphaComp(img1, img2, alpha_op, dst=None, stream=None):
    """cv2.cuda.alphaComp(img1, img2, alpha_op[, dst[, stream]]) — 8UC4, 16UC4, 32SC4 or 32FC4."""
    func = "alphaComp"
    a, b = src_mat(func, img1, "img1"), src_mat(func, img2, "img2")
    op = int_arg(func, alpha_op, "alpha_op")
    if op not in ALPHA_OPS.values():
        raise cv_error(func, f"unknown alpha_op {op} (expected ALPHA_OVER ... ALPHA_PREMUL, 0-12)", StsBadArg)
    check_depth(func, a, _ALPHA_DEPTHS, "img1")
    check_channels(func, a, (4,), "img1")
    check_same(func, a, b, ("img1", "img2"))
    nd = node("alpha_comp", [a._value(func, "img1"), b._value(func, "img2")], (), alpha_factors(op),
              a._rows, a._cols, a._depth, 4)
    return result(func, nd, dst, stream)


# ---------------------------------------------------------------------------------- blendLinear

class BlendLinear(OpDef):
    """(p1 w1 + p2 w2) / (w1 + w2 + 1e-5) per channel; the weights are 32FC1 images."""
    name = "blend_linear"

    def emit(self, ctx, n, y, x):
        p, q, w1s, w2s = n.inputs
        (w1,), (w2,) = ctx.read(w1s, y, x), ctx.read(w2s, y, x)
        den = ctx.let(f"{w1} + {w2} + np.float32(1e-5)", "d")
        return [saturate(ctx, f"(np.float32({a}) * {w1} + np.float32({b}) * {w2}) / {den}", n.depth)
                for a, b in zip(ctx.read(p, y, x), ctx.read(q, y, x))]


@cuda_api("blendLinear")
def blendLinear(img1, img2, weights1, weights2, result_=None, stream=None, **kw):
    """cv2.cuda.blendLinear(img1, img2, weights1, weights2[, result[, stream]]) — 8U or 32F images,
    CV_32FC1 weights."""
    func = "blendLinear"
    out = kw.pop("result", result_)
    if kw:
        raise cv_error(func, f"unexpected arguments {sorted(kw)}", StsBadArg)
    a, b = src_mat(func, img1, "img1"), src_mat(func, img2, "img2")
    check_depth(func, a, (cv2.CV_8U, cv2.CV_32F), "img1")
    check_same(func, a, b, ("img1", "img2"))
    ws = [src_mat(func, w, name) for w, name in ((weights1, "weights1"), (weights2, "weights2"))]
    for w, name in zip(ws, ("weights1", "weights2")):
        if w._depth != cv2.CV_32F or w._cn != 1:
            raise cv_error(func, f"{name} must be CV_32FC1, got {w}", StsUnsupportedFormat)
        check_same(func, a, w, ("img1", name), type_too=False)
    nd = node("blend_linear", [a._value(func, "img1"), b._value(func, "img2"), ws[0]._value(func, "weights1"),
                               ws[1]._value(func, "weights2")], (), (), a._rows, a._cols, a._depth, a._cn)
    return result(func, nd, out, stream)


# --------------------------------------------------------------------------------- swapChannels

@cuda_api("swapChannels")
def swapChannels(image, dstOrder, stream=None):
    """cv2.cuda.swapChannels(image, dstOrder[, stream]) -> None: channel c of the result is channel
    dstOrder[c] of the image, in place (8UC4)."""
    func = "swapChannels"
    m = src_mat(func, image, "image")
    if m._depth != cv2.CV_8U or m._cn != 4:
        raise cv_error(func, f"image must be CV_8UC4, got {m}", StsUnsupportedFormat)
    try:
        order = tuple(int_arg(func, v, "dstOrder") for v in dstOrder)
    except TypeError:
        raise cv_error(func, f"dstOrder must be 4 ints, got {dstOrder!r}", StsBadArg)
    if len(order) != 4 or not all(0 <= v <= 3 for v in order):
        raise cv_error(func, f"dstOrder must be 4 channel indices 0-3, got {dstOrder!r}", StsBadArg)
    check_stream(func, stream)
    result(func, node("reorder", [m._value(func, "image")], (order,), (), m._rows, m._cols, m._depth, 4), m, stream)


__all__ = ["createLookUpTable", "LookUpTable", "gammaCorrection", "alphaComp", "blendLinear", "swapChannels",
           "ALPHA_OPS", "gamma_table", "alpha_scale"]
