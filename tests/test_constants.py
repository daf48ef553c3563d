"""A GpuMat whose memory holds what a fill (setTo) wrote — a std image for normalising — is
read by later kernels as values, not loaded (GpuMat._constant, Allocation.constant), until
anything writes that memory: another setTo, a write through a ROI view, a dst= result, an
upload, or foreign code given its address. Every case against the values the memory holds."""
import ctypes

import cv2
import numpy as np
import pytest

import lazycv
from lazycv import ir

from .conftest import assert_close, rand_image, upload

STD = (0.229, 0.224, 0.225)


def constant(rows, cols, s=STD):
    m = cv2.cuda_GpuMat(rows, cols, cv2.CV_32FC3)
    m.setTo(s)
    lazycv.materialize(m)                 # in memory now, no pending write
    assert m._node is None
    return m


def divided(a, by):
    """cv2.cuda.divide(a, by) and the CPU reference from what ``by`` holds now."""
    want = cv2.divide(a, by.download().copy())
    got = cv2.cuda.divide(upload(a), by)
    return got, want


def reads_memory_of(result, m):
    return id(m._alloc.buf) in ir.source_bufs([result._value()])


@pytest.mark.sim
def test_a_filled_gpumat_is_read_as_values(rng):
    a = rand_image(rng, 5, 7, 3, np.float32)
    std = constant(5, 7)
    got, want = divided(a, std)
    assert not reads_memory_of(got, std)
    assert_close(got.download(), want, 0)
    view = cv2.cuda_GpuMat(std, (2, 1, 4, 3))            # a region of it too
    b = rand_image(rng, 3, 4, 3, np.float32)
    got, want = divided(b, view)
    assert not reads_memory_of(got, std)
    assert_close(got.download(), want, 0)


@pytest.mark.sim
def test_another_setto_gives_its_values(rng):
    a = rand_image(rng, 4, 6, 3, np.float32)
    std = constant(4, 6)
    first, want1 = divided(a, std)
    std.setTo((2.0, 4.0, 8.0))
    second, want2 = divided(a, std)
    assert_close(first.download(), want1, 0)
    assert_close(second.download(), want2, 0)
    assert not np.array_equal(want1, want2)


def test_a_write_through_a_roi_view_is_seen(rng):
    a = rand_image(rng, 4, 6, 3, np.float32)
    std = constant(4, 6)
    cv2.cuda_GpuMat(std, (1, 1, 3, 2)).setTo((5.0, 6.0, 7.0))
    got, want = divided(a, std)
    assert reads_memory_of(got, std)
    assert_close(got.download(), want, 0)
    assert (want[1:3, 1:4] != cv2.divide(a, np.full_like(a, STD))[1:3, 1:4]).all()


@pytest.mark.parametrize("how", ["dst", "upload", "foreign"])
def test_other_writes_are_seen(rng, how):
    a = rand_image(rng, 4, 6, 3, np.float32)
    std = constant(4, 6)
    new = rand_image(rng, 4, 6, 3, np.float32) + np.float32(2)
    if how == "dst":
        cv2.cuda.add(upload(new), (0.0, 0.0, 0.0), dst=std)
    elif how == "upload":
        std.upload(new)
    else:                                   # foreign code writes the memory through its address
        ptr = std.cudaPtr()
        ctypes.memmove(ptr, np.ascontiguousarray(new).ctypes.data, new.nbytes)
    got, want = divided(a, std)
    assert_close(std.download(), new, 0, what="the memory")
    assert_close(got.download(), cv2.divide(a, new), 0)
    assert_close(got.download(), want, 0)


def test_a_view_of_other_channels_reads_the_memory(rng):
    std = constant(3, 4)
    flat = std.reshape(1)                   # the same memory as 12 one-channel pixels a row
    got = cv2.cuda.multiply(flat, 2.0).download()
    assert_close(got, np.tile(np.float32(STD), (3, 4)) * np.float32(2), 0)


def test_eager_mode_reads_the_memory(rng):
    a = rand_image(rng, 4, 6, 3, np.float32)
    with lazycv.enabled(fuse=False):
        std = constant(4, 6)
        lazycv.reset_stats()
        got, want = divided(a, std)
        assert_close(got.download(), want, 0)
        assert lazycv.stats()["kernels_launched"] == 1       # (one kernel an op, as OpenCV)
