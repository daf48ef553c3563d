"""The expression graph: values are data, ops are looked up by name.

A *value* is either a :class:`Source` (a region of memory that already holds data) or a
:class:`Node` (an op applied to input values). Both carry their image geometry, so a lazy
``GpuMat`` answers ``size()``/``type()`` without running anything.

``Node.static`` is the op's structural parameters: part of the compiled kernel's identity.
``Node.dyn`` is the run-time parameters (scalars, sizes, offsets): kernel arguments, so a new
frame size or mean value never recompiles.
"""
import itertools
import threading
import weakref

_RECORDED = itertools.count()
_SPARE = [0]                           # numbers taken by take_number since count_spare last read


def take_number():
    """A sequence number no node has: it marks a point in recording order (recipes: where a
    call began). The numbers taken so are left out of the ops counted (runtime.count_recorded)."""
    _SPARE[0] += 1
    return next(_RECORDED)


def count_spare():
    """How many numbers take_number gave since the last call (and start counting again)."""
    n, _SPARE[0] = _SPARE[0], 0
    return n
_GENERATIONS = itertools.count(1)      # Recording.gen; 0: a value no recording numbered


# lazycv._hotpath's twins once recipes.bind() has bound them
TRACK = None         # (Allocation.add_writer)
VALUES_OF = None     # (Recording.values)


class Allocation:
    """A device buffer that GpuMats (and their ROI views) share.

    ``buf`` is the backend array: 2-D, ``(rows, row_elems)`` with ``row_elems >= cols * cn``
    (pitched rows are allowed). ``buf`` may be swapped for a fresh buffer when the whole
    allocation is overwritten while lazy readers still need the old contents ("rename"), unless
    its address was handed out (``exported``): foreign code may hold the pointer.

    ``constant`` is ``(buf, y0, x0, fill node, the last node read for it)`` while a region of
    ``buf`` holds what a fill (``setTo``) last wrote there and nothing has written the allocation
    since (runtime.before_write and runtime.export forget it): a read of that region can take
    the values instead of loading the memory (GpuMat._constant).
    """
    __slots__ = ("buf", "exported", "writers", "foreign", "cols", "constant", "device", "__weakref__")

    def __init__(self, buf, foreign=None, cols=None):
        self.buf = buf
        self.device = _THREAD.device      # the device the memory is on (cv2.cuda.setDevice)
        self.cols = cols           # width in pixels when rows are padded (foreign memory)
        self.exported = foreign is not None
        self.writers = ()          # PendingWrite records: writes recorded into this memory (add_writer)
        self.foreign = foreign     # the object that owns foreign memory (kept alive)
        self.constant = None

    def add_writer(self, w):
        """Record a pending write. An allocation the C hot path made is out of the cyclic GC
        (its fields are memory and plain values); a write's stand-in GpuMat can refer back to
        it, so it is tracked again from now on."""
        if self.writers:
            self.writers.append(w)
        else:                                  # (the first: () as made, or a list a flush emptied)
            self.writers = [w]
            if TRACK is not None:
                TRACK(self)

    @property
    def rows(self):
        return self.buf.shape[0]

    @property
    def row_elems(self):
        return self.buf.shape[1]


class PendingWrite:
    """A write recorded into an allocation's memory (``setTo``, ``dst=``, ``copyTo`` into a
    view): the node and where it goes. It must happen while the memory lives, whether or not
    the GpuMat that asked for it does (a temporary ROI view's ``setTo``): the allocation holds
    the record, the record holds its GpuMat weakly (no reference cycle), and a flush writes an
    orphaned record through a stand-in GpuMat (runtime.live_pending). Dropped once written
    (GpuMat._bind_result)."""
    __slots__ = ("mat", "cls", "node", "y0", "x0", "stand_in", "thread")

    def __init__(self, mat, node):
        self.thread = threading.get_ident()     # (a flush computes its own thread's writes)
        self.mat, self.cls = weakref.ref(mat), type(mat)
        self.node, self.y0, self.x0 = node, mat._y0, mat._x0
        self.stand_in = None       # the GpuMat a flush writes an orphaned record through

    def handle(self, alloc):
        """The GpuMat whose binding completes this write: its own, or a stand-in when that one
        is gone or holds something else now (None: the write is done)."""
        m = self.mat()
        if m is not None and m._node is self.node and m._alloc is alloc:
            return m
        s = self.stand_in
        if s is None:
            n = self.node
            s = self.stand_in = self.cls._over(alloc, n.rows, n.cols, n.depth, n.cn)
            s._y0, s._x0, s._node = self.y0, self.x0, self.node
        return s if s._node is self.node else None


class Source:
    """An immutable view of materialised data: a buffer and a region of it."""
    __slots__ = ("buf", "y0", "x0", "rows", "cols", "depth", "cn", "rgen", "rpos", "__weakref__")
    is_source = True

    def __init__(self, buf, y0, x0, rows, cols, depth, cn):
        self.buf, self.y0, self.x0 = buf, y0, x0
        self.rows, self.cols, self.depth, self.cn = rows, cols, depth, cn
        self.rgen = 0              # the recording (Recording.gen) that numbered it, at rpos

    def __repr__(self):
        return f"Source({self.rows}x{self.cols}x{self.cn} d{self.depth} @({self.y0},{self.x0}))"


class Node:
    """One recorded op. ``result`` is set once the node has been computed into memory, so other
    pending consumers read it rather than computing it again."""
    __slots__ = ("op", "inputs", "static", "dyn", "rows", "cols", "depth", "cn", "result",
                 "height", "seq", "rgen", "rpos", "device", "__weakref__")
    is_source = False

    def __init__(self, op, inputs, static, dyn, rows, cols, depth, cn):
        self.seq = next(_RECORDED)     # recording order: every input has a smaller number
        self.op, self.inputs, self.static, self.dyn = op, inputs, static, dyn
        self.rows, self.cols, self.depth, self.cn = rows, cols, depth, cn
        self.result = None
        self.rgen = 0
        if MULTI_DEVICE:
            self.device = _THREAD.device
        h = 0
        rec = _THREAD.rec
        recording = rec.open
        gen, refs = rec.gen, []
        me = None
        for v in inputs:
            if not v.is_source:
                if v.result is not None:
                    v = v.result                      # computed earlier: read from memory
                elif v.height >= h:
                    h = v.height + 1
            if v.is_source:                           # READERS, inline: a read of memory
                if me is None:
                    me = weakref.ref(self)
                lst = READERS.get(id(v.buf))
                if lst is None:
                    READERS[id(v.buf)] = [me]
                elif lst[-1] is not me:
                    lst.append(me)
                    if len(lst) >= 64 and not len(lst) & (len(lst) - 1):
                        prune_readers(v.buf, lst)     # (a frame read every frame, never written)
            if recording:
                refs.append(v.rpos if v.rgen == gen else rec.first_seen(v))
        self.height = h
        if recording and rec.open:                    # (reading an older pending result closes it)
            # Recording.add, inline: this runs for every recorded call
            objs = rec.objs
            p = self.rpos = len(objs)
            self.rgen = gen
            objs.append(me or weakref.ref(self))
            rec.tokens.append((op, static, depth, cn, rows, cols, h, tuple(refs)))
            if p >= rec.LIMIT:
                rec.close()

    def __repr__(self):
        return f"Node({self.op.name}{self.static} -> {self.rows}x{self.cols}x{self.cn} d{self.depth})"


def device_of(value):
    """The device whose memory ``value`` reads: a node recorded after MULTI_DEVICE carries its
    thread's device (``device``, unset before), memory its allocation's (Source has none: 0)."""
    return getattr(value, "device", 0)


class Recording:
    """What was recorded since the last flush, encoded as it is recorded, so a flush that
    repeats an earlier one (the next frame, the same ROI loop) finds its plan without walking
    the graph (see plancache.PlanCache.replay).

    ``objs`` holds weak references to the recorded nodes and the memory they read, in
    first-use order (a result the user dropped must not keep its frames alive until the next
    flush); each value carries its position (``rpos``) and the number of the recording that
    gave it (``rgen``: recordings are numbered, so a value of an earlier one is never taken
    for one of this). ``tokens`` holds one structural token each (a node: op, static
    parameters, type, size, height and the positions of its inputs; memory: which buffer —
    numbered in first-seen order — type and size). A recording *closes* (stops encoding and
    lets go of its objects) when a node reads a pending result of an earlier flush, which its
    positions cannot name, or when it holds more than ``LIMIT`` values: such flushes are
    planned the general way.
    """
    __slots__ = ("objs", "tokens", "bufs", "nbufs", "open", "gen", "__weakref__")
    LIMIT = 8192

    def __init__(self):
        self.objs, self.tokens, self.bufs = [], [], {}
        self.nbufs = 0              # buffers numbered so far (an id may come back: not len(bufs))
        self.open = True
        self.gen = next(_GENERATIONS)
        OPEN[self.gen] = weakref.ref(self)
        if len(OPEN) >= _OPEN_PRUNE[0]:       # (recordings of threads that ended)
            prune_open()

    def first_seen(self, v):
        """The position of a value no recorded node has read yet (memory, or an older pending
        result, which closes the recording)."""
        if not v.is_source or not self.open:
            self.close()
            return -1
        buf, bufs = v.buf, self.bufs
        known = bufs.get(id(buf))
        if known is None or known[1]() is not buf:
            try:
                known = bufs[id(buf)] = (self.nbufs, weakref.ref(buf))
            except TypeError:          # memory of a kind that takes no weak reference
                self.close()
                return -1
            self.nbufs += 1
        return self.add(v, (known[0], v.depth, v.cn, v.rows, v.cols))

    def add(self, v, token):
        objs = self.objs
        p = v.rpos = len(objs)
        v.rgen = self.gen
        objs.append(weakref.ref(v))
        self.tokens.append(token)
        if p >= self.LIMIT:
            self.close()
        return p

    def position(self, v):
        """``v``'s position; KeyError when ``v`` was not recorded here."""
        if v.rgen != self.gen:                 # (a closed recording's gen is -1: no value's)
            raise KeyError(id(v))
        return v.rpos

    def values(self):
        """The recorded values by position (None where one is gone)."""
        if VALUES_OF is not None:
            return VALUES_OF(self.objs)           # (the loop below, in C)
        return [r() for r in self.objs]

    def key(self):
        """The recording's structure, hashable (None once closed)."""
        return tuple(self.tokens) if self.open else None

    def close(self):
        OPEN.pop(self.gen, None)
        self.open = False
        self.gen = -1               # nothing is taken for one of its values any more
        self.objs, self.tokens, self.bufs = [], [], {}


# Each thread records into a recording of its own (replaced by a fresh one at each of its
# flushes, runtime.flush), so two threads running the same pipeline each find their plan again
# instead of one interleaved structure that never repeats. OPEN: the open recordings by gen
# (weakly), so a flush that computes another thread's node can close that thread's recording
# (closed_by_flush): its replay would recompute the node from inputs that may have changed.
OPEN = {}                  # gen -> weak reference to the recording
_OPEN_PRUNE = [64]         # (OPEN's size at which entries of gone recordings are dropped)


class _Thread(threading.local):
    """What is per thread: the open recording and the current device (CUDA's is per thread)."""

    def __init__(self):
        self.rec = Recording()
        self.device = 0


_THREAD = _Thread()
# True once a device other than 0 was selected: from then on, nodes and memory carry their
# device and an op reading another device's data is an error (a single-GPU process never checks)
MULTI_DEVICE = False


def current_device():
    return _THREAD.device


def recording():
    """The calling thread's open recording."""
    return _THREAD.rec

# The reader index: id(buffer) -> weak references to nodes that may read that buffer when they
# are computed — a node recorded with a region of it as an input, or a node computed into it
# that others took as an input (runtime._let_go_of_history registers those). A list is pruned
# when it reaches a power of two (64, 128, ...), so memory read every frame and never written
# keeps only its live readers. A write asks
# has_readers(buf) instead of walking every pending result's graph, so recording thousands of
# frames before a flush stays linear; the walk (runtime.readers_of) runs only where a reader
# may exist, ahead of the flush that then computes it.
READERS = {}
_SWEEP_AT = [4096]


def _reads(n, buf):
    """True while node ``n`` may still read ``buf``: pending, or computed into ``buf`` and kept
    as an input by another node (which then reads ``buf`` when it is computed)."""
    if n is None:
        return False
    r = n.result
    return r is None or r.buf is buf


def prune_readers(buf, lst):
    """``buf``'s readers that may still read it, kept in place of ``lst`` (dropped when none)."""
    live = [r for r in lst if _reads(r(), buf)]
    if live:
        lst[:] = live
    else:
        del READERS[id(buf)]
    return live


def has_readers(buf, ignore=None):
    """True when a pending computation other than node ``ignore`` may read ``buf`` (never
    False when one does)."""
    lst = READERS.get(id(buf))
    if not lst:
        return False
    live = prune_readers(buf, lst)
    return bool(live) and (ignore is None or any(r() is not ignore for r in live))


def add_reader(buf, node):
    """Register ``node`` as a possible reader of ``buf`` (a computed node others consume)."""
    lst = READERS.get(id(buf))
    if lst is None:
        READERS[id(buf)] = [weakref.ref(node)]
    else:
        lst.append(weakref.ref(node))


def sweep_readers():
    """Drop the entries of buffers nobody may read any more (amortised: the next sweep waits
    until the index has doubled)."""
    for key, lst in list(READERS.items()):
        live = [r for r in lst if (n := r()) is not None and (n.result is None or id(n.result.buf) == key)]
        if live:
            READERS[key] = live
        else:
            del READERS[key]
    _SWEEP_AT[0] = max(4096, 2 * len(READERS))


def new_recording():
    """Start a new recording in the calling thread; returns the one that ends (in C where
    lazycv/_hotpath.c was built: _hotpath.new_recording, bound by recipes.bind)."""
    t = _THREAD
    done, t.rec = t.rec, Recording()
    OPEN.pop(done.gen, None)
    return done


PY_NEW_RECORDING = new_recording


def prune_open():
    """Drop OPEN's entries of recordings that are gone (threads that ended)."""
    for g in [g for g, r in OPEN.items() if r() is None]:
        del OPEN[g]
    _OPEN_PRUNE[0] = max(64, 2 * len(OPEN))


def closed_by_flush(node):
    """A flush computed ``node`` into memory: the recording of another thread that numbered
    it must not be replayed (its plan would compute the node again)."""
    ref = OPEN.get(node.rgen)
    rec = ref() if ref is not None else None
    if rec is not None and rec is not _THREAD.rec:
        rec.close()


def mark():
    """A number below the ``seq`` of every node recorded from now on."""
    return next(_RECORDED)


def resolved(value):
    """The value to read: a computed node is read from its result."""
    if not value.is_source and value.result is not None:
        return value.result
    return value


def walk(values):
    """Pending nodes reachable from ``values`` (computed ones count as sources), post-order.

    Iterative, so an accumulation loop thousands of ops deep cannot hit Python's recursion limit.
    """
    order, done, opened = [], set(), set()
    stack = [(resolved(v), False) for v in reversed(values)]
    while stack:
        v, expanded = stack.pop()
        if v.is_source:
            continue
        if expanded:
            if id(v) not in done:
                done.add(id(v))
                order.append(v)
            continue
        if id(v) in opened:
            continue
        opened.add(id(v))
        stack.append((v, True))
        for i in reversed(v.inputs):
            i = resolved(i)
            if not i.is_source and id(i) not in opened:
                stack.append((i, False))
    return order


def source_bufs(values):
    """ids of every buffer the pending computation of ``values`` reads."""
    bufs = set()
    for v in values:
        v = resolved(v)
        if v.is_source:
            bufs.add(id(v.buf))
    for n in walk(values):
        for i in n.inputs:
            i = resolved(i)
            if i.is_source:
                bufs.add(id(i.buf))
    return bufs
