"""Global state and the flush: pending lazy results -> planned kernels -> launches.

Everything that touches the pending graph holds ``STATE.lock`` (an RLock), so lazycv may be
called from several threads at once; each thread has its own pending list (THREAD) and
recording (ir.recording), and a flush computes the calling thread's work.

Memory-order rules (what makes lazy execution equal eager execution):

* RAW: recording a read of a buffer that has a pending write flushes that write first.
* WAR: before a buffer is overwritten, pending results that still read it are computed —
  unless the whole buffer is being replaced and its address was never handed out, in which
  case the buffer is *renamed* (the readers keep the old one; the GpuMat gets a fresh one).
* Results with a pending write into user memory (``dst=``, ``setTo``, ``copyTo``) are always
  computed at the next flush; other results are computed when something needs them, and only
  the live ones that no other live pending result consumes (*sinks*) are written, so
  intermediates a user merely kept a name for do not cost memory traffic.
"""
import array
import contextlib
import os
import sys
import threading
import warnings
import weakref

import cv2
import numpy as np

from . import backends, codegen, ir, planner
from ._types import DEPTH_DTYPE
from .errors import PerformanceWarning, StsNoMem, cv_error
from .ir import Allocation, Source, source_bufs
from .log import debug_level, debugging, logger, nvtx_range  # noqa: F401  (debug_level: ops use it)
from .memory import host_free_bytes, host_pool, pool_cap
from .plancache import Graph, PlanCache

# what each counts: docs/observability.md
STAT_KEYS = ("kernels_launched", "ops_recorded", "ops_fused", "compiles", "disk_cache_hits", "cache_hits",
             "fallbacks", "bytes_h2d", "bytes_d2h", "flushes", "plan_hits", "program_hits")
# The C hot path where lazycv/_hotpath.c was built (LAZYCV_HOTPATH=0: the same steps in Python)
try:
    if os.environ.get("LAZYCV_HOTPATH", "1").strip() == "0":
        raise ImportError("LAZYCV_HOTPATH=0")
    from . import _hotpath as NATIVE
except ImportError:
    NATIVE = None
HOTPATH = None        # lazycv._hotpath once recipes.bind() has bound it (its flush loops in C)
AUTO_FLUSH_OPS = 20000


class State:
    def __init__(self):
        # (the C hot path's own re-entrant lock where it was built: cv2.cuda calls take it in C)
        self.lock = NATIVE.RLock() if NATIVE is not None else threading.RLock()
        self.enabled = False
        self.backend_name = None
        self.backends = {}                   # device -> the backend's instance (backends.get)
        self.fuse = True
        self.resize_mapping = "opencv-cpu"
        # each thread's pending list (_ThreadPending), by id: [list, weak ref to the thread]
        self.threads = {}
        self.written = weakref.WeakSet()     # allocations with pending writes (ir.PendingWrite)
        self.computed = []                   # nodes the running flush computed into memory
        self.device_bytes = None             # the device's memory (runtime.device_memory)
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        self.fused_seen = set()              # ids of the nodes the running flush counted in ops_fused
        self.caches = {}
        self.plans = PlanCache()
        # arrays download() hands out: recycled warm memory (memory.host_pool)
        self.host_arrays = host_pool(pool_cap("LAZYCV_HOST_POOL_MB", 1024, host_free_bytes), exposed=True)
        self._since = array.array("q", [0])  # since_flush's count (lazycv/_hotpath.c counts it in place)
        # stats: the node number (ir.Node.seq) up to which ops_recorded has counted, and the one
        # at the last reset_stats() (ops_fused counts only ops recorded after it)
        self.seq_counted = self.fused_after = next(ir._RECORDED)
        # buffers exported to / owned by foreign code, by id; weak values, so a recycled id of a
        # dead buffer never makes an unrelated one look shared
        self.shared_bufs = weakref.WeakValueDictionary()
        self._shared = array.array("q", [0])  # any_shared (lazycv/_hotpath.c reads it in place)
        self.capture = None                  # a list while a batch program is captured (capturing)
        # streams of other code (wrapStream) that calls named since the last flush, by id:
        # each waits for the flush's launches (foreign_stream_call)
        self.foreign_streams = {}

    @property
    def since_flush(self):
        """Calls recorded since the last flush (AUTO_FLUSH_OPS)."""
        return self._since[0]

    @since_flush.setter
    def since_flush(self, n):
        self._since[0] = n

    @property
    def any_shared(self):
        """True once any memory was shared with foreign code: a cheap test before looking in
        shared_bufs."""
        return bool(self._shared[0])

    @any_shared.setter
    def any_shared(self, yes):
        self._shared[0] = bool(yes)

    @property
    def backend(self):
        """The active backend of the calling thread's current device (None before one is
        selected)."""
        be = self.backends.get(ir._THREAD.device)
        if be is None and self.backend_name is not None:
            be = self.backends[ir._THREAD.device] = backends.get(self.backend_name, ir._THREAD.device)
        return be

    def kernel_cache(self):
        c = self.caches.get(self.backend_name)
        if c is None:
            c = self.caches[self.backend_name] = codegen.KernelCache(self.backend)
        return c


STATE = State()


class _ThreadPending(threading.local):
    """The calling thread's pending results: weak references to lazy GpuMats, in recording
    order. A flush computes the pending sinks of the thread that flushes (and of threads that
    have ended), so two threads running their own pipelines are not planned, compiled and
    launched as one mixed batch; a result another thread reads, or memory another thread
    overwrites, is still computed first (the memory-order rules look at every thread)."""

    def __init__(self):
        self.pending = []
        with STATE.lock:
            STATE.threads[id(self.pending)] = (self.pending, weakref.ref(threading.current_thread()))


THREAD = _ThreadPending()


def select_backend(name=None):
    """Resolve and activate a backend ("cuda", "cpu", "cuda-sim"; None = auto)."""
    if name is None:
        env = os.environ.get("LAZYCV_BACKEND")
        if env:
            name = env
        elif os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            name = "cuda-sim"
        else:
            name = "cuda" if backends.cuda_usable() else "cpu"
    if name not in backends.NAMES:
        raise ValueError(f"lazycv: unknown backend {name!r}; expected one of {backends.NAMES} or None")
    if name == "cuda" and not backends.cuda_usable():
        raise RuntimeError("lazycv: backend 'cuda' requested but no usable CUDA GPU was found "
                           "(use backend='cpu', or None to choose automatically)")
    with STATE.lock:
        if STATE.backend_name != name:
            flush(everyone=True)
        STATE.backends = {}
        STATE.backend_name = name
        if ir._THREAD.device >= device_count():
            ir._THREAD.device = 0
        STATE.device_bytes = None
    return STATE.backend


def device_count():
    """Devices the active backend presents: the GPUs, or the CPU backend's virtual devices
    (``LAZYCV_CPU_DEVICES``, default 1: each with its own memory pool and kernels' launch
    state, so multi-GPU code paths run and are tested without GPUs)."""
    if STATE.backend_name == "cuda":
        return len(backends.get("cuda").cuda.gpus)
    try:
        n = int(os.environ.get("LAZYCV_CPU_DEVICES", "1"))
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"lazycv: LAZYCV_CPU_DEVICES must be a positive integer, got "
                         f"{os.environ.get('LAZYCV_CPU_DEVICES')!r}")
    return n


def set_device(device):
    """Make ``device`` the calling thread's current device (cv2.cuda.setDevice); the thread's
    pending work is computed first, on the device it was recorded for."""
    if device == ir._THREAD.device:
        return
    flush()
    ir._THREAD.device = device
    ir.MULTI_DEVICE = True
    if STATE.backend_name == "cuda":
        STATE.backend.cuda.select_device(device)


def backend():
    be = STATE.backend                        # (a property: the current device's)
    return be if be is not None else select_backend(None)


def export(alloc):
    """``alloc``'s address is handed out: never rename or recycle its buffer from now on, and
    read or write it eagerly (foreign code may change or read it at any moment) — so pending
    work that reads it runs now, before foreign code can write it."""
    alloc.constant = None
    if not alloc.exported:
        readers = readers_of(alloc.buf) if ir.has_readers(alloc.buf) else None
        if readers:
            flush(readers)
        alloc.exported = True
        pool = getattr(STATE.backend, "buffers", None)
        if pool is not None:
            pool.pin(alloc.buf)
    STATE.shared_bufs[id(alloc.buf)] = alloc.buf
    STATE.any_shared = True


def is_shared(value):
    """True when ``value`` is memory foreign code can see."""
    return value.is_source and STATE.shared_bufs.get(id(value.buf)) is value.buf


def reads_shared_memory(node):
    """True when ``node`` reads memory foreign code can see (so it must run at the call)."""
    return bool(STATE.shared_bufs) and any(is_shared(i) for i in node.inputs)


def read_shared_now(mat):
    """A new result that reads memory shared with foreign code is computed at the call, as
    eager OpenCV would: the foreign owner may overwrite it before the lazy result is needed.
    (Callers test ``STATE.any_shared`` first: this runs for every recorded call.)"""
    if mat._node is not None and reads_shared_memory(mat._node):
        flush([mat])


# ---------------------------------------------------------------- observers

OBSERVERS = []


def observe(fn):
    """Call ``fn(kind, mat, array)`` each time data leaves lazycv: kind is "download" (array is
    the host copy) or "export" (a foreign consumer took the memory; array is a host copy made
    for the observer). Returns a function that removes the observer. The pytest plugin uses it
    to compare eager and fused runs."""
    OBSERVERS.append(fn)
    return lambda: OBSERVERS.remove(fn) if fn in OBSERVERS else None


def notify(kind, mat, array):
    for fn in list(OBSERVERS):
        fn(kind, mat, array)


# ---------------------------------------------------------------- pending bookkeeping

def register_pending(mat):
    THREAD.pending.append(weakref.ref(mat))
    STATE.since_flush += 1
    if STATE.since_flush > AUTO_FLUSH_OPS:
        flush()


def count_recorded():
    """Fold the ops recorded since the last count into stats["ops_recorded"]: IR nodes, read off
    their sequence numbers (ir.Node.seq) instead of counted at each call (recording is the
    per-call hot path). A call that records several ops (a separable filter's two passes) counts
    each, as ops_fused does, so ops_fused never exceeds ops_recorded. (lazycv._hotpath's
    flush_alone does the same in C.)"""
    now = next(ir._RECORDED)                 # (takes a number itself: the numbers only grow)
    STATE.stats["ops_recorded"] += now - STATE.seq_counted - 1 - ir.count_spare()
    STATE.seq_counted = now


def live_pending(everyone=True):
    """Live GpuMats that still have pending work, pruning the dead ones — and stand-ins for
    writes into live memory whose GpuMat is gone (ir.PendingWrite). ``everyone=False``: those
    a flush of the calling thread computes (its own, and those of threads that have ended)."""
    me = THREAD.pending
    alive = []
    for key, (lst, thread) in list(STATE.threads.items()):
        t = thread()
        ended = t is None or not t.is_alive()
        if not (everyone or lst is me or ended):
            continue
        refs = []
        for r in lst:
            m = r()
            if m is not None and m._node is not None:
                alive.append(m)
                refs.append(r)
        lst[:] = refs
        if ended and (not refs or not everyone):
            del STATE.threads[key]            # (a flush adopts an ended thread's results)
    if STATE.written:
        have = {id(m) for m in alive}
        thread = None if everyone else threading.get_ident()
        for alloc in list(STATE.written):
            for m in writers_of(alloc, thread=thread):
                if id(m) not in have:
                    alive.append(m)
                    have.add(id(m))
    return alive


def readers_of(buf, exclude=None):
    """Live pending GpuMats whose computation reads ``buf``."""
    out = []
    key = id(buf)
    for m in live_pending():
        if m is exclude:
            continue
        if key in source_bufs([m._node]):
            out.append(m)
    return out


def writers_of(alloc, exclude=None, thread=None):
    """GpuMats (or stand-ins) whose binding completes a pending write into ``alloc``, pruning
    the writes done; ``thread``: only the writes that thread recorded (threading.get_ident)."""
    out, keep = [], []
    for w in alloc.writers:
        m = w.handle(alloc)
        if m is not None:
            keep.append(w)
            if m is not exclude and (thread is None or w.thread == thread):
                out.append(m)
    alloc.writers = keep
    if not keep:
        STATE.written.discard(alloc)
    return out


def pending_for(mats):
    """The pending GpuMats whose computation gives ``mats`` their data: their own pending
    results, and the pending writes into their memory (through views, also gone ones)."""
    out, seen = [], set()
    for m in mats:
        if m._node is not None and id(m) not in seen:
            seen.add(id(m))
            out.append(m)
        if m._alloc is not None and m._alloc.writers:        # (most results have none)
            for w in writers_of(m._alloc):
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
    return out


def before_read(alloc, exclude=None):
    """RAW: a read of ``alloc`` must see its pending writes."""
    if alloc.writers:
        w = writers_of(alloc, exclude)
        if w:
            flush(w)


def before_write(alloc, whole=False, exclude=None, writing=None):
    """WAR/WAW before ``alloc`` is overwritten: its pending writes are done, and its pending
    readers are computed — or, for a ``whole`` write of unexported memory, keep the old buffer
    while ``alloc`` takes a new one. The caller then writes in place (always True).

    The memory stops holding a known fill (``alloc.constant``) only after the pending work is
    done: a pending ``setTo`` flushed here marks its region constant as it completes, and
    that mark must not outlive this write (a later read would take the old fill's value)."""
    before_read(alloc, exclude)
    if ir.has_readers(alloc.buf, ignore=writing):     # (the writer itself reads in place)
        if whole and not alloc.exported:
            # (no walk: which results read the old buffer does not matter, they keep it)
            alloc.buf = STATE.backend.alloc(alloc.buf.shape[0], alloc.buf.shape[1], alloc.buf.dtype)
        else:
            readers = readers_of(alloc.buf, exclude)
            if readers:
                flush(readers)
    alloc.constant = None
    return True


# ---------------------------------------------------------------- flush and execution

def flush(requested=(), everyone=False):
    """Compute the requested pending results together with the calling thread's pending sinks
    (``everyone``: every thread's — before the backend or device changes).

    If planning or a launch fails, the error reaches the caller and the results of that flush
    leave the pending list (they stay lazy: asking for one again retries it), so one bad
    result cannot break every later flush.
    """
    with STATE.lock, nvtx_range("lazycv flush"):
        try:
            if not (requested or everyone or THREAD.pending or STATE.written):
                # nothing of this thread is pending (an Event.record, a stream sync): no walk
                if ir._THREAD.rec.tokens:
                    ir.new_recording()
                return
            # the calling thread's results alone: _flush's work in C where it was built
            if HOTPATH is not None and not everyone and HOTPATH.flush_alone(requested):
                return
            pending = live_pending(everyone)
            if ir.MULTI_DEVICE:
                _flush_by_device(requested, pending)
            else:
                _flush(requested, pending)
        finally:
            streams.CURRENT = None               # (the stream of the flush's last launch)
            if STATE.foreign_streams:
                be = STATE.backend
                for h in STATE.foreign_streams.values():
                    be.order(None, h)
                STATE.foreign_streams.clear()


def foreign_stream_call(stream):
    """A call named a stream of other code (``wrapStream``; torch's and cupy's streams do not
    wait for the default stream as lazycv's own do). lazycv's later launches wait for what that
    stream holds now, and the stream's later work waits for the next flush's launches, so the
    call is ordered on it as OpenCV's call would be."""
    if stream._is_foreign():
        h = stream._handle()
        STATE.backend.order(h, None)
        STATE.foreign_streams[id(h)] = h


def device_of(m):
    """The device a GpuMat's data is (or will be) on."""
    m = _owner(m)
    return ir.device_of(m._node) if m._node is not None else m._alloc.device if m._alloc is not None else 0


def _flush_by_device(requested, pending):
    """A flush once several devices are in use: each device's results are planned and launched
    on that device (the calling thread's last)."""
    here = ir._THREAD.device
    groups = {}
    for m in pending:
        groups.setdefault(device_of(m), ([], []))[1].append(m)
    for m in requested:
        groups.setdefault(device_of(m), ([], []))[0].append(m)
    for device, (req, pend) in groups.items():
        if device != here:
            with on_device(device):
                _flush(req, pend)
    req, pend = groups.get(here, ((), ()))
    _flush(list(req), list(pend))


def _flush(requested, pending):
    """flush's work (flush holds the lock): ``requested`` and the ``pending`` mats' sinks."""
    rec = ir.new_recording()
    # a view of a pending result lives in its parent's memory: the parent is computed
    # (_owner, inline: this loop sees every pending result)
    requested = [m._parent[0] if m._parent is not None and m._node is not None else m for m in requested]
    mats, have = [], set()
    for group in (pending, requested):
        for m in group:
            if m._parent is not None and m._node is not None:
                m = m._parent[0]
            if m._node is not None and id(m) not in have:
                mats.append(m)
                have.add(id(m))
    count_recorded()
    STATE.since_flush = 0
    if not mats:
        return
    req = {id(m) for m in requested}
    key = STATE.plans.replay_key(rec, mats, req, STATE.fuse)
    replay = STATE.plans.replay(key, STATE.stats)
    if not _served_by_program(replay, rec, mats):
        _flush_planned(rec, mats, req, key, replay)


def _served_by_program(replay, rec, mats):
    """True when ``replay``'s program computed the flush (its history let go); never while a
    batch program is captured: its capture sees launches, not a replayed program."""
    if replay is not None and replay.program and STATE.capture is None and _run_program(replay, rec, mats):
        _let_go_of_history()
        return True
    return False


def _flush_planned(rec, mats, req, key, replay):
    """The rest of a flush that no program served: its plan replayed (``replay``) or made, the
    launches, and what the next replays keep (lazycv._hotpath.flush_alone continues here)."""
    loose = None
    if replay is None and key is not None:
        # the same calls over memory regions of new sizes where only tables carry them (new
        # crops every frame): the plan, and its program, of the flush that planned them
        loose = STATE.plans.loose_key(key)
        replay = STATE.plans.replay(loose, STATE.stats, loose=True)
        if _served_by_program(replay, rec, mats):
            return
    if replay is not None:
        sinks, kernels, phases = replay.thaw(rec, mats)
        plan = lambda values, by_node: (kernels, phases)      # noqa: E731
    else:
        graph = Graph([m._node for m in mats])
        sinks = [m for m in mats
                 if id(m) in req or m._alloc is not None or not graph.is_consumed(m._node)]

        def plan(values, by_node):
            def build():
                kernels = planner.plan(values, STATE.fuse)
                return kernels, launch_plan(kernels, by_node)
            return STATE.plans.plan(values, graph, by_node, STATE.fuse, build, STATE.stats)
    if not sinks:
        return
    STATE.stats["flushes"] += 1
    # a replay's first run as a program of its own (lazycv.program), for the next replays;
    # never one that writes into user memory (dst=: the key holds that, so it stays so)
    capture = replay is not None and replay.program is None and STATE.capture is None
    if capture and any(m._alloc is not None for m in sinks):
        replay.program = capture = False
    launch = replay.one_batched_launch() if capture else None
    try:
        if launch is None:
            kernels, phases = execute(sinks, plan)
        else:
            with capturing() as launches:
                kernels, phases = execute(sinks, plan)
    except BaseException as e:
        try:
            if not _kernel_fault(e):
                raise
            _run_unfused(sinks, e)
        except BaseException:
            _forget(sinks)
            STATE.computed.clear()
            raise
        _let_go_of_history()
        return
    _let_go_of_history()
    if replay is None:
        STATE.plans.remember(key, rec, mats, sinks, kernels, phases, loose)
    elif launch is not None:
        replay.program = len(launches) == 1 and launches[0] is not None and FlushProgram.capture(
            launches[0], launch, replay.plan.kernels, sinks, replay.sinks) or False
    elif capture:
        entry = replay.one_kernel()
        replay.program = entry is not None and SingleFlushProgram.capture(
            *phases[0][0][0][0], entry, sinks, replay.sinks) or False


def _owner(m):
    """The GpuMat whose computation gives ``m`` its data: a view of a pending result's parent."""
    return m._parent[0] if m._parent is not None and m._node is not None else m


SURELY_FITS = 1 << 26      # elements (at most 512 MB): callers check only outputs past this


def check_fits(func, rows, cols, depth, cn):
    """An output larger than the device's memory fails at the call, as OpenCV's allocation would
    (a lazy result would otherwise fail at some later, unrelated flush)."""
    nbytes = rows * cols * cn * DEPTH_DTYPE[depth].itemsize
    if nbytes > device_memory():
        raise cv_error(func, f"a {cols}x{rows} output of {cn} channel(s) needs {nbytes / 2 ** 30:.1f} GiB, more "
                             "than the device has", StsNoMem)
    # memory in use by others is not ours to count on: what is free now plus lazycv's idle pool
    pool = getattr(STATE.backend, "buffers", None)
    available = memory_info()[0] + (pool.idle_bytes if pool is not None else 0)
    if nbytes > available:
        raise cv_error(func, f"a {cols}x{rows} output of {cn} channel(s) needs {nbytes / 2 ** 30:.1f} GiB, more "
                             f"than the {available / 2 ** 30:.1f} GiB the device has available", StsNoMem)


@contextlib.contextmanager
def on_device(device):
    """Run the block with ``device`` current in the calling thread (a flush of another
    device's results)."""
    prev = ir._THREAD.device
    if device == prev:
        yield
        return
    ir._THREAD.device = device
    ctx = STATE.backend.cuda.gpus[device] if STATE.backend_name == "cuda" else contextlib.nullcontext()
    try:
        with ctx:
            yield
    finally:
        ir._THREAD.device = prev


def device_memory():
    """Bytes of memory the backend's device has (the host's for the CPU backend), once."""
    if STATE.device_bytes is None:
        STATE.device_bytes = memory_info()[1]
    return STATE.device_bytes


def memory_info():
    """(free, total) bytes of the current device (of the host for the CPU backend)."""
    be = backend()
    if STATE.backend_name == "cuda":
        return tuple(be.cuda.current_context().get_memory_info())
    page = os.sysconf("SC_PAGE_SIZE")
    return page * os.sysconf("SC_AVPHYS_PAGES"), page * os.sysconf("SC_PHYS_PAGES")


def _refcount_alone():
    """What sys.getrefcount reports for an object held only by a list being iterated (the
    interpreter decides whether the loop variable holds a reference of its own)."""
    for n in [object()]:
        return sys.getrefcount(n)


_ALONE = _refcount_alone()


def _let_go_of_history():
    """A node computed into memory is read from there from now on (Node.result): it lets go of
    its inputs, or a loop that keeps updating one result (``add(acc, frame, dst=acc)``) would
    keep every earlier frame and intermediate alive through the chain of its nodes."""
    if HOTPATH is not None:
        HOTPATH.let_go(STATE.computed)                   # (the loop below, in C)
    else:
        _let_go_in_python()
    if len(ir.READERS) > ir._SWEEP_AT[0]:
        ir.sweep_readers()


def _let_go_in_python():
    """_let_go_of_history's loop (lazycv._hotpath.let_go's twin)."""
    getrefcount = sys.getrefcount
    opened = ir.OPEN
    for n in STATE.computed:
        n.inputs = ()
        if n.rgen and n.rgen in opened:     # (numbered by a recording still open)
            ir.closed_by_flush(n)
        # a computed node another node took as an input: that one reads its memory (ir.READERS);
        # held only by this list, the loop and the call, it has no consumer
        if getrefcount(n) > _ALONE:
            ir.add_reader(n.result.buf, n)
    STATE.computed.clear()


def _kernel_fault(e):
    """A fused kernel that failed to build or launch (Numba's compile, the driver's launch, a
    broken generated module); not the user's data (cv2.error), memory, or an interrupt."""
    return STATE.fuse and isinstance(e, Exception) and not isinstance(e, (cv2.error, MemoryError))


def _run_unfused(sinks, error):
    """The rest of a flush whose fused kernel failed, one kernel per op (what fuse=False runs):
    a correct answer, with a PerformanceWarning naming the failure."""
    warnings.warn(f"lazycv: a fused kernel failed ({type(error).__name__}: {str(error)[:300]}); "
                  "this flush ran one kernel per op instead", PerformanceWarning, stacklevel=4)
    STATE.stats["fallbacks"] += 1

    def plan(values, by_node):
        kernels = planner.plan(values, False)
        return kernels, launch_plan(kernels, by_node, fuse=False)
    execute([m for m in sinks if m._node is not None], plan)


def _forget(sinks):
    """A failed flush's results leave the pending list (asking for one again retries it)."""
    failed = {id(m) for m in sinks if m._node is not None}
    for lst, _ in STATE.threads.values():
        lst[:] = [r for r in lst if id(r()) not in failed]


def _run_program(replay, rec, mats):
    """A replayed flush by its program (lazycv.program); False when it cannot serve these
    values (the general path then runs). (A one-kernel program runs in C where
    lazycv/_hotpath.c was built: _hotpath.flush_alone's run_single.)"""
    try:
        done = replay.program.run(rec.values(), mats)
    except BaseException:
        _program_failed(replay, mats)
        raise
    if done:
        STATE.stats["flushes"] += 1
        STATE.stats["program_hits"] += 1
    return done


def _program_failed(replay, mats):
    """A program's run raised: the flush counts (as on the general path) and its results leave
    the pending list, so one bad result cannot break every later flush."""
    STATE.stats["flushes"] += 1
    _forget([mats[i] for i in replay.sinks])
    STATE.computed.clear()


def _output_region(mat):
    """Where a sink's kernel writes: its own region when it has memory, else a new buffer."""
    if mat._alloc is None:
        buf = STATE.backend.alloc(mat._rows, mat._cols * mat._cn, DEPTH_DTYPE[mat._depth])
        return Allocation(buf), 0, 0
    return mat._alloc, mat._y0, mat._x0


def execute(sinks, plan):
    """Plan and launch the kernels computing ``sinks`` (pending GpuMats); returns the plan,
    (kernels, phases). ``plan(values, by_node)`` gives it for the sinks' distinct nodes.

    Kernels of one phase with the same signature (the same chain over different ROIs, frames or
    scalars — typically a Python loop) are launched together as one batched kernel.
    """
    by_node = {}
    values = []
    results = {}
    for m in sinks:
        done = m._node.result
        if done is not None and m._alloc is None:
            # computed earlier as another kernel's intermediate: adopt that memory
            alloc = results.get(id(done.buf))
            if alloc is None:
                alloc = results[id(done.buf)] = Allocation(done.buf)
            m._bind_result(alloc, done.y0, done.x0)
            continue
        lst = by_node.get(id(m._node))
        if lst is None:
            by_node[id(m._node)] = [m]
            values.append(m._node)
        else:
            lst.append(m)
    if not values:
        return [], []
    kernels, phases = plan(values, by_node)
    if debugging():
        from .report import explain_plan
        logger.debug(explain_plan(kernels))
    STATE.fused_seen.clear()
    for phase in phases:
        for kinds in phase:
            if len(kinds) == 1 and len(kinds[0]) == 1 and (STATE.capture is None or kinds[0][0][0].reduces):
                _launch_single(*kinds[0][0], by_node)    # (a batch program needs the batched form)
                continue
            chunks = _select_chunks(kinds)
            if chunks is None:
                _launch_batch(kinds, by_node)
            else:
                for chunk in chunks:
                    _launch_batch([chunk], by_node, MAX_SELECT)
    return kernels, phases


# A batched kernel takes the buffers its items read apart as parameters chosen per item
# (codegen.BatchSpec). Past MAX_SELECT of them (frames uploaded one by one, recorded before one
# flush) a launch would need a kernel with that many parameters — a compile that grows with
# the batch, and past ~455 buffers more than CUDA's parameter space — so such kinds launch in
# chunks of at most MAX_SELECT buffers, every chunk the same compiled kernel.
MAX_SELECT = 64


def _select_chunks(kinds):
    """The kinds' items in chunks of at most MAX_SELECT distinct buffers per source (each
    chunk one kind), or None when every kind fits one launch."""
    if all(len(members) <= MAX_SELECT for members in kinds):
        return None
    chunks = []
    for members in kinds:
        layout0 = members[0][1]
        chunk, seen = [], [set() for _ in layout0.inputs]
        for item in members:
            lay = item[1]
            ids = [id(lay.source(vi).buf) for vi in layout0.inputs]
            if any(i not in s and len(s) >= MAX_SELECT for i, s in zip(ids, seen)):
                chunks.append(chunk)
                chunk, seen = [], [set() for _ in layout0.inputs]
            chunk.append(item)
            for i, s in zip(ids, seen):
                s.add(i)
        chunks.append(chunk)
    return chunks if len(chunks) > len(kinds) else None


def launch_plan(kernels, by_node=None, fuse=None):
    """Per phase, the launches: each a list of kinds, each kind a list of (kernel, layout) with
    one signature. Kernels writing into user memory launch alone; same-signature kernels batch;
    kinds reading a common buffer share a launch. explain() reports the same grouping."""
    by_node = by_node or {}
    fuse = STATE.fuse if fuse is None else fuse
    phases = []
    for level in sorted({k.level for k in kernels}):
        groups, launches = {}, []
        for k in kernels:
            if k.level != level:
                continue
            layout = codegen.KernelLayout([(n, None) for n in k.outputs], {id(n) for n in k.nodes})
            batchable = fuse and not k.reduces and all(
                not any(m._alloc is not None for m in by_node.get(id(n), ())) for n in k.outputs)
            if batchable:
                groups.setdefault(layout.signature, []).append((k, layout))
            else:
                launches.append([[(k, layout)]])
        phases.append(launches + _launches(list(groups.values())))
    return phases


def _launches(groups):
    """Put groups (kinds) that read a common buffer into one launch: several products of one
    frame then come from one kernel, its reads served from cache."""
    parent = list(range(len(groups)))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i
    owner = {}
    for gi, members in enumerate(groups):
        for _, layout in members:
            for vi in layout.inputs:
                v = layout.values[vi]         # an earlier phase's output has no buffer yet
                o = owner.setdefault(id(v.buf) if v.is_source else id(v), gi)
                a, b = root(o), root(gi)
                if a != b:
                    parent[b] = a
    launches = {}
    for gi, members in enumerate(groups):
        launches.setdefault(root(gi), []).append(members)
    return list(launches.values())


def _finish_kernel(kernel, outputs, by_node):
    for n, buf, y0, x0, alloc in outputs:
        n.result = Source(buf, y0, x0, n.rows, n.cols, n.depth, n.cn)
        STATE.computed.append(n)
        for m in by_node.get(id(n), ()):
            if m._node is n:
                if alloc is None:
                    alloc = Allocation(buf)
                m._bind_result(alloc, y0, x0)
    if len(kernel.nodes) > 1:
        STATE.stats["ops_fused"] += fused_ops(kernel, STATE.fused_seen)


def fused_ops(kernel, seen):
    """stats()["ops_fused"] of one kernel: the recorded ops it computes together with other ops,
    each once per flush (``seen``: ids counted) however many of the flush's kernels recompute it,
    and only ops recorded since the last reset_stats(); a setTo's constant read as values is
    not an op of the flush (it was recorded by setTo)."""
    after = STATE.fused_after
    ops = [n for n in kernel.nodes if n.op.name != "fill" and n.seq > after]
    if len(ops) < 2:
        return 0
    new = [n for n in ops if id(n) not in seen]
    seen.update(id(n) for n in new)
    return len(new)


class LaunchRecord:
    """A batched launch as it went out, for lazycv.program: the kernel, its tables and
    arguments, the output slabs among them and, per kind, its items and their output buffers."""
    __slots__ = ("compiled", "max_h", "max_w", "ti", "tf", "args", "slabs", "kinds")

    def __init__(self, compiled, max_h, max_w, ti, tf, args, slabs, kinds):
        self.compiled, self.max_h, self.max_w, self.ti, self.tf = compiled, max_h, max_w, ti, tf
        self.args, self.slabs, self.kinds = args, slabs, kinds


@contextlib.contextmanager
def capturing():
    """Collect the launches of the flushes inside: a LaunchRecord per batched launch, None for
    any other."""
    outer = STATE.capture                    # (a capture around this one resumes after it)
    STATE.capture = launches = []
    try:
        yield launches
    finally:
        STATE.capture = outer


def _launch_single(k, layout, by_node):
    be = STATE.backend
    if streams.ACTIVE:
        streams.select(by_node, (k,))
    if STATE.capture is not None:
        STATE.capture.append(None)
    outputs = []
    for n in k.outputs:
        mats = by_node.get(id(n))
        if mats:
            alloc, y0, x0 = _output_region(mats[0])
        else:
            alloc, y0, x0 = None, 0, 0
        buf = alloc.buf if alloc else be.alloc(n.rows, n.cols * n.cn, DEPTH_DTYPE[n.depth])
        outputs.append((n, buf, y0, x0, alloc))
    STATE.stats["kernels_launched"] += _launch(k, layout, [o[:4] for o in outputs])
    _finish_kernel(k, outputs, by_node)


def _pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def _bind_kind(members, min_select=1):
    """(shared, nsel, distinct) for one kind: which sources all items share, which differ
    (``min_select``: the fewest parameters a differing source gets, so that every chunk of a
    large batch is the same kernel)."""
    layout0 = members[0][1]
    shared, nsel, distinct = set(), {}, {}
    for vi in layout0.inputs:
        bufs, index = [], {}                 # distinct buffers in first-seen order, id -> slot
        for _, lay in members:
            buf = lay.source(vi).buf
            if id(buf) not in index:
                index[id(buf)] = len(bufs)
                bufs.append(buf)
        if len(bufs) == 1:
            shared.add(vi)
        else:
            nsel[vi] = max(_pow2(len(bufs)), min_select)
            distinct[vi] = (bufs, index)
    return shared, nsel, distinct


def _launch_batch(kinds, by_node, min_select=1):
    """One launch for many items: ``kinds`` is a list of kinds, each a list of (kernel, layout)
    with one signature. Per-item scalars go in tables, shared sources are passed once, outputs
    are slabs."""
    be = STATE.backend
    if streams.ACTIVE:
        streams.select(by_node, [k for members in kinds for k, _ in members])
    binds = [_bind_kind(members, min_select) for members in kinds]
    compiled = STATE.kernel_cache().get_batched(
        [(members[0][1], sh, ns) for members, (sh, ns, _) in zip(kinds, binds)], STATE.stats)
    n_items = sum(len(members) for members in kinds)
    ti = np.zeros((n_items, max(spec.n_int for spec in compiled.specs)), np.int64)
    tf = np.zeros((n_items, max([1] + [len(spec.float_cols) for spec in compiled.specs])), np.float64)
    args, results, slabs, b0 = [], [], [], 0
    for j, (members, (shared, nsel, distinct)) in enumerate(zip(kinds, binds)):
        spec, layout0 = compiled.specs[j], members[0][1]
        # the tables a column at a time: one list per parameter over the kind's items
        b1 = b0 + len(members)
        ti[b0:b1, 0] = [k.rows for k, _ in members]
        ti[b0:b1, 1] = [k.cols for k, _ in members]
        ti[b0:b1, 2] = j
        slots = np.arange(len(members))
        for c in spec.out_cols:
            ti[b0:b1, c] = slots
        for vi, cy, cx, csel in spec.src_fetch:
            srcs = [lay.source(vi) for _, lay in members]
            ti[b0:b1, cy] = [v.y0 for v in srcs]
            ti[b0:b1, cx] = [v.x0 for v in srcs]
            if csel >= 0:
                slot = distinct[vi][1]
                ti[b0:b1, csel] = [slot[id(v.buf)] for v in srcs]
        for vi, kk, col in spec.int_fetch:
            ti[b0:b1, col] = [int(lay.values[vi].dyn[kk]) for _, lay in members]
        for vi, kk, col, kind in spec.float_fetch:
            vals = np.array([lay.values[vi].dyn[kk] for _, lay in members], np.float64)
            tf[b0:b1, col] = vals.astype(np.float32) if kind == "f32" else vals   # f32: round once
        b0 = b1
        for name, vi, how, n in spec.arrays:
            if how == "shared":
                args.append(layout0.source(vi).buf)
            else:
                bufs = distinct[vi][0]
                args += bufs + [bufs[0]] * (n - len(bufs))
        item_bufs = []
        for oi, (vi, _) in enumerate(layout0.outputs):
            v = layout0.values[vi]
            rows = max(lay.values[lay.outputs[oi][0]].rows for _, lay in members)
            row_elems = max(lay.values[lay.outputs[oi][0]].cols for _, lay in members) * v.cn
            slab, items = be.alloc_batch(len(members), rows, row_elems, DEPTH_DTYPE[v.depth])
            args.append(slab)
            slabs.append(slab)
            item_bufs.append(items)
        results.append((members, item_bufs))
    max_h, max_w = int(ti[:, 0].max()), int(ti[:, 1].max())
    with nvtx_range("lazycv launch"):
        be.launch_batched(compiled, n_items, max_h, max_w, ti, tf, args)
    STATE.stats["kernels_launched"] += 1
    if STATE.capture is not None:
        STATE.capture.append(LaunchRecord(compiled, max_h, max_w, ti, tf, args, slabs, results))
    for members, item_bufs in results:
        for local, (k, lay) in enumerate(members):
            outputs = [(n, item_bufs[oi][local], 0, 0, None) for oi, n in enumerate(k.outputs)]
            _finish_kernel(k, outputs, by_node)


def _launch(kernel, layout, outputs):
    """Launch one kernel; returns how many launches that took."""
    be = STATE.backend
    compiled = STATE.kernel_cache().get(layout, STATE.stats)
    if compiled.reduce is not None:       # a reduction: its partials, folded into the statistic
        part = be.reduce_partials(kernel.rows, kernel.cols, compiled.reduce[1])
        with nvtx_range("lazycv launch"):
            be.launch(compiled, kernel.rows, kernel.cols, gather_args(compiled.recipe, layout) + (part, outputs[0][1]))
        return be.reduce_launches
    # In-place safety: an output buffer that the kernel also reads is fine only when every read
    # of it is at the output pixel itself; otherwise compute into a temporary and copy.
    copies = []
    read_bufs = {}
    for vi in layout.inputs:
        v = layout.source(vi)
        read_bufs.setdefault(id(v.buf), []).append((vi, v))
    final = []
    for n, buf, y0, x0 in outputs:
        reads = read_bufs.get(id(buf))
        if reads and not all(compiled.source_reads.get(vi, True) and (v.y0, v.x0) == (y0, x0)
                             for vi, v in reads):
            tmp = be.alloc(n.rows, n.cols * n.cn, buf.dtype)
            copies.append((Source(tmp, 0, 0, n.rows, n.cols, n.depth, n.cn), buf, y0, x0))
            final.append((tmp, 0, 0))
        else:
            final.append((buf, y0, x0))
    args = gather_args(compiled.recipe, layout)
    for buf, y0, x0 in final:
        args += (buf, y0, x0)
    with nvtx_range("lazycv launch"):
        be.launch(compiled, kernel.rows, kernel.cols, args)
    for src, buf, y0, x0 in copies:
        copy_region(src, buf, y0, x0)
    return 1


# how a dyn parameter of each kind becomes a kernel argument (also lazycv.program)
DYN_CONVERT = {"i": int, "f32": np.float32, "f64": float}


def gather_args(recipe, layout):
    args = []
    values = layout.values
    for item in recipe:
        if item[0] == "src":
            v = layout.source(item[1])
            args += (v.buf, v.y0, v.x0)
        else:
            _, vi, k, kind = item
            args.append(DYN_CONVERT[kind](values[vi].dyn[k]))
    return tuple(args)


def copy_region(src, buf, y0, x0):
    """Copy a materialised region into ``buf`` at (y0, x0) with one generated kernel."""
    layout = codegen.KernelLayout([(src, None)])
    compiled = STATE.kernel_cache().get(layout, STATE.stats)
    args = gather_args(compiled.recipe, layout) + (buf, y0, x0)
    STATE.backend.launch(compiled, src.rows, src.cols, args)
    STATE.stats["kernels_launched"] += 1


from .program import FlushProgram, SingleFlushProgram  # noqa: E402  (program reads STATE)
from . import streams  # noqa: E402  (streams reads STATE)
