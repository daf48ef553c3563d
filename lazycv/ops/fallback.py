"""The correct path for valid calls lazycv cannot fuse yet: run CPU OpenCV on the downloaded
inputs and upload the answer. Counted in ``stats()['fallbacks']``; ``LAZYCV_DEBUG=1`` logs it."""
import sys

from .. import runtime
from ..runtime import STATE
from .common import check_dst, check_stream, gpumat_cls


def cpu_fallback(func, fn, mats, dst=None, stream=None, why=""):
    check_dst(func, dst)
    check_stream(func, stream)
    hosts = [m.download() for m in mats]
    out = fn(*hosts)
    STATE.stats["fallbacks"] += 1
    if runtime.debug_level() >= 1:
        print(f"[lazycv] fallback: {func} ran on CPU OpenCV ({why})", file=sys.stderr)
    GpuMat = gpumat_cls()
    if dst is None:
        dst = GpuMat()
    dst.upload(out)
    return dst
