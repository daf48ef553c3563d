"""``cv2.cuda.Stream`` and ``cv2.cuda.Event``.

A Stream orders work; with lazy execution its main job is to say *when* results are needed:
``waitForCompletion`` computes the pending work and waits for it. On the CPU backend there is no
asynchrony and these are thin.
"""
import time

from .. import runtime
from ..errors import StsBadArg, cv_error
from ..runtime import STATE


class Stream:
    """A CUDA stream (numba-cuda stream on the cuda backend; a no-op elsewhere)."""
    __slots__ = ("_flags", "_native", "_null", "__weakref__")

    def __init__(self, flags=0, allocator=None):
        if not isinstance(flags, int):
            allocator, flags = flags, 0
        self._flags, self._native, self._null = flags, None, False

    @classmethod
    def Null(cls):
        s = cls()
        s._null = True
        return s

    def _handle(self):
        if self._null:
            return None
        be = runtime.backend()
        if not be.is_device or STATE.backend_name != "cuda":
            return None
        if self._native is None:
            self._native = be.cuda.stream()
        return self._native

    def waitForCompletion(self):
        with STATE.lock:
            runtime.flush()
            runtime.backend().synchronize(self._handle())

    def queryIfComplete(self):
        with STATE.lock:
            runtime.flush()
            h = self._handle()
            if h is None:
                runtime.backend().synchronize(None)
                return True
            return h.query() if hasattr(h, "query") else True

    def waitEvent(self, event):
        if not isinstance(event, Event):
            raise cv_error("Stream::waitEvent", f"expected a cv2.cuda.Event, got {type(event).__name__}", StsBadArg)
        event.waitForCompletion()

    def cudaPtr(self):
        h = self._handle()
        return 0 if h is None else int(h.handle.value if hasattr(h.handle, "value") else h.handle)

    def __eq__(self, other):
        return self is other or (isinstance(other, Stream) and self._null and other._null)

    def __hash__(self):
        return id(self) if not self._null else 0


class Event:
    """A timing/ordering point. ``record`` flushes pending work so the event means "after it"."""
    DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS = 0, 1, 2, 4
    __slots__ = ("_flags", "_time", "__weakref__")

    def __init__(self, flags=0):
        self._flags, self._time = flags, None

    def record(self, stream=None):
        with STATE.lock:
            runtime.flush()
            runtime.backend().synchronize(None if stream is None else stream._handle())
            self._time = time.perf_counter()

    def waitForCompletion(self):
        with STATE.lock:
            runtime.backend().synchronize(None)

    def queryIfComplete(self):
        return True

    @staticmethod
    def elapsedTime(start, end):
        """Milliseconds between two recorded events."""
        if start._time is None or end._time is None:
            raise cv_error("Event::elapsedTime", "both events must be recorded", StsBadArg)
        if (start._flags | end._flags) & Event.DISABLE_TIMING:
            raise cv_error("Event::elapsedTime", "an event made with Event_DISABLE_TIMING has no time "
                                                 "(as CUDA's cudaEventElapsedTime)", StsBadArg)
        return (end._time - start._time) * 1000.0
