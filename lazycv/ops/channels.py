"""split and merge: channel moves, fused (split's planes come out of one kernel)."""
import cv2

from .._types import MAX_CHANNELS
from ..errors import StsBadArg, StsUnmatchedFormats, cv_error
from .base import OpDef
from .common import check_same, check_stream, cuda_api, node, result, src_mat


class Channel(OpDef):
    """One channel of the input: static (index,)."""
    name = "channel"

    def emit(self, ctx, n, y, x):
        return [ctx.read(n.inputs[0], y, x)[n.static[0]]]


class Merge(OpDef):
    """The inputs' channels side by side."""
    name = "merge"

    def emit(self, ctx, n, y, x):
        out = []
        for v in n.inputs:
            out.extend(ctx.read(v, y, x))
        return out


@cuda_api("split")
def split(src, dst=None, stream=None):
    """cv2.cuda.split(src[, dst[, stream]]) -> list of single-channel GpuMats."""
    func = "split"
    m = src_mat(func, src)
    check_stream(func, stream)
    v = m._value(func)
    planes = [node("channel", [v], (c,), (), m._rows, m._cols, m._depth, 1) for c in range(m._cn)]
    if dst is not None:
        if not isinstance(dst, (list, tuple)) or len(dst) != m._cn:
            raise cv_error(func, f"dst must be a list of {m._cn} GpuMats", StsBadArg)
        return [result(func, p, d, stream) for p, d in zip(planes, dst)]
    return [result(func, p, None, stream) for p in planes]


@cuda_api("merge")
def merge(src, dst=None, stream=None):
    """cv2.cuda.merge(list of GpuMats[, dst[, stream]]) -> dst, or a numpy array without dst.

    OpenCV's binding takes a list of GpuMats (not an InputArray), so without ``dst`` its first
    overload, the host-array one, answers: the merged image comes back downloaded, as a numpy
    array (opencv/opencv#17910: by design). Code written for OpenCV relies on that; a GpuMat
    ``dst`` (an empty ``cv2.cuda_GpuMat()`` will do) keeps the result on the device, lazy."""
    func = "merge"
    if not isinstance(src, (list, tuple)) or not src:
        raise cv_error(func, "src must be a non-empty list of GpuMats", StsBadArg)
    mats = [src_mat(func, s, f"src[{i}]") for i, s in enumerate(src)]
    first = mats[0]
    for i, m in enumerate(mats[1:], 1):
        check_same(func, first, m, ("src[0]", f"src[{i}]"), type_too=False)
        if m._depth != first._depth:
            raise cv_error(func, f"src[{i}] has another depth than src[0]", StsUnmatchedFormats)
    cn = sum(m._cn for m in mats)
    if cn > MAX_CHANNELS:
        raise cv_error(func, f"the merged image would have {cn} channels (at most {MAX_CHANNELS})", StsBadArg)
    nd = node("merge", [m._value(func, "src") for m in mats], (), (), first._rows, first._cols, first._depth, cn)
    if dst is None:
        check_stream(func, stream)
        return result(func, nd, None, stream).download(stream=stream)
    return result(func, nd, dst, stream)


def reference_split(src):
    return cv2.split(src)


def reference_merge(planes):
    return cv2.merge(planes)
