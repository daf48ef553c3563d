"""The correct path for valid calls lazycv cannot fuse: run CPU OpenCV on the downloaded inputs
and upload the answer. Each call is counted in ``stats()['fallbacks']`` (``LAZYCV_DEBUG=1`` logs
it), and the first fallback of each function in a process warns with :class:`FallbackWarning`, so
a user learns which calls leave the device without reading the counters."""
import os
import sys
import warnings

import cv2

from ..log import note_fallback
from ..errors import StsBadArg, StsNotImplemented, cv_error
from ..runtime import STATE
from .common import check_dst, check_stream, gpumat_cls


class FallbackWarning(UserWarning):
    """A cv2.cuda call ran on CPU OpenCV (once per function and process; silence it with
    ``warnings.filterwarnings("ignore", category=lazycv.FallbackWarning)``)."""


_warned = set()          # functions that have warned in this process


def count_fallback(func, why=""):
    """Record one CPU OpenCV run of ``func``: the counter, the debug log, the one-time warning."""
    STATE.stats["fallbacks"] += 1
    note_fallback(func, why)             # the debug log; a PerformanceWarning in a hot loop
    if func not in _warned:
        _warned.add(func)
        warnings.warn(f"lazycv: cv2.cuda {func} runs on CPU OpenCV" + (f" ({why})" if why else "")
                      + "; its data goes to the host and back", FallbackWarning, stacklevel=_user_frame())


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frame():
    """The warnings stacklevel of the first caller outside lazycv (the user's cv2.cuda call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def run_cpu(func, fn, *args):
    """``fn(*args)`` with a CPU OpenCV error reported as ``func``'s cv2.error."""
    try:
        return fn(*args)
    except cv2.error as e:
        msg = getattr(e, "err", None) or str(e).strip().splitlines()[-1]
        raise cv_error(func, msg, getattr(e, "code", StsBadArg)) from e


def cpu_fallback(func, fn, mats, dst=None, stream=None, why=""):
    check_dst(func, dst)
    check_stream(func, stream)
    hosts = [m.download() for m in mats]
    out = run_cpu(func, fn, *hosts)
    count_fallback(func, why)
    GpuMat = gpumat_cls()
    if dst is None:
        dst = GpuMat()
    dst.upload(out)
    return dst


def cpu_opencv(func, path):
    """``cv2.<path>`` (e.g. "bgsegm.createBackgroundSubtractorMOG"), or a cv2.error naming what
    this OpenCV build lacks: several algorithms live in opencv-contrib (cv2.bgsegm, cv2.optflow;
    in OpenCV 5 also the HOG and cascade detectors), which a plain opencv-python has not."""
    obj = cv2
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise cv_error(func, f"lazycv runs {func} through CPU OpenCV, and this OpenCV build "
                                 f"({cv2.__version__}) has no cv2.{path}: install "
                                 "opencv-contrib-python(-headless) of the same version", StsNotImplemented)
    return obj
