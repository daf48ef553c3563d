"""``cv2.cuda.Stream`` and ``cv2.cuda.Event``.

A Stream orders work: a result recorded with ``stream=s`` is launched on ``s`` when it is
computed, uploads and downloads with ``stream=s`` are copies on ``s`` (asynchronous from and to
page-locked ``HostMem``), and streams are ordered against each other by events (lazycv/streams.py
has the rules). An Event is a point on a stream: on CUDA a CUDA event, so ``elapsedTime`` is
measured on the device; on the CPU backend and the simulator, where work is done when its launch
returns, the host time at ``record``.
"""
import itertools

from .. import runtime, streams
from ..errors import GpuApiCallError, StsBadArg, binding_class, binding_function, cv_error
from ..runtime import STATE

_NUMBERS = itertools.count(1)


@binding_class
class Stream:
    """A CUDA stream. ``Stream()`` makes a new one (a blocking stream, as OpenCV's
    ``cudaStreamCreate``), ``Stream.Null()`` is the default stream, ``wrapStream`` takes one of
    other code (torch's, cupy's), which lazycv orders by events around its calls
    (``runtime.foreign_stream_call``) rather than launching on it."""
    __slots__ = ("_flags", "_native", "_null", "_foreign", "_number", "__weakref__")

    def __init__(self, flags=0, allocator=None):
        if type(flags).__name__.endswith("Allocator"):
            allocator, flags = flags, 0                  # Stream(allocator)
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise cv_error("Stream", f"expected Stream([flags]) or Stream(allocator), got {flags!r}", StsBadArg)
        self._flags, self._native, self._null = flags, None, False
        self._foreign = None          # the address of a stream of other code (wrapStream)
        self._number = next(_NUMBERS)
        with STATE.lock:
            runtime.backend()
            streams.engage()

    @classmethod
    def Null(cls):
        s = cls.__new__(cls)
        s._flags, s._native, s._null, s._foreign, s._number = 0, None, True, None, 0
        return s

    def _label(self):
        return "null" if self._null else f"stream{self._number}"

    def _handle(self):
        """The numba-cuda stream on the cuda backend (None for the null stream and elsewhere)."""
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
        """Launch pending work and wait for what this stream holds."""
        runtime.flush()
        be = runtime.backend()
        streams.synchronize(self)
        if self._foreign is not None:   # its own queue (lazycv's launches for its calls: synced above)
            be.synchronize(self._handle())

    def waitForCompletion(self):
        with STATE.lock:
            self._finish()

    def queryIfComplete(self):
        """True only when everything queued on this stream is done (pending work is launched
        first: it counts as queued)."""
        with STATE.lock:
            runtime.flush()
            be = runtime.backend()
            own = be.idle(streams.native(streams.key(self)))
            return own and (self._foreign is None or be.idle(self._handle()))

    def waitEvent(self, event):
        """Work queued on this stream from now on waits for ``event`` (no host wait)."""
        if not isinstance(event, Event):
            raise cv_error("Stream::waitEvent", f"expected a cv2.cuda.Event, got {type(event).__name__}", StsBadArg)
        with STATE.lock:
            if event._event is not None:
                streams.wait(self, event._event, event._point[0])

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

    def __repr__(self):
        return f"<cv2.cuda.Stream {self._label()}>"


@binding_class
class Event:
    """A point on a stream. ``record(stream)`` launches pending work and marks the point after
    everything queued on ``stream`` so far; ``waitForCompletion`` waits for it on the host,
    ``Stream.waitEvent`` makes another stream wait for it."""
    DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS = 0, 1, 2, 4
    __slots__ = ("_flags", "_event", "_point", "__weakref__")

    def __init__(self, flags=0):
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise cv_error("Event", f"flags must be a cv2.cuda.Event_* constant, got {flags!r}", StsBadArg)
        self._flags, self._event, self._point = flags, None, None

    def record(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise cv_error("Event::record", f"expected a cv2.cuda.Stream, got {type(stream).__name__}", StsBadArg)
        with STATE.lock:
            runtime.flush()
            # (one CUDA event per Event, recorded again: creating one costs more than recording)
            self._event = streams.record(stream, timing=not self._flags & Event.DISABLE_TIMING,
                                         reuse=self._event)
            self._point = streams.mark(stream)

    def waitForCompletion(self):
        with STATE.lock:
            if self._event is not None:
                runtime.backend().event_synchronize(self._event)
                streams.waited(self._point)

    def queryIfComplete(self):
        """True when the work before the recorded point is done (an event never recorded is)."""
        with STATE.lock:
            return self._event is None or runtime.backend().event_done(self._event)

    @staticmethod
    def elapsedTime(start, end):
        """Milliseconds between two recorded events (on CUDA measured by the device)."""
        if not isinstance(start, Event) or not isinstance(end, Event):
            raise cv_error("Event::elapsedTime", f"expected two cv2.cuda.Events, got {type(start).__name__} and "
                                                 f"{type(end).__name__}", StsBadArg)
        if start._event is None or end._event is None:
            raise cv_error("Event::elapsedTime", "both events must be recorded", StsBadArg)
        if (start._flags | end._flags) & Event.DISABLE_TIMING:
            raise cv_error("Event::elapsedTime", "an event made with Event_DISABLE_TIMING has no time "
                                                 "(as CUDA's cudaEventElapsedTime)", StsBadArg)
        with STATE.lock:
            ms = runtime.backend().elapsed_ms(start._event, end._event)
        if ms is None:                    # (OpenCV: cudaEventElapsedTime's error, as cv2.error)
            raise cv_error("Event::elapsedTime", "an event has not completed yet (cudaErrorNotReady): wait for "
                                                 "it first (Event.waitForCompletion)", GpuApiCallError)
        return ms


@binding_function("wrapStream")
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
