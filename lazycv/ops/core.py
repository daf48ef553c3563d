"""Data movement: ROI crops of pending results, fills (setTo), masked selects, copies."""
import cv2

from .._types import DEPTH_RANGE, is_float
from ..errors import StsBadArg, StsUnsupportedFormat, cv_error, refuse_rest
from .base import OpDef, round_int32
from .common import stream_cls, check_same, check_stream, gpumat_cls, node, result, scalar4, src_mat


class Crop(OpDef):
    """A window of the input: output (y, x) reads input (y + oy, x + ox)."""
    name = "crop"
    pointwise = False

    def emit(self, ctx, n, y, x):
        oy, ox = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        return ctx.read(n.inputs[0], ctx.let(f"{y} + {oy}", "y"), ctx.let(f"{x} + {ox}", "x"))


class Fill(OpDef):
    """A constant image (setTo without a mask, or GpuMat(rows, cols, type, s))."""
    name = "fill"

    def emit(self, ctx, n, y, x):
        kind = "i" if not is_float(n.depth) else ("f64" if n.depth == cv2.CV_64F else "f32")
        return [ctx.dyn(n, c, kind) for c in range(n.cn)]


class Select(OpDef):
    """mask ? a : b — how masked writes keep the pixels the mask leaves out. A mask of the
    image's channel count selects each channel by its own (OpenCV's copyTo takes either)."""
    name = "select"

    def emit(self, ctx, n, y, x):
        m = ctx.read(n.inputs[0], y, x)
        a = ctx.read(n.inputs[1], y, x)
        b = ctx.read(n.inputs[2], y, x)
        if len(m) > 1 and len(m) == len(a):
            return [f"{ai} if ({mi} != 0) else {bi}" for mi, ai, bi in zip(m, a, b)]
        cond = " or ".join(f"{v} != 0" for v in m)
        return [f"{ai} if ({cond}) else {bi}" for ai, bi in zip(a, b)]


def crop_node(value, y, x, h, w):
    return node("crop", [value], (), (y, x), h, w, value.depth, value.cn)


def fill_values(depth, s):
    """setTo's scalar converted to the mat's depth (saturate_cast: round half to even, clamp;
    NaN, inf and values past int32 go through cvRound's INT_MIN, as in OpenCV)."""
    if is_float(depth):
        return tuple(float(v) for v in s)
    lo, hi = DEPTH_RANGE[depth]
    return tuple(min(max(round_int32(v), lo), hi) for v in s)


def fill_node(rows, cols, depth, cn, s):
    return node("fill", [], (), fill_values(depth, s), rows, cols, depth, cn)


def mask_mat(func, mask, like, per_channel=False):
    """A CV_8UC1 mask of ``like``'s size (``per_channel``: also CV_8UC(channels), copyTo's)."""
    mask = src_mat(func, mask, "mask")
    if mask._depth != cv2.CV_8U or mask._cn not in ((1, like._cn) if per_channel else (1,)):
        want = f"CV_8UC1 or CV_8UC{like._cn}" if per_channel and like._cn > 1 else "CV_8UC1"
        raise cv_error(func, f"mask must be {want}, got {mask}", StsUnsupportedFormat)
    check_same(func, like, mask, ("src", "mask"), type_too=False)
    return mask


def masked(func, new_value, mask, old_value):
    """The value a masked write leaves: the new value where mask != 0, the old one elsewhere."""
    return node("select", [mask._value(func, "mask"), new_value, old_value], (), (),
                new_value.rows, new_value.cols, new_value.depth, new_value.cn)


def masked_result(func, nd, like, dst, mask, stream):
    """``nd`` handed to the user (``result``), written only where ``mask`` (of ``like``'s
    size) is set: elsewhere a given ``dst`` keeps its values and a new result is zero, as
    OpenCV's masked operations leave them."""
    if mask is not None:
        mask = mask_mat(func, mask, like)
        GpuMat = gpumat_cls()
        if isinstance(dst, GpuMat) and not dst.empty() and \
                (dst._rows, dst._cols, dst._depth, dst._cn) == (nd.rows, nd.cols, nd.depth, nd.cn):
            old = dst._value(func, "dst")
        else:
            old = fill_node(nd.rows, nd.cols, nd.depth, nd.cn, (0, 0, 0, 0))
        nd = masked(func, nd, mask, old)
    return result(func, nd, dst, stream)


def set_to(self, *args, **kw):
    """GpuMat.setTo(s[, mask][, stream]): recorded as a pending write, so a constant image that
    is only consumed by fused ops never has to be written."""
    func = "GpuMat::setTo"
    Stream = stream_cls()
    GpuMat = gpumat_cls()
    s = kw.pop("s", kw.pop("value", None))
    args = list(args)
    mask, stream = kw.pop("mask", None), kw.pop("stream", None)
    if kw:                                   # (before "missing": the unknown keyword is the mistake)
        raise cv_error(func, f"unexpected arguments {sorted(kw)}", StsBadArg)
    if s is None:
        if not args:
            raise cv_error(func, "missing the value to set", StsBadArg)
        s = args.pop(0)
    for a in args:
        if isinstance(a, Stream):
            stream = a
        elif isinstance(a, GpuMat):
            mask = a
        elif a is not None:
            raise cv_error(func, f"unexpected argument {a!r}", StsBadArg)
    check_stream(func, stream)
    s = scalar4(func, s, "value")
    if self.empty():
        return self
    fill = fill_node(self._rows, self._cols, self._depth, self._cn, s)
    if mask is not None:
        mask = mask_mat(func, mask, self)
        self._prepare_write(whole_region=False)
        fill = masked(func, fill, mask, self._value(func))
    else:
        self._prepare_write()
    self._set_pending_write(fill)
    return self


# copyTo's positional forms beyond one GpuMat: the kinds of its arguments (s: a Stream, m: a
# GpuMat) -> what each one is
_COPY_TO_FORMS = {"s": ("stream",), "sm": ("stream", "dst"), "mm": ("mask", "dst"),
                  "ms": ("mask", "stream"), "msm": ("mask", "stream", "dst")}


def _copy_to_positionals(func, args, dst, mask, stream):
    """(dst, mask, stream) by OpenCV's overloads of copyTo, tried in its binding's order:
    ``copyTo([dst])``, ``copyTo(stream[, dst])``, ``copyTo(mask[, dst])``,
    ``copyTo(mask, stream[, dst])`` — so one GpuMat beside a stream is the mask, not dst."""
    if not args:
        return dst, mask, stream
    Stream, GpuMat = stream_cls(), gpumat_cls()
    kinds = ""
    for a in args:
        if isinstance(a, Stream):
            kinds += "s"
        elif isinstance(a, GpuMat):
            kinds += "m"
        else:
            raise cv_error(func, f"unexpected argument {a!r}", StsBadArg)
    if kinds == "m":
        if mask is None and (dst is not None or stream is not None):
            return dst, args[0], stream                    # copyTo(mask, dst=), copyTo(mask, stream=)
        if dst is not None:
            raise cv_error(func, "dst given twice", StsBadArg)
        return args[0], mask, stream
    forms = _COPY_TO_FORMS
    if kinds not in forms:
        raise cv_error(func, "expected copyTo([dst]), copyTo(stream[, dst]), copyTo(mask[, dst]) or "
                             "copyTo(mask, stream[, dst])", StsBadArg)
    got = {"dst": dst, "mask": mask, "stream": stream}
    for name, a in zip(forms[kinds], args):
        if got[name] is not None:
            raise cv_error(func, f"{name} given twice", StsBadArg)
        got[name] = a
    return got["dst"], got["mask"], got["stream"]


def copy_to(self, *args, **kw):
    """GpuMat.copyTo([dst][, mask][, stream]) -> dst."""
    func = "GpuMat::copyTo"
    dst, mask, stream = kw.pop("dst", None), kw.pop("mask", None), kw.pop("stream", None)
    if kw:
        raise cv_error(func, f"unexpected arguments {sorted(kw)}", StsBadArg)
    refuse_rest(func, args, {}, most=3)         # (the overloads take 3 at most; None counts)
    dst, mask, stream = _copy_to_positionals(func, [a for a in args if a is not None], dst, mask, stream)
    check_stream(func, stream)
    src = src_mat(func, self, "src")
    if src._depth == cv2.CV_16F:
        return _copy_on_host(func, src, dst, mask, stream)
    value = src._value(func)
    if mask is not None:
        mask = mask_mat(func, mask, src, per_channel=True)
        GpuMatT = gpumat_cls()
        if dst is None:
            dst = GpuMatT()
        if dst.empty() or dst.size() != src.size() or dst.type() != src.type():
            dst.create(src._rows, src._cols, src.type())
            dst.setTo(0)
        old = dst._value(func, "dst")
        return dst._assign_result(masked(func, value, mask, old))
    copy = node("crop", [value], (), (0, 0), src._rows, src._cols, src._depth, src._cn)
    if dst is None:
        return gpumat_cls()._lazy(copy)
    if dst is self:
        return self
    return dst._assign_result(copy)


def _copy_on_host(func, src, dst, mask, stream):
    """copyTo of a CV_16F GpuMat: through the host (the kernels compute in 32/64-bit floats and
    Numba's CPU target has no float16)."""
    import numpy as np
    from .fallback import cpu_fallback
    if mask is None:
        return cpu_fallback(func, lambda a: a, [src], dst, stream, why="CV_16F data")
    mask = mask_mat(func, mask, src, per_channel=True)
    GpuMatT = gpumat_cls()
    if dst is None:
        dst = GpuMatT()
    if dst.empty() or dst.size() != src.size() or dst.type() != src.type():
        dst.upload(np.zeros_like(src.download()))
    old, m = dst.download(), mask.download()
    keep = (m != 0) if m.ndim == old.ndim else (m != 0)[..., None]
    return cpu_fallback(func, lambda a: np.where(keep, a, old), [src], dst, stream, why="CV_16F data")
