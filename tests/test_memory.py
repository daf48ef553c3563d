"""The buffer pools (device buffers, host arrays for downloads): storage is recycled only once
nothing can see it any more."""
import gc

import cv2
import numpy as np
import pytest

from lazycv.memory import BufferPool, host_pool

from .conftest import BACKEND, assert_close, rand_image, upload


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


@pytest.mark.parametrize("shared", [True, False], ids=["shared base", "per-item finalizers"])
def test_a_pinned_slab_item_keeps_its_slab_out_of_the_pool(shared):
    """Pinning an item of a slab pins the slab. With a shared base, an item's base is the slab,
    not the memoryview the pool's finalizer is on; with per-item finalizers (the simulator's
    pool) a pin had no callback to drop. Both pins used to miss, and the storage came back."""
    pool = host_pool(1 << 30) if shared else _pool()
    slab, items = pool.alloc_batch(3, (2, 5), np.dtype(np.int16))
    pool.pin(items[1])
    del slab, items
    gc.collect()
    assert pool.idle_bytes == 0
    if shared:
        b = pool.alloc((4,), np.dtype(np.int16))
        pool.pin(b[1:])                              # a slice of a single buffer too
        del b
        gc.collect()
        assert pool.idle_bytes == 0
    slab, items = pool.alloc_batch(3, (2, 5), np.dtype(np.int16))
    del slab, items                                  # an unpinned slab does go back
    gc.collect()
    assert pool.idle_bytes == 3 * 2 * 5 * 2


def _shared_base_pool():
    """The CPU backend's configuration: views share one memoryview base, one finalizer a slab."""
    return host_pool(1 << 30)


@pytest.mark.parametrize("make", [_pool, _shared_base_pool], ids=["per-item finalizers", "shared base"])
def test_slab_returns_only_after_every_item_is_gone(make):
    pool = make()
    slab, items = pool.alloc_batch(3, (2, 5), np.dtype(np.int16))
    addr = slab.ctypes.data
    # the shared base also keeps a slice's storage taken (per-item finalizers see items only)
    keep = items[1][1:] if make is _shared_base_pool else items[1]
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


# ---------------------------------------------------------------- downloads into recycled memory

def test_host_arrays_come_back_only_when_every_view_is_gone():
    pool = host_pool(1 << 30, exposed=True)
    a = pool.alloc((4, 5), np.dtype(np.float32))
    a[:] = 7
    addr = a.ctypes.data
    part = a[1:3]                      # a slice of the array keeps the storage taken
    del a
    gc.collect()
    b = pool.alloc((4, 5), np.dtype(np.float32))
    assert b.ctypes.data != addr
    b[:] = 1
    assert (part == 7).all()
    del part
    gc.collect()
    c = pool.alloc((4, 5), np.dtype(np.float32))
    assert c.ctypes.data == addr and c.flags.writeable and c.flags.c_contiguous


def test_page_locked_memory_comes_back_only_when_every_view_is_gone():
    """HostMem's page-locked memory on CUDA (CudaBackend.pinned): recycled, since page-locking
    costs about a millisecond a megabyte, but never while a HostMem or an array over it lives.
    (numba-cuda's pinned_array stands in: the pool's rules are what is tested.)"""
    from types import SimpleNamespace

    from lazycv.backends.cuda import CudaBackend
    made = []
    fake = SimpleNamespace(cuda=SimpleNamespace(pinned_array=lambda shape, dt: made.append(1) or np.empty(shape, dt)))
    h = CudaBackend.pinned(fake, (6, 5, 3), np.uint8)
    h[...] = 7
    addr = h.ctypes.data
    header = h[1:3]                           # a user's slice of the HostMem's matrix header
    del h
    gc.collect()
    other = CudaBackend.pinned(fake, (6, 5, 3), np.uint8)
    other[...] = 1
    assert other.ctypes.data != addr and (header == 7).all()
    other_addr = other.ctypes.data
    del other, header
    gc.collect()
    again = CudaBackend.pinned(fake, (6, 5, 3), np.uint8)
    assert again.ctypes.data in (addr, other_addr)
    assert len(made) == 2, "page-locked memory no view reaches was allocated again"


def test_downloads_reuse_memory_and_never_overwrite_a_kept_result(rng):
    frames = [rand_image(rng, 6, 9, 3, np.uint8) for _ in range(3)]
    kept = cv2.cuda.resize(upload(frames[0]), (5, 4)).download()
    kept_view = kept[:, :, 0]
    for f in frames[1:]:
        for _ in range(2):             # dropped at once: the next download may reuse its memory
            got = cv2.cuda.resize(upload(f), (5, 4)).download()
            assert_close(got, cv2.resize(f, (5, 4)), what="download")
            del got
            gc.collect()
    assert_close(kept, cv2.resize(frames[0], (5, 4)), what="a result kept across later downloads")
    assert_close(kept_view, cv2.resize(frames[0], (5, 4))[:, :, 0], what="a view kept")


@pytest.mark.skipif(BACKEND != "cpu", reason="the CPU backend's two builds of a kernel")
def test_an_output_overlapping_a_source_takes_the_plain_build_others_the_noalias_one(rng):
    """The noalias build promises that no output overlaps what the kernel reads: an in-place
    write (dst = src) must take the plain build, and both compute what OpenCV does."""
    from lazycv.runtime import STATE
    be = STATE.backend
    used, real = [], be._kernel_for
    be._kernel_for = lambda c, args, skipped: used.append(real(c, args, skipped).py_func.__name__) or \
        real(c, args, skipped)
    try:
        a = rand_image(rng, 40, 50, 3, np.uint8)
        g = upload(a)
        np.testing.assert_array_equal(cv2.cuda.add(g, (1, 2, 3)).download(), cv2.add(a, (1, 2, 3, 0)))
        assert used[-1] == "kernel"
        cv2.cuda.add(g, (1, 2, 3), dst=g)
        np.testing.assert_array_equal(g.download(), cv2.add(a, (1, 2, 3, 0)))
        assert used[-1] == "kernel_aliased"
    finally:
        be._kernel_for = real
