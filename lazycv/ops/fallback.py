"""The correct path for valid calls lazycv cannot fuse yet: run CPU OpenCV on the downloaded
inputs and upload the answer. Counted in ``stats()['fallbacks']``; ``LAZYCV_DEBUG=1`` logs it."""
import sys

import cv2

from .. import runtime
from ..errors import StsBadArg, cv_error
from ..runtime import STATE
from .common import check_dst, check_stream, gpumat_cls


def cpu_fallback(func, fn, mats, dst=None, stream=None, why=""):
    check_dst(func, dst)
    check_stream(func, stream)
    hosts = [m.download() for m in mats]
    try:
        out = fn(*hosts)
    except cv2.error as e:
        msg = getattr(e, "err", None) or str(e).strip().splitlines()[-1]
        raise cv_error(func, msg, getattr(e, "code", StsBadArg)) from e
    STATE.stats["fallbacks"] += 1
    if runtime.debug_level() >= 1:
        print(f"[lazycv] fallback: {func} ran on CPU OpenCV ({why})", file=sys.stderr)
    GpuMat = gpumat_cls()
    if dst is None:
        dst = GpuMat()
    dst.upload(out)
    return dst
