"""Media patterns: the streamed frame loop (upload, compute and download overlapped) and the
delay buffer (a statistic of frame n steering frame n + k without the host waiting for it).

``StreamedLoop`` is the producer-consumer loop a video pipeline writes by hand with cv2.cuda
streams: N page-locked host buffers and N device buffers, a copy stream each way and a compute
stream, events between them. While frame i computes, frame i + 1 uploads and frame i - 1
downloads; the host waits only when it needs a slot back, for that slot's download event.

``DelayBuffer`` is a ring of k + 1 one-pixel device slots: ``push(stat)`` writes frame n's
statistic into slot n mod (k + 1) and hands back the slot written k pushes earlier (the initial
value for the first k). Nothing is downloaded: the consumer (``cv2.cuda.multiply(frame, gain)``,
any op taking a device scalar) reads the slot in its kernel.
"""
import numbers
from collections import deque

import numpy as np

from . import ir, runtime, streams
from ._types import DEPTH_DTYPE, make_type, split_type
from .errors import StsBadArg, StsUnmatchedFormats, cv_error
from .facade.gpumat import GpuMat
from .facade.hostmem import HostMem
from .facade.stream import Event, Stream
from .runtime import STATE

on_stream = streams.on_stream
PUSH_LOG = None          # a list while a graph is captured: the DelayBuffers pushed (lazycv.graphs)


class _Slot:
    """One frame in flight: its host and device buffers and the events between the stages."""
    __slots__ = ("index", "pinned_in", "device_in", "pinned_out", "uploaded", "computed", "downloaded",
                 "single", "results", "graph", "in_key", "out_keys", "lane", "in_lane")

    def __init__(self):
        self.index = None
        self.pinned_in = None
        self.device_in = GpuMat()
        self.pinned_out = []
        self.uploaded, self.computed, self.downloaded = Event(Event.DISABLE_TIMING), Event(
            Event.DISABLE_TIMING), Event(Event.DISABLE_TIMING)
        self.single = True
        self.results = ()         # fn's GpuMats, kept until downloaded (see _deliver)
        self.graph = None         # fn captured for this slot (graph=True): its outputs are the slot's
        self.in_key = None        # (shape, dtype) of the frames device_in holds
        self.out_keys = None      # (rows, cols, depth, cn) of each pinned_out buffer
        self.lane = None          # graph=True's steady state (_Lane), once the slot has one
        self.in_lane = False      # the slot's frame in flight went through its lane


class StreamedLoop:
    """``for i, out in lazycv.StreamedLoop(frames, fn, depth=3): ...``

    ``frames``: an iterable of host images (numpy arrays or ``cv2.cuda.HostMem``; numpy frames
    are copied into page-locked memory first, HostMem ones are uploaded as they are). ``fn``
    takes the frame's GpuMat and returns a GpuMat or a list/tuple of them (its cv2.cuda calls
    need no ``stream=``: they are recorded on the loop's compute stream). Yields ``(i, out)``
    in frame order, ``out`` the host copy of fn's result(s) — page-locked memory the loop
    reuses ``depth`` frames later, so it is valid until the next iteration; ``copy=True``
    yields arrays of your own.

    Equal to the serial loop ``fn(upload(frame)).download()`` on every backend; on CUDA the
    three stages of consecutive frames overlap.

    ``graph=True``: ``fn`` computes the same thing every frame (no Python decision that
    changes between frames, no upload or download inside — lazycv.capture's rule), so each
    slot captures it once (lazycv.capture) and replays it for later frames: no recording or
    planning per frame, one CUDA Graph launch on CUDA. The host then keeps up with the copy
    engines (bench/w5.py). From a slot's second frame of one size on, its frames go through
    the slot's *lane*: the copies, events and graph launch issued straight to the backend,
    none of the facade's per-call checks (``lane_frames`` counts those frames).

    Iterating the loop again (after ``loop.frames = more_frames``, say the next clip) reuses
    its streams and slots — their graphs, lanes and page-locked buffers — so only the first
    pass pays for capturing and allocating; a new loop starts from nothing."""

    def __init__(self, frames, fn, depth=3, copy=False, graph=False):
        if not callable(fn):
            raise cv_error("StreamedLoop", f"fn must be callable, got {type(fn).__name__}", StsBadArg)
        if isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 1:
            raise cv_error("StreamedLoop", f"depth must be an integer >= 1, got {depth!r}", StsBadArg)
        self.frames, self.fn, self.depth, self.copy = frames, fn, int(depth), bool(copy)
        self.graph = bool(graph)
        self.upload_stream = self.compute_stream = self.download_stream = None
        self.lane_frames = 0
        self._slots = self._backend = None
        self._busy = False

    def __iter__(self):
        with STATE.lock:
            runtime.flush()
            be = runtime.backend()
            # a loop iterated again (``loop.frames = next_clip``) keeps its streams and slots:
            # its graphs, lanes and page-locked buffers; not while another pass over it runs
            mine = not self._busy
            kept = self._slots if mine and self._backend is be else None
            if kept is None:
                kept = (Stream(), Stream(), Stream()), [_Slot() for _ in range(self.depth)]
                if mine:
                    self._slots, self._backend = kept, be
            if mine:
                self.upload_stream, self.compute_stream, self.download_stream = kept[0]
            # the loop orders its stages by its own events, and the host waits for a slot's
            # download before it reuses the slot's memory: no per-buffer events are needed
            # once nothing launched before the loop still runs
            be.synchronize()
            streams.forget_uses()
        trio, slots = kept
        for slot in slots:                          # (a pass left early: its frames are done)
            slot.index, slot.in_lane, slot.results = None, False, ()
        if mine:
            self._busy = True
        try:
            yield from self._run(trio, slots)
        finally:
            if mine:
                self._busy = False

    def _run(self, trio, slots):
        in_flight = deque()
        for i, frame in enumerate(self.frames):
            slot = slots[i % self.depth]
            if slot.index is not None:              # its frame i - depth goes out first
                yield self._deliver(in_flight.popleft())
            with streams.caller_orders():
                self._submit(trio, slot, i, frame)
            in_flight.append(slot)
        while in_flight:
            yield self._deliver(in_flight.popleft())

    def _submit(self, trio, slot, i, frame):
        up, compute, down = trio
        if isinstance(frame, HostMem):
            host = frame
        elif isinstance(frame, np.ndarray):
            # the slot's page-locked buffer: free again, since its last upload came before the
            # download this slot's previous frame was delivered after
            if slot.pinned_in is None or slot.pinned_in.createMatHeader().shape != frame.shape or \
                    slot.pinned_in.createMatHeader().dtype != frame.dtype:
                slot.pinned_in = HostMem(frame)
            else:
                np.copyto(slot.pinned_in.createMatHeader(), frame)
            host = slot.pinned_in
        else:
            raise cv_error("StreamedLoop", f"frame {i} is a {type(frame).__name__}; expected a numpy array "
                                           "or a cv2.cuda.HostMem", StsBadArg)
        slot.index = i
        hdr = host.createMatHeader()
        lane = slot.lane
        if lane is not None and lane.in_key == (hdr.shape, hdr.dtype) and lane.run(hdr):
            slot.in_lane = True
            self.lane_frames += 1
            return
        new_size = slot.in_key != (hdr.shape, hdr.dtype)
        if new_size:
            # new device memory for the slot: it may be a pooled buffer the compute stream
            # still reads (no per-buffer events in the loop), so that stream finishes first
            compute.waitForCompletion()
            slot.in_key = (hdr.shape, hdr.dtype)
            slot.device_in = GpuMat()         # (not a graph's input slot of the old shape)
            slot.lane = None
        slot.device_in.upload(host, up)
        slot.uploaded.record(up)
        compute.waitEvent(slot.uploaded)
        if self.graph:
            if slot.graph is None:
                from .graphs import capture
                slot.graph = capture(self.fn)
            out = slot.graph(slot.device_in, stream=compute)
            if new_size:
                # later frames of this size upload straight into the graph's input: no copy
                # a replay
                slot.device_in = slot.graph.input_slots(slot.device_in)[0]
        else:
            with streams.on_stream(compute):
                out = self.fn(slot.device_in)
        slot.single = isinstance(out, GpuMat)
        outs = [out] if slot.single else list(out)
        if not outs or not all(isinstance(m, GpuMat) for m in outs):
            raise cv_error("StreamedLoop", "fn must return a GpuMat or a list/tuple of GpuMats", StsBadArg)
        with STATE.lock:
            for m in outs:                   # launched on the compute stream
                if m._node is not None:
                    m._stream = compute
            runtime.flush(runtime.pending_for(outs))
        slot.computed.record(compute)
        down.waitEvent(slot.computed)
        while len(slot.pinned_out) < len(outs):
            slot.pinned_out.append(HostMem())
        del slot.pinned_out[len(outs):]
        keys = [(m._rows, m._cols, m._depth, m._cn) for m in outs]
        if keys != slot.out_keys:             # (HostMem.create parses its arguments: once a shape)
            for (rows, cols, depth, cn), host_out in zip(keys, slot.pinned_out):
                host_out.create(rows, cols, make_type(depth, cn))
            slot.out_keys = keys
        for m, host_out in zip(outs, slot.pinned_out):
            m.download(host_out.createMatHeader(), down)
        slot.downloaded.record(down)
        slot.results = outs
        if self.graph and slot.lane is None:
            slot.lane = _Lane.of(trio, slot)

    def _deliver(self, slot):
        if slot.in_lane:
            slot.in_lane = False
            outs = slot.lane.finish()
        else:
            slot.downloaded.waitForCompletion()
            # only now may the results' device memory go back to the pool: a later frame's
            # kernel writing it earlier would have to wait for this download (streams.py)
            slot.results = ()
            outs = [h.createMatHeader() for h in slot.pinned_out]
        if self.copy:
            outs = [o.copy() for o in outs]
        i, slot.index = slot.index, None
        return i, outs[0] if slot.single else tuple(outs)


class _Lane:
    """A graph slot's frame in its steady state, issued straight to the backend's lane
    (backends/lanes.py): the copy into the graph's input, the events between the stages, the
    graph's launch and the copies out into the slot's page-locked outputs — no facade call, no
    GpuMat made. Everything it addresses is fixed while the slot's frame size stays the same:
    the graph's input and output buffers (kept alive by its tape) and the slot's page-locked
    outputs. Whatever does not fit (a delay buffer in the graph, a region of a bigger buffer,
    lazy work still reading the input, checks or tracing on) keeps the general path."""
    __slots__ = ("ops", "tape", "in_alloc", "in_buf", "in_addr", "in_bytes", "in_key", "copies_out",
                 "host_outs", "nbytes_out", "up", "compute", "down", "compute_stream", "uploaded",
                 "computed", "downloaded")

    @classmethod
    def of(cls, trio, slot):
        """The slot's lane, or None when its frames cannot take one."""
        be = STATE.backend
        ops = be.lane()
        tape = slot.graph.tape_for(slot.device_in)
        if ops is None or tape is None or tape.delays or len(tape.slots) != 1 or \
                tape.slots[0] is not slot.device_in or len(tape.outputs) != len(slot.pinned_out):
            return None
        lane = cls()
        lane.ops, lane.tape = ops, tape
        m = slot.device_in
        lane.in_key = slot.in_key
        lane.in_alloc, lane.in_buf = m._alloc, m._alloc.buf
        lane.in_addr, lane.in_bytes = _dense_region(be, m._alloc.buf, m._y0, m._x0, m._rows, m._cols, m._cn)
        if lane.in_addr is None:
            return None
        lane.copies_out, lane.host_outs = [], []
        for (alloc, y0, x0, rows, cols, depth, cn), host in zip(tape.outputs, slot.pinned_out):
            addr, nbytes = _dense_region(be, alloc.buf, y0, x0, rows, cols, cn)
            arr = host.createMatHeader()
            if addr is None or nbytes != arr.nbytes or not arr.flags.c_contiguous:
                return None
            lane.copies_out.append((arr.__array_interface__["data"][0], addr, nbytes))
            lane.host_outs.append(arr)
        lane.nbytes_out = sum(n for _, _, n in lane.copies_out)
        lane.up, lane.compute, lane.down = (ops.stream(s._handle()) for s in trio)
        lane.compute_stream = trio[1]
        # the slot's own events where its general frames made them (the backend's: what the
        # lane records on too), so that a lane costs no new events
        lane.uploaded, lane.computed, lane.downloaded = (
            e._event if e._event is not None and STATE.backend_name == "cuda" else ops.event()
            for e in (slot.uploaded, slot.computed, slot.downloaded))
        return lane

    def run(self, host):
        """Issue one frame (``host``: its page-locked array); False (nothing done) when this
        frame needs the general path."""
        a = self.in_alloc
        if runtime.OBSERVERS or streams.TRACE is not None or a.buf is not self.in_buf or a.writers or \
                ir.has_readers(a.buf) or host.nbytes != self.in_bytes or not host.flags.c_contiguous:
            return False
        ops, up, down = self.ops, self.up, self.down
        stats = STATE.stats
        with STATE.lock:
            ops.copy_in(self.in_addr, host.__array_interface__["data"][0], self.in_bytes, up)
            stats["bytes_h2d"] += self.in_bytes
            ops.record(self.uploaded, up)
            ops.wait(self.compute, self.uploaded)
            self.tape.launch(self.compute_stream)
            ops.record(self.computed, self.compute)
            ops.wait(down, self.computed)
            for dst, src, nbytes in self.copies_out:
                ops.copy_out(dst, src, nbytes, down)
            stats["bytes_d2h"] += self.nbytes_out
            ops.record(self.downloaded, down)
        return True

    def finish(self):
        """The host waits for the frame's copies out; its outputs."""
        self.ops.synchronize(self.downloaded)
        return list(self.host_outs)


def _dense_region(be, buf, y0, x0, rows, cols, cn):
    """(address, bytes) of a region that is whole dense rows of ``buf``; (None, 0) otherwise."""
    item = buf.dtype.itemsize
    row = buf.shape[1] * item
    if x0 or cols * cn != buf.shape[1] or buf.strides[0] != row or (len(buf.strides) > 1 and buf.strides[1] != item):
        return None, 0
    return be.pointer(buf) + y0 * row, rows * row


class DelayBuffer:
    """``delayed = buf.push(stat)``: frame n's statistic in, frame n - k's out, on the device.

    ``k``: the delay in frames (0: the statistic itself). ``like``: a GpuMat whose size and
    type the statistics have (typically a 1x1 reduction result such as ``cv2.cuda.calcSum``'s,
    or a 1x1 derived from it); ``initial``: the value the first k pushes hand back (a number or
    a per-channel tuple). The slots are fixed memory, so a push is one small kernel and nothing
    waits for the host. Inside a captured graph (lazycv.graphs) the graph is captured once per
    ring position, so every replay reads and writes the slots of its frame."""

    def __init__(self, k, like, initial=0.0):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise cv_error("DelayBuffer", f"k must be an integer >= 0, got {k!r}", StsBadArg)
        if not isinstance(like, GpuMat) or like.empty():
            raise cv_error("DelayBuffer", f"like must be a non-empty GpuMat, got {type(like).__name__}", StsBadArg)
        self.k, self.count = int(k), 0
        rows, cols, typ = like.size()[1], like.size()[0], like.type()
        depth, cn = split_type(typ)
        values = list(initial) if isinstance(initial, (tuple, list)) else [initial] * cn
        if len(values) < cn or not all(isinstance(v, numbers.Real) for v in values):
            raise cv_error("DelayBuffer", f"initial must be a number or {cn} numbers, got {initial!r}", StsBadArg)
        # uploaded, not setTo: memory holding a fill is read as that constant by fused kernels,
        # and a captured graph would keep the constant after the slot changes
        start = np.empty((rows, cols, cn), DEPTH_DTYPE[depth])
        start[...] = values[:cn]
        self.slots = []
        for _ in range(self.k + 1):
            slot = GpuMat()
            slot.upload(start if cn > 1 else start[:, :, 0])
            self.slots.append(slot)
        self.size, self.type = like.size(), typ

    @property
    def phase(self):
        """Which slot the next push writes (0 .. k)."""
        return self.count % (self.k + 1)

    def push(self, stat):
        """Store ``stat`` (a GpuMat of the buffer's size and type) as this frame's; returns the
        slot holding the statistic of k pushes ago (the initial value until k were pushed). The
        returned GpuMat is that slot: it keeps its value until the push k + 1 frames later."""
        if not isinstance(stat, GpuMat):
            raise cv_error("DelayBuffer::push", f"expected a GpuMat, got {type(stat).__name__}", StsBadArg)
        if stat.size() != self.size or stat.type() != self.type:
            raise cv_error("DelayBuffer::push", f"expected a {self.size[0]}x{self.size[1]} GpuMat of type "
                                                f"{self.type}, got {stat.size()[0]}x{stat.size()[1]} of type "
                                                f"{stat.type()}", StsUnmatchedFormats)
        n = self.k + 1
        slot = self.slots[self.count % n]
        stat.copyTo(slot)
        # the write goes on the statistic's stream (copyTo names none): inside a StreamedLoop,
        # the compute stream, not the default stream every blocking stream would wait for
        slot._stream = stat._stream if stat._stream is not None else streams.RECORD_ON
        self.count += 1
        if PUSH_LOG is not None:
            PUSH_LOG.append(self)
        return self.slots[self.count % n] if self.k else self.slots[(self.count - 1) % n]
