"""The buffer pool: storage is recycled only once nothing can see it any more."""
import gc

import numpy as np

from lazycv.memory import BufferPool


def _pool(cap=1 << 30):
    return BufferPool(lambda shape, dt: np.empty(shape, dt), lambda st: st.view(), cap)


def test_released_storage_is_reused():
    pool = _pool()
    a = pool.alloc((4, 6), np.dtype(np.uint8))
    addr = a.ctypes.data
    del a
    gc.collect()
    b = pool.alloc((4, 6), np.dtype(np.uint8))
    assert b.ctypes.data == addr
    c = pool.alloc((4, 6), np.dtype(np.uint8))       # b is alive: c must be other memory
    assert c.ctypes.data != b.ctypes.data


def test_pinned_storage_never_goes_back_to_the_pool():
    """A pinned buffer's address escaped: the pool must not hand it out again (it is freed
    normally once nothing references it)."""
    pool = _pool()
    a = pool.alloc((8,), np.dtype(np.float32))
    pool.pin(a)
    del a
    gc.collect()
    assert pool.idle_bytes == 0
    b = pool.alloc((8,), np.dtype(np.float32))
    del b
    gc.collect()
    assert pool.idle_bytes == 8 * 4                  # an unpinned one does go back


def test_slab_returns_only_after_every_item_is_gone():
    pool = _pool()
    slab, items = pool.alloc_batch(3, (2, 5), np.dtype(np.int16))
    addr = slab.ctypes.data
    keep = items[1]
    del slab, items
    gc.collect()
    assert pool.idle_bytes == 0                     # one item still alive
    keep[...] = 7
    del keep
    gc.collect()
    assert pool.idle_bytes == 3 * 2 * 5 * 2
    slab2, _ = pool.alloc_batch(3, (2, 5), np.dtype(np.int16))
    assert slab2.ctypes.data == addr


def test_pool_is_bounded():
    pool = _pool(cap=100)
    bufs = [pool.alloc((64,), np.dtype(np.uint8)) for _ in range(3)]
    del bufs
    gc.collect()
    assert pool.idle_bytes <= 100
