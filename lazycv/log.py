"""What lazycv tells you while it runs: the ``lazycv`` logger, PerformanceWarning, NVTX ranges.

* ``logging.getLogger("lazycv")`` has only a NullHandler, so an application's own logging
  configuration decides what is shown. ``LAZYCV_DEBUG=1`` adds a stderr handler (plans,
  compiles, fallbacks); ``LAZYCV_DEBUG=2`` also logs every generated kernel's source.
* :class:`lazycv.PerformanceWarning` (a UserWarning) when the same op chain compiles again
  and again (a structural parameter that changes every call) or a call runs on CPU OpenCV
  inside a loop: the results are right, the time is not.
* NVTX ranges ("lazycv flush", "lazycv launch <kernel>") around flushes and launches when the
  ``nvtx`` package is importable, so Nsight Systems shows where a frame's time goes;
  ``LAZYCV_NVTX=0`` turns them off.
"""
import contextlib
import logging
import os
import sys
import time
import warnings

from .errors import PerformanceWarning

logger = logging.getLogger("lazycv")
logger.addHandler(logging.NullHandler())

# A chain compiled more than STORM_COMPILES times within STORM_SECONDS is a recompile storm;
# a function falling back more than HOT_FALLBACKS times within HOT_SECONDS runs in a hot loop.
STORM_COMPILES, STORM_SECONDS = 8, 60.0
HOT_FALLBACKS, HOT_SECONDS = 50, 10.0


def debug_level():
    """LAZYCV_DEBUG as an int (0 when unset or not a number); read at each use, so a test or
    a long-running process can switch it on and off."""
    try:
        return int(os.environ.get("LAZYCV_DEBUG", "0"))
    except ValueError:
        return 0


class _StderrHandler(logging.Handler):
    """LAZYCV_DEBUG's handler: writes to whatever sys.stderr is at the time (pytest swaps it)."""

    def emit(self, record):
        try:
            print(self.format(record), file=sys.stderr)
        except Exception:           # logging must never break the computation
            self.handleError(record)


_debug_handler = _StderrHandler(logging.DEBUG)
_debug_handler.setFormatter(logging.Formatter("[lazycv] %(message)s"))


def debugging(level=1):
    """True when a debug message of ``level`` would be shown: LAZYCV_DEBUG >= level (which
    attaches the stderr handler), or level 1 and the application's logging enabled DEBUG for
    "lazycv"."""
    if debug_level() >= level:
        if _debug_handler not in logger.handlers:
            logger.addHandler(_debug_handler)
            if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
                logger.setLevel(logging.DEBUG)
        return True
    if _debug_handler in logger.handlers:            # LAZYCV_DEBUG was switched off again
        logger.removeHandler(_debug_handler)
    return level <= 1 and logger.isEnabledFor(logging.DEBUG)


def debug(message, level=1):
    if debugging(level):
        logger.debug(message)


# ---------------------------------------------------------------- PerformanceWarning

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel():
    """The warnings stacklevel of the first caller outside lazycv (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class _Burst:
    """Counts events per key within a sliding window of ``seconds``; says once per key when
    more than ``limit`` happened in one window."""

    def __init__(self, limit, seconds):
        self.limit, self.seconds = limit, seconds
        self.times, self.fired = {}, set()

    def hit(self, key):
        if key in self.fired:
            return False
        now = time.monotonic()
        times = self.times.setdefault(key, [])
        times.append(now)
        while times and now - times[0] > self.seconds:
            times.pop(0)
        if len(times) > self.limit:
            self.fired.add(key)
            del self.times[key]
            return True
        return False


_compiles = _Burst(STORM_COMPILES, STORM_SECONDS)
_fallbacks = _Burst(HOT_FALLBACKS, HOT_SECONDS)


def op_chain(signature):
    """The op names of a kernel signature (codegen.KernelLayout.signature, or a batched
    kernel's key), without their parameters: what stays the same in a recompile storm."""
    if signature and signature[0] == "batch":
        return tuple(op for kind in signature[1:] for op in op_chain(kind[0]))
    return tuple(e[0] for e in signature if len(e) == 5 and isinstance(e[0], str))


def note_compile(signature, from_disk):
    """A kernel was made ready in this process (compiled, or ``from_disk``: Numba's cache)."""
    chain = op_chain(signature)
    if debugging():
        how = "loaded from the disk cache" if from_disk else "compiled"
        logger.debug(f"kernel {' -> '.join(chain)} {how}")
    if _compiles.hit(chain):
        warnings.warn(
            f"lazycv: the op chain {' -> '.join(chain)} compiled more than {STORM_COMPILES} kernels "
            f"within {STORM_SECONDS:.0f} s: a parameter that is part of the kernel's identity (a "
            "type, channel count, interpolation, border mode or colour code) changes from call to "
            "call; keep it fixed, or see docs/observability.md", PerformanceWarning,
            stacklevel=_user_stacklevel())


def note_fallback(func, why=""):
    """A cv2.cuda call ran on CPU OpenCV (ops/fallback.py counts and warns once per function)."""
    debug(f"fallback: {func} ran on CPU OpenCV ({why})")
    if _fallbacks.hit(func):
        warnings.warn(
            f"lazycv: cv2.cuda {func} ran on CPU OpenCV more than {HOT_FALLBACKS} times within "
            f"{HOT_SECONDS:.0f} s: inside a loop each call copies its data to the host and back and "
            "splits the fused kernels around it; lazycv.supported() lists what is fused",
            PerformanceWarning, stacklevel=_user_stacklevel())


# ---------------------------------------------------------------- NVTX

def _load_nvtx():
    if os.environ.get("LAZYCV_NVTX", "1") == "0":
        return None
    try:
        import nvtx
        return nvtx if hasattr(nvtx, "annotate") else None
    except Exception:               # not installed (or broken): no ranges
        return None


_nvtx = _load_nvtx()
NVTX_ON = _nvtx is not None
_NO_RANGE = contextlib.nullcontext()


def nvtx_range(message):
    """A context manager marking ``message`` as an NVTX range (a no-op without ``nvtx``)."""
    if _nvtx is None:
        return _NO_RANGE
    return _nvtx.annotate(message, domain="lazycv")
