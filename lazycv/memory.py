"""A buffer pool for both backends.

Fresh allocations are expensive on both sides: cudaMalloc/cudaFree synchronise the device, and
on the CPU a new multi-megabyte array costs milliseconds of first-touch page faults. Results of
the same size recur every frame, so buffers are recycled: each buffer handed out is a fresh
view of pooled storage, and the storage returns to the pool when that view is garbage. A buffer
whose address was handed to foreign code (``pin``) is never recycled.
"""
import os
import threading
import time
import weakref
from sys import getrefcount

import numpy as np

from .errors import StsNoMem, cv_error

IDLE_SECONDS = 10.0          # idle storage unused this long is let go (LAZYCV_POOL_IDLE_S)
FREE_FRACTION = 8            # default cap: an eighth of the memory free when the pool starts
MIN_CAP = 64 << 20


def pool_cap(env_name, ceiling_mb, free_bytes):
    """The idle-bytes cap of a pool: ``$env_name`` MB when set, else an eighth of the memory
    free now (``free_bytes()``, None when unknown), at most ``ceiling_mb``, at least 64 MB. A
    service running beside other work keeps at most that much idle, never a fixed GiB."""
    env = os.environ.get(env_name)
    if env:
        return int(env) << 20
    ceiling = ceiling_mb << 20
    try:
        free = free_bytes()
    except Exception:             # (a device that cannot say: the ceiling)
        free = None
    if not free:
        return ceiling
    return max(MIN_CAP, min(ceiling, free // FREE_FRACTION))


def host_free_bytes():
    page = os.sysconf("SC_PAGE_SIZE")
    return page * os.sysconf("SC_AVPHYS_PAGES")


def _out_of_memory(e):
    """A failed allocation: numpy's MemoryError or the CUDA driver's out-of-memory error."""
    return isinstance(e, MemoryError) or "OUT_OF_MEMORY" in str(e).upper()


class BufferPool:
    """Free lists keyed by (shape, dtype), bounded by ``cap_bytes`` of idle storage; the least
    recently returned storage goes first when the cap is reached, and any left idle for
    ``idle_seconds`` goes within the next 64 allocations (sizes that stop recurring are let go)."""

    def __init__(self, new_storage, view_of, cap_bytes, items_of=None, lifetime_of=None, idle_seconds=None):
        """``items_of(storage, n, slab)``, when given, builds a slab's item views that keep the
        slab's lifetime object alive (then one finalizer on it suffices); by default items are
        ``storage[b]`` and each gets its own finalizer. ``lifetime_of(view)`` is the object
        whose end means nothing can reach the view's storage any more (default: the view)."""
        self._new, self._view, self.cap = new_storage, view_of, cap_bytes
        self._items = items_of
        self._lifetime = lifetime_of or (lambda view: view)
        self.idle_seconds = float(os.environ.get("LAZYCV_POOL_IDLE_S", IDLE_SECONDS)) \
            if idle_seconds is None else idle_seconds
        self._free = {}
        self._idle_bytes = 0
        self._finalizers = {}
        self._lock = threading.Lock()          # (eviction; the hot path needs none)
        self._allocs = 0
        self._now = time.monotonic               # (kept: callbacks may run at interpreter exit)
        self._kept = None                        # a program's last outputs (outputs_for)

    def _evict(self):
        """Let the least recently returned storage go while over the cap (lock held). The free
        lists are read from a copy: a buffer can come back (_release, a weak reference's
        callback) at any allocation, even while a dict is being iterated."""
        while self._idle_bytes > self.cap and self._free:
            free = self._free.copy()
            self._drop(min(free, key=lambda k: free[k][0][1] if free[k] else 0))

    def _drop(self, key):
        """Let the oldest idle storage of ``key`` go (lock held)."""
        lst = self._free.get(key)
        try:
            storage, _ = lst.pop(0)
            self._idle_bytes -= storage.nbytes
        except (IndexError, AttributeError):    # another thread took the last one
            pass
        if not lst:
            self._free.pop(key, None)

    def _trim_idle(self):
        """Let storage idle longer than ``idle_seconds`` go (lock held)."""
        oldest = self._now() - self.idle_seconds
        kept = self._kept
        if kept is not None and kept.used < oldest:
            self._kept = None
        for key, lst in self._free.copy().items():   # (a copy: see _evict)
            while lst and lst[0][1] < oldest:
                self._drop(key)

    def _take(self, key, shape, dtype):
        """Idle storage of this key, or new storage."""
        self._allocs += 1
        if not self._allocs & 63:               # (every 64 allocations: a scan of the sizes)
            with self._lock:
                self._trim_idle()
        lst = self._free.get(key)
        if lst:
            try:
                storage, _ = lst.pop()
                self._idle_bytes -= storage.nbytes
                return storage
            except IndexError:                 # another thread took the last one
                pass
        try:
            return self._new(shape, dtype)
        except Exception as e:
            if not _out_of_memory(e):
                raise
        self.clear()                           # the idle storage may be what is missing
        try:
            return self._new(shape, dtype)
        except Exception as e:
            if not _out_of_memory(e):
                raise
            nbytes = int(np.prod(shape)) * dtype.itemsize
            raise cv_error("GpuMat::allocate", f"out of memory allocating {nbytes / 2 ** 20:.1f} MiB "
                                               f"({shape}, {dtype})", StsNoMem) from None

    def alloc(self, shape, dtype):
        key = (shape, dtype.str)
        storage = self._take(key, shape, dtype)
        buf = self._view(storage)
        self._when_gone(self._lifetime(buf), key, storage)
        return buf

    def _when_gone(self, obj, key, storage):
        """Return ``storage`` to the pool once ``obj`` is garbage: a weak reference with a
        callback (weakref.finalize costs 3-4x more, and this runs for every buffer), kept by
        ``obj``'s id — unique while ``obj`` lives, which is as long as the entry stays."""
        release, ident = self._release, id(obj)
        self._finalizers[ident] = weakref.ref(obj, lambda _r: release(key, storage, ident))

    def alloc_batch(self, n, shape, dtype):
        """One slab of ``n`` buffers of ``shape``: returns (slab, [item views]). The slab's
        storage returns to the pool once the slab and every item view are garbage."""
        full = (n,) + tuple(shape)
        key = (full, dtype.str)
        storage = self._take(key, full, dtype)
        slab = self._view(storage)
        if self._items is not None:
            items = self._items(storage, n, slab)
            self._when_gone(self._lifetime(slab), key, storage)
            return slab, items
        items = [storage[b] for b in range(n)]
        left = [n + 1]
        finalizers = self._finalizers

        def one_gone(ident):
            finalizers.pop(ident, None)
            left[0] -= 1
            if left[0] == 0:
                self._release(key, storage, None)
        # a view's callback is kept by its id, as _when_gone's: pinning a view drops it, so
        # the count never reaches zero and the slab's storage is never recycled
        for v in [slab] + items:
            finalizers[id(v)] = weakref.ref(v, lambda _r, ident=id(v): one_gone(ident))
        return slab, items

    def _release(self, key, storage, ident):
        """``storage``'s last view died (a weakref callback: any thread, even inside a garbage
        collection during an allocation, so no lock): filed as the most recent return; past
        the cap the least recent ones go."""
        self._finalizers.pop(ident, None)
        if storage.nbytes > self.cap:
            return
        self._free.setdefault(key, []).append((storage, self._now()))
        self._idle_bytes += storage.nbytes
        if self._idle_bytes > self.cap and self._lock.acquire(blocking=False):
            try:
                self._evict()
            finally:
                self._lock.release()

    def pin(self, buf):
        """Never recycle ``buf``'s storage (its address escaped to foreign code): dropping its
        weak reference drops the callback."""
        self._finalizers.pop(id(self._lifetime(buf)), None)

    def outputs_for(self, owner, shapes):
        """The output buffers of one run of ``owner`` (a replayed program), one per ``(n,
        shape, dtype)`` of ``shapes`` (n None: a buffer, else a slab of n, as (slab, items)):
        the buffers of ``owner``'s last run again when nothing but this pool holds them any
        more, else new ones from the pool.

        A loop that replays one flush a frame (W2) drops each frame's results before the
        next flush: taking them back skips the pool's request, the fresh views and items,
        their finalizers and, when they die, the return to the free lists. "Nothing holds
        them" is read from the reference counts, compared with the counts taken when the
        buffers were new and held only here; a pinned buffer (its address escaped) is never
        taken back. Only the last owner's buffers are kept: at most one flush's outputs sit
        outside the free lists and their cap."""
        kept = self._kept
        if kept is not None and kept.owner is owner and kept.counts == _refcounts(kept.objs):
            finalizers = self._finalizers
            for lt in kept.lifetimes:
                if id(lt) not in finalizers:
                    break
            else:
                kept.used = self._now()
                return kept.bufs
        bufs = [self.alloc(shape, dtype) if n is None else self.alloc_batch(n, shape, dtype)
                for n, shape, dtype in shapes]
        self._kept = _Kept(owner, bufs, *self._watched(shapes, bufs), self._now())
        return bufs

    def _watched(self, shapes, bufs):
        """(objs, lifetimes) of outputs_for's new ``bufs``: every buffer, slab and item, and the
        objects a pin drops the callback of (a buffer's or slab's lifetime object, or each view
        of a slab whose views are tracked one by one). Made here so that no local of the caller
        holds them when their counts are taken."""
        views = [(b,) if n is None else (b[0], *b[1]) for (n, _, _), b in zip(shapes, bufs)]
        lifetimes = tuple(lt for v in views for lt in
                          ((self._lifetime(v[0]),) if len(v) == 1 or self._items is not None else v))
        return lifetimes + tuple(x for v in views for x in v), lifetimes

    def clear(self):
        with self._lock:
            self._kept = None
            self._free.clear()
            self._idle_bytes = 0

    def trim(self):
        """Let go now of what is over the cap or idle too long."""
        with self._lock:
            self._evict()
            self._trim_idle()

    @property
    def idle_bytes(self):
        self.trim()
        return self._idle_bytes


class _Kept:
    """BufferPool.outputs_for's record of one run's outputs: ``objs`` are the objects whose
    reference counts tell whether anything else holds them (each buffer and each lifetime
    object, BufferPool's ``lifetime_of``), ``counts`` those counts while only this record held
    them."""
    __slots__ = ("owner", "bufs", "objs", "lifetimes", "counts", "used")

    def __init__(self, owner, bufs, objs, lifetimes, now):
        self.owner, self.bufs, self.objs, self.lifetimes, self.used = owner, bufs, objs, lifetimes, now
        self.counts = _refcounts(objs)


def _refcounts(objs):
    """The reference counts of ``objs`` (held by one tuple), measured the same way each time."""
    return list(map(getrefcount, objs))


def host_view(storage):
    """An array over ``storage`` whose ``base`` is a memoryview at the end of every view or
    slice's chain of bases (:func:`host_lifetime`): that memoryview's end is the storage's
    last use. None where numpy does not do that."""
    arr = np.asarray(memoryview(storage))
    owner = arr.base
    if type(owner) is not memoryview or owner.obj is not storage or arr.dtype != storage.dtype:
        return None
    return arr


def host_lifetime(view):
    """The memoryview under a :func:`host_view` array or any view of it: numpy points a view's
    ``base`` at the array it was taken from when that array's own base is not an array (a
    slab item's base is the slab), so the chain is walked to its end."""
    base = view.base
    while isinstance(base, np.ndarray):
        base = base.base
    return base


def host_pool(cap_bytes, exposed=False):
    """A pool of numpy arrays (the CPU backend's buffers, or with ``exposed`` the arrays
    ``download()`` hands to users).

    A fresh multi-megabyte array pays first-touch page faults (several ms per 5 MB on small
    machines) whenever the allocator has returned the previous one to the OS; warm memory costs
    the copy only. Each array is a :func:`host_view`, so its storage comes back once every view
    or slice of it is garbage, and a slab's items end at the slab's base: one finalizer a slab.
    Where numpy does not give such bases, views are tracked one by one — fine for lazycv's own
    buffers, not for arrays users may slice, which are then not recycled (``exposed``)."""
    def new(shape, dt):
        return np.empty(shape, dt)
    if host_view(np.empty(1, np.uint8)) is None:
        return BufferPool(new, lambda st: st.view(), 0 if exposed else cap_bytes)
    return BufferPool(new, host_view, cap_bytes,
                      items_of=lambda storage, n, slab: [slab[b] for b in range(n)],
                      lifetime_of=host_lifetime)
