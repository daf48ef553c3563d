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
    """A CUDA stream (numba-cuda stream on the cuda backend; a no-op elsewhere).

    lazycv launches its fused kernels on the default stream when a result is needed, whatever
    stream the calls named; a stream lazycv created is a blocking one, so the default stream
    orders it. A stream of other code (``wrapStream``: torch's and cupy's are non-blocking) is
    ordered explicitly: see ``runtime.foreign_stream_call``."""
    __slots__ = ("_flags", "_native", "_null", "_foreign", "__weakref__")

    def __init__(self, flags=0, allocator=None):
        if type(flags).__name__.endswith("Allocator"):
            allocator, flags = flags, 0                  # Stream(allocator)
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise cv_error("Stream", f"expected Stream([flags]) or Stream(allocator), got {flags!r}", StsBadArg)
        self._flags, self._native, self._null = flags, None, False
        self._foreign = None          # the address of a stream of other code (wrapStream)

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
            self._native = be.cuda.external_stream(self._foreign) if self._foreign else be.cuda.stream()
        return self._native

    def _is_foreign(self):
        """True when work of this stream needs explicit ordering against lazycv's launches."""
        return self._foreign is not None and not self._null and STATE.backend_name == "cuda"

    def _finish(self):
        """Compute pending work and wait for it and for this stream's own queue (lazycv's
        kernels ran on the default stream, which a wait on this stream alone would miss)."""
        runtime.flush()
        be = runtime.backend()
        h = self._handle()
        be.synchronize(be.default_stream() if h is not None else None)
        if h is not None:
            be.synchronize(h)

    def waitForCompletion(self):
        with STATE.lock:
            self._finish()

    def queryIfComplete(self):
        with STATE.lock:
            runtime.flush()
            be = runtime.backend()
            h = self._handle()
            return be.idle(None) and (h is None or be.idle(h))

    def waitEvent(self, event):
        if not isinstance(event, Event):
            raise cv_error("Stream::waitEvent", f"expected a cv2.cuda.Event, got {type(event).__name__}", StsBadArg)
        event.waitForCompletion()

    def cudaPtr(self):
        """The stream's CUDA handle. Without real streams (the CPU backend, the simulator) a
        stream other than the null one answers a stable non-zero token, which ``wrapStream``
        takes back, as code that checks ``cudaPtr() != 0`` expects."""
        if self._null:
            return 0
        if self._foreign is not None:
            return self._foreign
        h = self._handle()
        if h is None:
            return id(self)
        return int(h.handle.value if hasattr(h.handle, "value") else h.handle)

    def __eq__(self, other):
        return self is other or (isinstance(other, Stream) and self._null and other._null)

    def __hash__(self):
        return id(self) if not self._null else 0


class Event:
    """A timing/ordering point. ``record`` flushes pending work so the event means "after it"."""
    DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS = 0, 1, 2, 4
    __slots__ = ("_flags", "_time", "__weakref__")

    def __init__(self, flags=0):
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise cv_error("Event", f"flags must be a cv2.cuda.Event_* constant, got {flags!r}", StsBadArg)
        self._flags, self._time = flags, None

    def record(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise cv_error("Event::record", f"expected a cv2.cuda.Stream, got {type(stream).__name__}", StsBadArg)
        with STATE.lock:
            if stream is None:
                runtime.flush()
                runtime.backend().synchronize(None)
            else:
                stream._finish()
            self._time = time.perf_counter()

    def waitForCompletion(self):
        with STATE.lock:
            runtime.backend().synchronize(None)

    def queryIfComplete(self):
        return True

    @staticmethod
    def elapsedTime(start, end):
        """Milliseconds between two recorded events."""
        if not isinstance(start, Event) or not isinstance(end, Event):
            raise cv_error("Event::elapsedTime", f"expected two cv2.cuda.Events, got {type(start).__name__} and "
                                                 f"{type(end).__name__}", StsBadArg)
        if start._time is None or end._time is None:
            raise cv_error("Event::elapsedTime", "both events must be recorded", StsBadArg)
        if (start._flags | end._flags) & Event.DISABLE_TIMING:
            raise cv_error("Event::elapsedTime", "an event made with Event_DISABLE_TIMING has no time "
                                                 "(as CUDA's cudaEventElapsedTime)", StsBadArg)
        return (end._time - start._time) * 1000.0


def wrapStream(cudaStreamMemoryAddress):
    """``cv2.cuda.wrapStream(ptr)``: a Stream over a CUDA stream other code created (torch's
    ``torch.cuda.current_stream().cuda_stream``, cupy's ``Stream.ptr``); 0 is the null stream.
    lazycv neither synchronises it beyond what its calls ask nor destroys it."""
    ptr = cudaStreamMemoryAddress
    if isinstance(ptr, bool) or not isinstance(ptr, int) and not hasattr(ptr, "__index__"):
        raise cv_error("wrapStream", f"cudaStreamMemoryAddress must be an integer address, got "
                                     f"{type(ptr).__name__}", StsBadArg)
    ptr = int(ptr.__index__())
    if ptr < 0:
        raise cv_error("wrapStream", f"cudaStreamMemoryAddress must be >= 0, got {ptr}", StsBadArg)
    s = Stream()
    if ptr == 0:
        s._null = True
    else:
        s._foreign = ptr
    return s
