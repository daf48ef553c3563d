"""Streams for real: which stream each launch and copy goes on, and what it waits for.

The rules, as sentences:

* A result recorded with ``stream=s`` (or inside ``lazycv.on_stream(s)``) is launched on ``s``
  when a flush computes it; a flush may launch on several streams. A batched launch whose
  items name different streams goes on the first item's stream; a kernel no result names (an
  intermediate: a hard cut, a reduction's statistic) on that of the flush's first result that
  names one.
* Streams are ordered by events, never by a device synchronisation: every launch and copy on a
  stream, once any lazycv Stream exists, leaves an event on each buffer it touches, and a later
  launch or copy of that buffer on another stream waits for that event first. So a download on
  ``s`` after work on ``s`` sees it (same stream), a download on another stream waits for the
  kernel that wrote its buffer, and a recycled pool buffer is never written while a launch on
  another stream may still use it. This is stricter than OpenCV (which leaves the user's race
  a race) and costs one event per launch, only while streams are in use.
* The buffers are known by their addresses: a pooled buffer handed out again has the address
  its storage had, so its last use is found even though the array object is new.
* lazycv's streams are *blocking* streams (``cudaStreamCreate``, OpenCV's ``Stream()``):
  work lazycv still places on the default stream (histograms, integrals, table uploads of replayed
  programs) is then ordered against them by CUDA itself. ``Stream(cudaStreamNonBlocking)`` is
  accepted and made blocking too, for the same reason.
* On the CPU backend and the simulator a launch is done when it returns, so nothing waits;
  the same bookkeeping runs (``tracing()`` shows it), which is what the tests check.

While streams are in use, the backend's ``launch`` and ``launch_batched`` are wrapped (on the
backend instance, by ``watch``) so that every launch — the flush's, a replayed program's, a
copy kernel's — is routed here without each call site knowing about streams.
"""
import contextlib
import time

import numpy as np

from .runtime import STATE

ACTIVE = False        # a lazycv Stream exists: launches and copies leave events on their buffers
CURRENT = None        # the facade Stream the launch in progress goes on (None: the default stream)
RECORD_ON = None      # the stream results are recorded on when a call names none (on_stream)
TAPE = None           # a list while a graph is captured (lazycv.graphs): every launch and copy
TRACE = None          # a list while tracing(): (what, stream name, streams it waited for)
CALLER_ORDERS = False # inside caller_orders(): the caller's own events order its streams
_EVENT_WAITS = {}     # while tracing: stream -> names of the streams its event waits named
_LAST = {}            # buffer address -> (facade stream or None, backend event, number) of its last use
_NUMBER = [0]         # launches and copies numbered in issue order (what a host wait covers)
_PRUNE_AT = 4096


class HostEvent:
    """An event where work is done when its call returns (CPU backend, simulator): the host
    time at record."""
    __slots__ = ("time",)

    def __init__(self):
        self.time = time.perf_counter()


def engage():
    """Streams are in use from now on (a lazycv Stream was made): watch the backend's launches."""
    global ACTIVE
    ACTIVE = True
    watch(STATE.backend)


def watch(be):
    """Wrap ``be``'s launch entry points (once per backend instance) so that each launch goes
    through ``_launch``: on the current stream, after what it must wait for."""
    if be is None or be.__dict__.get("_lazycv_watched"):
        return
    for name, at in (("launch", 3), ("launch_batched", 6)):
        plain = getattr(be, name)
        setattr(be, name, _watched(be, plain, at))
    be._lazycv_watched = be.launch      # (what a launch on the instance is when nothing else replaced it)


def _watched(be, plain, arrays_at):
    def launch(*args, stream=None, **kw):
        if not ACTIVE and TAPE is None:
            return plain(*args, stream=stream, **kw)
        who = CURRENT if stream is None else stream
        if CALLER_ORDERS and TAPE is None:
            if TRACE is not None:
                _trace_ordered("launch", who)
            return plain(*args, stream=native(who), **kw)
        bufs = args[arrays_at]
        handle = enter(who, bufs, "launch")
        plain(*args, stream=handle, **kw)
        leave(who, bufs)
        if TAPE is not None:
            TAPE.append(("launch", plain, args, kw, who))
    return launch


def native(stream):
    """The backend's handle for a facade stream (None: the default stream, or no real streams)."""
    return None if stream is None else stream._handle()


def name(stream):
    return "default" if stream is None else stream._label()


def key(stream):
    """The stream work named with ``stream`` goes on: None for the default/null stream and for
    streams of other code (runtime.foreign_stream_call orders those)."""
    if stream is None or stream._null or stream._foreign is not None:
        return None
    return stream


def select(by_node, kernels):
    """The stream of the launch computing ``kernels`` (the runtime's flush): the first output
    result that named one; for kernels whose outputs no result names (an intermediate: a hard
    cut, a reduction's statistic), the first of the flush's results that named one."""
    global CURRENT
    watch(STATE.backend)
    outputs = [m for k in kernels for n in k.outputs for m in by_node.get(id(n), ())]
    CURRENT = _first_stream(outputs if outputs else (m for mats in by_node.values() for m in mats))


def select_mats(mats):
    """As ``select`` for a replayed program: the first of its result mats that named a stream."""
    global CURRENT
    watch(STATE.backend)
    CURRENT = _first_stream(mats)


def _first_stream(mats):
    """The stream the first of ``mats`` that named one goes on (None: none did)."""
    for m in mats:
        if m._stream is not None:
            return key(m._stream)
    return None


def _address(a):
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    if isinstance(a, (int, float, np.generic)):
        return None
    p = getattr(a, "_lazycv_params", None)
    if p is not None:
        return p[4]
    ptr = getattr(a, "device_ctypes_pointer", None)
    if ptr is not None:
        return ptr.value or 0
    ary = getattr(a, "_ary", None)            # the simulator's device array: a host array inside
    return ary.__array_interface__["data"][0] if ary is not None else None


def enter(stream, bufs, what):
    """Before a launch or copy on ``stream`` touching ``bufs``: wait for each buffer's last use
    on another stream. Returns the backend handle to launch on."""
    be = STATE.backend
    handle = native(stream)
    waited = []
    for b in bufs:
        addr = _address(b)
        last = _LAST.get(addr) if addr is not None else None
        if last is not None and last[0] is not stream:     # (a use the host waited for is gone: done)
            be.wait_event(handle, last[1])
            waited.append(name(last[0]))
    if TRACE is not None:
        TRACE.append((what, name(stream), tuple(sorted(set(waited)))))
    return handle


def leave(stream, bufs):
    """After a launch or copy on ``stream``: it is each buffer's last use."""
    be = STATE.backend
    ev = be.record_event(native(stream), timing=False)
    _NUMBER[0] += 1
    use = (stream, ev, _NUMBER[0])
    for b in bufs:
        addr = _address(b)
        if addr is not None:
            _LAST[addr] = use
    if len(_LAST) > _PRUNE_AT:
        for addr, (_, e, _n) in list(_LAST.items()):
            if be.event_done(e):
                del _LAST[addr]


def mark(stream):
    """(stream, number) of the point after everything issued so far on ``stream``."""
    return key(stream), _NUMBER[0]


def waited(point):
    """The host waited for ``point`` (``mark``'s): the uses it covers need no device wait."""
    stream, number = point
    for addr, (s, _, n) in list(_LAST.items()):
        if s is stream and n <= number:
            del _LAST[addr]


@contextlib.contextmanager
def copying(stream, buf):
    """An upload or download of ``buf`` on ``stream`` (a facade Stream or None): ordered after
    the buffer's last use on another stream; a copy kernel it needs goes on the same stream."""
    global CURRENT
    if TAPE is not None:
        from .errors import StsBadArg, cv_error
        raise cv_error("lazycv.capture", "a captured function copies between host and device; a graph "
                                         "takes its inputs as arguments and returns its results", StsBadArg)
    who = key(stream)
    if not ACTIVE or CALLER_ORDERS:
        if CALLER_ORDERS and TRACE is not None:
            _trace_ordered("copy", who)
        yield native(who)
        return
    watch(STATE.backend)
    outer = CURRENT
    CURRENT = who
    try:
        yield enter(who, (buf,), "copy")
        leave(who, (buf,))
    finally:
        CURRENT = outer


def claim(buf):
    """A fresh pooled ``buf`` about to be written on the current stream outside a launch (a
    staging copy): after its storage's last use on another stream."""
    if ACTIVE:
        enter(CURRENT, (buf,), "copy")


def record(stream, timing=True, reuse=None):
    """An event after everything launched so far on ``stream`` (a facade Stream or None):
    ``reuse`` recorded again (CUDA's semantics for an event recorded twice), else a new one."""
    return STATE.backend.record_event(native(key(stream)), timing=timing, reuse=reuse)


@contextlib.contextmanager
def caller_orders():
    """Launches and copies inside are ordered by the caller's own events (a producer-consumer
    loop whose stages wait for each other's events, and whose host waits before it reuses a
    buffer): they go on their streams without the per-buffer events. The caller makes sure
    nothing launched before still uses the memory it touches (media.StreamedLoop synchronises
    once when it starts)."""
    global CALLER_ORDERS
    outer = CALLER_ORDERS
    CALLER_ORDERS = True
    try:
        yield
    finally:
        CALLER_ORDERS = outer


def _trace_ordered(what, stream):
    """A caller-ordered launch or copy, traced with the streams whose events its stream waited
    for since its last one."""
    TRACE.append((what, name(stream), tuple(sorted(_EVENT_WAITS.pop(stream, ())))))


def forget_uses():
    """The host waited for the whole device: no buffer's last use needs a device wait."""
    _LAST.clear()


def wait(stream, event, recorded_on=None):
    """Later work on ``stream`` waits for ``event`` (recorded on the facade stream
    ``recorded_on``, which tracing reports)."""
    STATE.backend.wait_event(native(key(stream)), event)
    if TRACE is not None:
        TRACE.append(("wait_event", name(key(stream)), ()))
        if recorded_on is not key(stream):
            _EVENT_WAITS.setdefault(key(stream), set()).add(name(recorded_on))


def synchronize(stream):
    """The host waits for what ``stream`` holds (the default stream for None)."""
    STATE.backend.synchronize(native(key(stream)))
    waited(mark(stream))


@contextlib.contextmanager
def on_stream(stream):
    """Results recorded inside (by calls that name no stream) go on ``stream``."""
    global RECORD_ON
    outer = RECORD_ON
    RECORD_ON = stream
    try:
        yield stream
    finally:
        RECORD_ON = outer


@contextlib.contextmanager
def tracing():
    """Collect (what, stream, streams waited for) of each launch, copy and event wait inside:
    the ordering the CPU backend cannot show by timing."""
    global TRACE
    outer, TRACE = TRACE, []
    _EVENT_WAITS.clear()
    try:
        yield TRACE
    finally:
        TRACE = outer
        _EVENT_WAITS.clear()
