"""GpuMat.convertTo: depth conversion with scale and shift, saturating like OpenCV."""
import numbers

import cv2

from .._types import DEPTH_DTYPE, is_float
from ..errors import StsBadArg, cv_error
from .base import OpDef, saturate
from .common import check_stream, depth_arg, gpumat_cls, node, result, src_mat, stream_cls

_WIDE = (cv2.CV_32S, cv2.CV_64F)


def math_type(*depths):
    """OpenCV computes scaled conversions in double when 32S or 64F is involved, else float."""
    return ("np.float64", "f64") if any(d in _WIDE for d in depths) else ("np.float32", "f32")


class Convert(OpDef):
    """dst = saturate_cast<dst depth>(src * alpha + beta); static (scaled,)."""
    name = "convert"

    def emit(self, ctx, n, y, x):
        src = n.inputs[0]
        v = ctx.read(src, y, x)
        (scaled,) = n.static
        ft, kind = math_type(src.depth, n.depth)
        if not scaled:
            if is_float(n.depth):
                return list(v)
            return [saturate(ctx, e, n.depth, src_is_float=is_float(src.depth)) for e in v]
        a, b = ctx.dyn(n, 0, kind), ctx.dyn(n, 1, kind)
        if kind == "f32":                         # one rounding, as OpenCV's fused multiply-add
            return [saturate(ctx, ctx.spell("fma_f32", e, a, b), n.depth) for e in v]
        return [saturate(ctx, f"{ft}({e}) * {a} + {b}", n.depth) for e in v]


def convert_node(value, depth, alpha=1.0, beta=0.0):
    scaled = not (alpha == 1 and beta == 0)
    return node("convert", [value], (scaled,), (float(alpha), float(beta)),
                value.rows, value.cols, depth, value.cn)


def convert_to(self, *args, **kw):
    """GpuMat.convertTo(rtype[, dst[, alpha[, beta]]]) / (rtype, stream[, dst]) /
    (rtype, alpha, beta, stream[, dst]) -> dst."""
    func = "GpuMat::convertTo"
    Stream = stream_cls()
    GpuMat = gpumat_cls()
    args = list(args)
    rtype = kw.pop("rtype", None)
    dst, stream = kw.pop("dst", None), kw.pop("stream", None)
    alpha, beta = kw.pop("alpha", None), kw.pop("beta", None)
    if kw:                                   # (before "missing": the unknown keyword is the mistake)
        raise cv_error(func, f"unexpected arguments {sorted(kw)}", StsBadArg)
    if rtype is None:
        if not args:
            raise cv_error(func, "missing rtype", StsBadArg)
        rtype = args.pop(0)
    nums = []
    for a in args:
        if type(a) is float or type(a) is int:
            nums.append(float(a))
        elif isinstance(a, Stream):
            stream = a
        elif isinstance(a, GpuMat):
            dst = a
        elif isinstance(a, numbers.Number) and not isinstance(a, bool):
            nums.append(float(a))
        elif a is not None:
            raise cv_error(func, f"unexpected argument {a!r}", StsBadArg)
    if nums:
        if alpha is None:
            alpha = nums.pop(0)
        if nums and beta is None:
            beta = nums.pop(0)
        if nums:
            raise cv_error(func, "too many numeric arguments (expected alpha, beta)", StsBadArg)
    alpha = 1.0 if alpha is None else float(alpha)
    beta = 0.0 if beta is None else float(beta)
    check_stream(func, stream)
    src = src_mat(func, self)
    try:
        rtype = int(rtype)
    except Exception:
        raise cv_error(func, f"rtype must be an int type code, got {rtype!r}", StsBadArg)
    depth = depth_arg(func, rtype, src._depth)
    if cv2.CV_16F in (depth, src._depth):          # (Numba's CPU target has no float16)
        from .fallback import cpu_fallback
        return cpu_fallback(func, lambda a: reference(a, depth, alpha, beta), [src], dst, stream,
                            why="CV_16F is converted on the host")
    if depth == src._depth and alpha == 1 and beta == 0:
        nd = node("crop", [src._value(func)], (), (0, 0), src._rows, src._cols, src._depth, src._cn)
    else:
        nd = convert_node(src._value(func), depth, alpha, beta)
    return result(func, nd, dst, stream)


def reference(src, depth, alpha=1.0, beta=0.0):
    """Mat::convertTo on the CPU (cv2 exposes no Python binding for it): OpenCV's rule written
    with numpy — math in float (double with 32S/64F), round half to even, saturate."""
    import numpy as np
    dt = DEPTH_DTYPE[depth]
    src_depth = {v: k for k, v in DEPTH_DTYPE.items()}[src.dtype]
    ft = np.float64 if math_type(src_depth, depth)[1] == "f64" else np.float32
    v = src.astype(ft) * ft(alpha) + ft(beta) if (alpha, beta) != (1, 0) else src.astype(np.float64)
    if dt.kind == "f":
        return v.astype(dt)
    info = np.iinfo(dt)
    r = np.rint(v.astype(np.float64))
    r = np.where((r >= -2 ** 31) & (r < 2 ** 31), r, info.min)     # cvRound overflow -> INT_MIN
    return np.clip(r, info.min, info.max).astype(dt)
