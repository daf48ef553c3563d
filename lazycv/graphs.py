"""Graphs: one iteration of a loop recorded once, then replayed without recording, planning or
binding anything — on CUDA as one CUDA Graph launch.

``g = lazycv.capture(fn)``; ``outs = g(*inputs)``. The first call with inputs of a given
size and type runs ``fn`` on the graph's own input buffers (its *slots*) and keeps every launch
that the iteration made (kernels, copy kernels, reductions: a *tape*); on CUDA the tape is then
captured into a CUDA Graph (lazycv/backends/cuda_graphs.py). A later call copies its inputs
into the slots and replays the tape.

The replay rule (what may change between calls):

* **Data** — the inputs' pixels: yes (copied into the slots, one copy each).
* **Scalars** passed as inputs (a number or a tuple of up to 4): yes — ``fn`` receives them as
  1x1 CV_64F GpuMats (device scalars, which add/subtract/multiply/divide/absdiff/min/max take),
  refreshed by one small copy. Numbers written inside ``fn`` are part of the graph: changing
  one means a new ``capture``.
* **Sizes, types, the number of inputs** — a new key: that call captures again (kept beside
  the others). Anything else ``fn`` decides in Python (branches, loop counts) is fixed at capture.
* **Outputs** are the graph's own buffers: each call's results are GpuMats over the same
  memory, overwritten by the next call (``clone()`` a result to keep it). Lazy work recorded on
  an earlier result is computed before the next call overwrites it.
* ``fn`` may not upload or download (a graph has no host in the middle); it takes its inputs as
  arguments and returns GpuMats.
* A ``DelayBuffer`` pushed inside ``fn`` is part of the key by its ring position: the graph is
  captured once per position (k + 1 captures), so each replay reads and writes its frame's slots.

On the CPU backend and the simulator a replay re-runs the tape's launches (the same semantics);
on CUDA a tape holding precompiled reductions (histograms, integrals, ``reduce``: they run on
the default stream, which a capture may not touch) is replayed launch by launch as well, still
without recording or planning; generated reductions (normalize, minMax, sum, ...) are launches
like any other.
"""
import numbers

import numpy as np

from . import media, runtime, streams
from ._types import DTYPE_DEPTH, make_type
from .backends import reduce_kernels
from .errors import StsBadArg, cv_error
from .facade.gpumat import GpuMat
from .facade.hostmem import HostMem
from .facade.stream import Stream
from .ir import Source
from .runtime import STATE

NATIVE = True         # False: CUDA replays launch by launch too (bench/graphs.py compares both)
_REDUCTIONS = ("histogram", "reduce_axis", "integral", "equalize_lut")   # (the precompiled ones)


def capture(fn):
    """``fn`` (GpuMats and device scalars in, a GpuMat or a list/tuple of them out) as a Graph."""
    if not callable(fn):
        raise cv_error("lazycv.capture", f"expected a function, got {type(fn).__name__}", StsBadArg)
    return Graph(fn)


class Graph:
    """Tapes of ``fn`` by input key; ``captures`` and ``replays`` count what calls did."""

    def __init__(self, fn):
        self.fn = fn
        self.tapes = {}
        self.captures = self.replays = 0

    def __call__(self, *inputs, stream=None):
        """Run the iteration on ``inputs``: captured on the first call of their key, replayed
        after; ``stream`` (a cv2.cuda.Stream): the replay's copies and launches go on it."""
        if stream is not None and not isinstance(stream, Stream):
            raise cv_error("lazycv.Graph", f"stream must be a cv2.cuda.Stream, got {type(stream).__name__}",
                           StsBadArg)
        with STATE.lock:
            key = tuple(_input_key(i, v) for i, v in enumerate(inputs))
            tape = self.tapes.get(key + _ring_positions(self.tapes, key))
            if tape is None:
                with streams.on_stream(stream):
                    tape, outs = self._capture(key, inputs, streams.key(stream) if stream is not None else None)
                self.tapes[key + tape.positions] = tape
                self.captures += 1
                return outs
            self.replays += 1
            return tape.replay(inputs, streams.key(stream) if stream is not None else streams.CURRENT)

    def input_slots(self, *inputs):
        """The GpuMats a replay for inputs like these copies them into (None before the first
        call of their key). Writing the next input into its slot (an upload) and passing the
        slot itself saves the replay that copy (StreamedLoop(graph=True) does)."""
        tape = self.tape_for(*inputs)
        return None if tape is None else list(tape.slots)

    def tape_for(self, *inputs):
        """The Tape a call with inputs like these replays (None before the first such call)."""
        with STATE.lock:
            key = tuple(_input_key(i, v) for i, v in enumerate(inputs))
            return self.tapes.get(key + _ring_positions(self.tapes, key))

    def _capture(self, key, inputs, who=None):
        runtime.flush()                      # earlier work stays out of the tape
        slots = [_slot_for(k) for k in key]
        for slot, v in zip(slots, inputs):
            _fill(slot, v, who)
        runtime.flush()
        tape = Tape(slots)
        media.PUSH_LOG = []
        streams.watch(STATE.backend)
        streams.TAPE = tape.entries
        reductions = _tape_reductions(tape.entries)
        try:
            out = self.fn(*slots)
            outs = [out] if isinstance(out, GpuMat) else list(out) if isinstance(out, (list, tuple)) else None
            if not outs or not all(isinstance(m, GpuMat) for m in outs):
                raise cv_error("lazycv.capture", "the function must return a GpuMat or a list/tuple of GpuMats",
                               StsBadArg)
            runtime.flush(runtime.pending_for(outs))
        finally:
            streams.TAPE = None
            reductions()
            pushed, media.PUSH_LOG = media.PUSH_LOG, None
        tape.finish(outs, pushed, isinstance(out, GpuMat))
        return tape, out


def _ring_positions(tapes, key):
    """The ring positions of the delay buffers the tapes of ``key`` push (empty: none)."""
    for k, tape in tapes.items():
        if k[:len(key)] == key and tape.delays:
            return tuple(d.phase for d in tape.delays)
    return ()


def _input_key(i, v):
    if isinstance(v, GpuMat):
        if not (v._rows and v._cols):                                # (v.empty())
            raise cv_error("lazycv.capture", f"input {i} is an empty GpuMat", StsBadArg)
        return ("mat", (v._cols, v._rows), make_type(v._depth, v._cn))     # (size(), type())
    if isinstance(v, HostMem):
        v = v.createMatHeader()
    if isinstance(v, np.ndarray):
        return ("host", v.shape, v.dtype.str)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return ("scalar", 1)
    if isinstance(v, (tuple, list)) and 1 <= len(v) <= 4 and all(isinstance(x, numbers.Real) for x in v):
        return ("scalar", len(v))
    raise cv_error("lazycv.capture", f"input {i} is a {type(v).__name__}; expected a GpuMat, a numpy array, a "
                                     "HostMem, a number or a tuple of up to 4 numbers", StsBadArg)


def _slot_for(key):
    import cv2
    if key[0] == "mat":
        (cols, rows), typ = key[1], key[2]
        return GpuMat(rows, cols, typ)
    if key[0] == "host":
        slot = GpuMat()
        slot.upload(np.zeros(key[1], np.dtype(key[2])))
        return slot
    return GpuMat(1, 1, cv2.CV_64FC(key[1]))


def _fill(slot, v, who=None):
    """The input's data into its slot (a copy on the device — on stream ``who`` — or an upload
    from the host); nothing when the input is the slot itself (Graph.input_slots)."""
    if v is slot:
        if slot._node is not None:
            slot._materialize()
        return
    if isinstance(v, GpuMat):
        v._materialize()
        runtime.before_read(v._alloc)
        runtime.before_write(slot._alloc)
        src = Source(v._alloc.buf, v._y0, v._x0 * v._cn, v._rows, v._cols * v._cn, v._depth, 1)
        streams.CURRENT = who                 # (a flush above resets it)
        runtime.copy_region(src, slot._alloc.buf, 0, 0)
    elif isinstance(v, (HostMem, np.ndarray)):
        slot.upload(v)
    else:
        vals = [float(x) for x in (v if isinstance(v, (tuple, list)) else (v,))]
        slot.upload(np.array(vals, np.float64).reshape(1, 1, len(vals)) if len(vals) > 1 else
                    np.array([[vals[0]]], np.float64))


def _tape_reductions(entries):
    """Put the reduction kernels' calls on the tape while a graph is captured (they launch
    outside the backend's launch path); returns the function that undoes it."""
    red = reduce_kernels.kernels_for(STATE.backend, STATE.stats)
    plain = {n: getattr(red, n) for n in _REDUCTIONS}

    def taped(name, method):
        def call(*args, **kw):
            out = method(*args, **kw)
            entries.append(("reduce", method, args, kw, out))
            return out
        return call
    for n, m in plain.items():
        setattr(red, n, taped(n, m))

    def undo():
        for n in plain:
            red.__dict__.pop(n, None)
    return undo


class Tape:
    """One captured iteration: its launches in order, the slots it reads, the outputs it
    writes; on CUDA the CUDA Graph made of it (``native``)."""

    def __init__(self, slots):
        self.slots, self.entries = slots, []
        self.outputs, self.single, self.delays, self.positions = [], True, [], ()
        self.native, self.launches = None, 0

    def finish(self, outs, pushed, single):
        be = STATE.backend
        self.single = single
        self.outputs = [(m._alloc, m._y0, m._x0, m._rows, m._cols, m._depth, m._cn) for m in outs]
        for m in outs:                        # the graph rewrites them: never renamed away
            m._alloc.exported = True
        counts = {}
        for d in pushed:
            counts[id(d)] = (d, counts.get(id(d), (d, 0))[1] + 1)
        self.delays = [d for d, _ in counts.values()]
        self.pushes = [n for _, n in counts.values()]
        # the ring positions this tape was captured at (those before its pushes)
        self.positions = tuple((d.count - n) % (d.k + 1) for d, n in counts.values())
        entries = []
        for entry in self.entries:
            if entry[0] == "launch":
                _, plain, args, kw, who = entry
                if plain.__name__ == "launch_batched" and kw.get("tables") is None:
                    kw = dict(kw, tables=be.constant_tables(args[4], args[5]))   # device-resident
                entries.append(("launch", plain, args, kw, who))
            else:
                entries.append(entry)
        self.entries = entries
        # (a generated reduction's launch is its kernel and, on CUDA, its fold; precompiled
        # reductions count their own)
        self.launches = sum(be.reduce_launches if getattr(e[2][0], "reduce", None) is not None else 1
                            for e in entries if e[0] == "launch")
        if NATIVE and STATE.backend_name == "cuda" and all(e[0] == "launch" for e in entries):
            from .backends import cuda_graphs
            self.native = cuda_graphs.capture(be, [(e[1], e[2], e[3]) for e in entries])

    def replay(self, inputs, who=None):
        """Copy ``inputs`` into the slots and run the tape again — on stream ``who`` (a facade
        Stream; None: each launch's own, the default stream for the native graph)."""
        try:
            for slot, v in zip(self.slots, inputs):
                _fill(slot, v, who)
        finally:
            streams.CURRENT = None
        self.launch(who)
        return self.results()

    def launch(self, who=None):
        """Run the tape again over what its slots hold now, on stream ``who``."""
        try:
            for alloc, *_ in self.outputs:
                runtime.before_write(alloc)       # lazy readers of the last results run first
            streams.CURRENT = who
            self._run(who)
        finally:
            streams.CURRENT = None
        STATE.stats["kernels_launched"] += self.launches
        for d, n in zip(self.delays, self.pushes):
            d.count += n

    def results(self):
        """The outputs as GpuMats over the tape's output memory (what the last launch wrote)."""
        outs = []
        for alloc, y0, x0, rows, cols, depth, cn in self.outputs:
            m = GpuMat._over(alloc, rows, cols, depth, cn)
            m._y0, m._x0 = y0, x0
            outs.append(m)
        return outs[0] if self.single else outs

    def _run(self, who):
        if self.native is not None:
            self._launch_native(who)
        else:
            for entry in self.entries:
                if entry[0] == "launch":
                    _, plain, args, kw, taped_on = entry
                    _relaunch(plain, args, kw, who if who is not None else taped_on)
                else:
                    _, method, args, kw, out = entry
                    new = method(*args, **kw)
                    src = Source(new, 0, 0, new.shape[0], new.shape[1], DTYPE_DEPTH[np.dtype(new.dtype)], 1)
                    runtime.copy_region(src, out, 0, 0)

    def _launch_native(self, who):
        """One CUDA Graph launch on stream ``who``, ordered like a launch touching every buffer
        of the tape (unless the caller orders its streams itself: streams.caller_orders)."""
        from .backends import cuda_graphs
        if streams.ACTIVE and not streams.CALLER_ORDERS:
            bufs = [a for e in self.entries for a in e[2][6 if e[1].__name__ == "launch_batched" else 3]]
            handle = streams.enter(who, bufs, "graph")
            cuda_graphs.launch(self.native, handle)
            streams.leave(who, bufs)
        else:
            cuda_graphs.launch(self.native, streams.native(who))


def _relaunch(plain, args, kw, who):
    """A taped launch again, on its stream, after what it must wait for."""
    if not streams.ACTIVE:
        plain(*args, **kw)
        return
    if streams.CALLER_ORDERS:                 # (the caller's events order its streams)
        plain(*args, stream=streams.native(who), **kw)
        return
    bufs = args[6 if plain.__name__ == "launch_batched" else 3]
    handle = streams.enter(who, bufs, "launch")
    plain(*args, stream=handle, **kw)
    streams.leave(who, bufs)
