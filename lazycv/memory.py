"""A buffer pool for both backends.

Fresh allocations are expensive on both sides: cudaMalloc/cudaFree synchronise the device, and
on the CPU a new multi-megabyte array costs milliseconds of first-touch page faults. Results of
the same size recur every frame, so buffers are recycled: each buffer handed out is a fresh
view of pooled storage, and the storage returns to the pool when that view is garbage. A buffer
whose address was handed to foreign code (``pin``) is never recycled.
"""
import weakref

import numpy as np


class BufferPool:
    """Free lists keyed by (shape, dtype), bounded by ``cap_bytes`` of idle storage."""

    def __init__(self, new_storage, view_of, cap_bytes, items_of=None, lifetime_of=None):
        """``items_of(storage, n, slab)``, when given, builds a slab's item views that keep the
        slab's lifetime object alive (then one finalizer on it suffices); by default items are
        ``storage[b]`` and each gets its own finalizer. ``lifetime_of(view)`` is the object
        whose end means nothing can reach the view's storage any more (default: the view)."""
        self._new, self._view, self.cap = new_storage, view_of, cap_bytes
        self._items = items_of
        self._lifetime = lifetime_of or (lambda view: view)
        self._free = {}
        self._idle_bytes = 0
        self._finalizers = {}

    def _take(self, key, shape, dtype):
        """Idle storage of this key, or new storage."""
        lst = self._free.get(key)
        if lst:
            try:
                storage = lst.pop()
                self._idle_bytes -= storage.nbytes
                return storage
            except IndexError:              # another thread took the last one
                pass
        return self._new(shape, dtype)

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

        def one_gone():
            left[0] -= 1
            if left[0] == 0:
                self._release(key, storage, None)
        for v in [slab] + items:
            f = weakref.finalize(v, one_gone)
            f.atexit = False
        return slab, items

    def _release(self, key, storage, ident):
        self._finalizers.pop(ident, None)
        if self._idle_bytes + storage.nbytes > self.cap:
            return                       # let it go: the pool is full
        self._free.setdefault(key, []).append(storage)
        self._idle_bytes += storage.nbytes

    def pin(self, buf):
        """Never recycle ``buf``'s storage (its address escaped to foreign code): dropping its
        weak reference drops the callback."""
        self._finalizers.pop(id(self._lifetime(buf)), None)

    def clear(self):
        self._free.clear()
        self._idle_bytes = 0

    @property
    def idle_bytes(self):
        return self._idle_bytes


def host_view(storage):
    """An array over ``storage`` whose ``base`` is a memoryview that every view or slice of it
    shares (numpy collapses base chains to the first object that is not an array): that
    memoryview's end is the storage's last use. None where numpy does not do that."""
    arr = np.asarray(memoryview(storage))
    owner = arr.base
    if type(owner) is not memoryview or owner.obj is not storage or arr.dtype != storage.dtype:
        return None
    return arr


def host_pool(cap_bytes, exposed=False):
    """A pool of numpy arrays (the CPU backend's buffers, or with ``exposed`` the arrays
    ``download()`` hands to users).

    A fresh multi-megabyte array pays first-touch page faults (several ms per 5 MB on small
    machines) whenever the allocator has returned the previous one to the OS; warm memory costs
    the copy only. Each array is a :func:`host_view`, so its storage comes back once every view
    or slice of it is garbage, and a slab's items share the slab's base: one finalizer a slab.
    Where numpy does not give such bases, views are tracked one by one — fine for lazycv's own
    buffers, not for arrays users may slice, which are then not recycled (``exposed``)."""
    def new(shape, dt):
        return np.empty(shape, dt)
    if host_view(np.empty(1, np.uint8)) is None:
        return BufferPool(new, lambda st: st.view(), 0 if exposed else cap_bytes)
    return BufferPool(new, host_view, cap_bytes,
                      items_of=lambda storage, n, slab: [slab[b] for b in range(n)],
                      lifetime_of=lambda view: view.base)
