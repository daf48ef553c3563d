"""Streams, events and buffer pools as OpenCV's Python tests use them, and streams of other
code (``wrapStream``) ordered against lazycv's own launches."""
import cv2
import numpy as np
import pytest

import lazycv
from .conftest import BACKEND, rand_image, upload


@pytest.mark.sim
def test_stream_handles_round_trip_through_wrapStream():
    """OpenCV's test_cuda_interop: a stream's handle is non-zero and wraps back to itself (on
    the CPU backend and the simulator a stable token stands for the handle)."""
    s = cv2.cuda_Stream()
    assert s.cudaPtr() != 0 and s.cudaPtr() == s.cudaPtr()
    w = cv2.cuda.wrapStream(s.cudaPtr())
    assert isinstance(w, cv2.cuda_Stream) and w.cudaPtr() == s.cudaPtr()
    assert cv2.cuda_Stream(1).cudaPtr() != 0                       # cudaStreamNonBlocking
    assert cv2.cuda.Stream.Null().cudaPtr() == 0
    assert cv2.cuda.wrapStream(0).cudaPtr() == 0 and cv2.cuda.wrapStream(0) == cv2.cuda.Stream.Null()


@pytest.mark.parametrize("bad", [-1, "0x10", 1.5, None, True])
def test_wrapStream_rejects_what_is_no_address(bad):
    with pytest.raises(cv2.error, match="wrapStream"):
        cv2.cuda.wrapStream(bad)


@pytest.mark.sim
def test_calls_on_a_wrapped_stream_compute_what_opencv_does(rng):
    a = rand_image(rng, 9, 12, 3, np.uint8)
    own = cv2.cuda_Stream()
    s = cv2.cuda.wrapStream(own.cudaPtr())
    g = cv2.cuda_GpuMat()
    g.upload(a, s)
    r = cv2.cuda.resize(g, (8, 6), interpolation=cv2.INTER_LINEAR, stream=s)
    gray = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY, stream=s)
    out = gray.download(stream=s)
    s.waitForCompletion()
    assert s.queryIfComplete()
    ref = cv2.cvtColor(cv2.resize(a, (8, 6), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2GRAY)
    np.testing.assert_array_equal(out, ref)
    e1, e2 = cv2.cuda.Event(), cv2.cuda.Event()
    e1.record(s)
    cv2.cuda.add(gray, 1, stream=s).download(stream=s)
    e2.record(s)
    e2.waitForCompletion()          # (OpenCV's elapsedTime too needs both events completed)
    assert cv2.cuda.Event.elapsedTime(e1, e2) >= 0
    with pytest.raises(cv2.error, match="Event::record"):
        e1.record("stream")


def test_elapsed_time_of_an_event_not_completed_is_opencvs_error(monkeypatch):
    """CUDA answers cudaErrorNotReady while an event is still pending; OpenCV's elapsedTime
    raises it as cv2.error, and so does lazycv (the backend reports it as None)."""
    e1, e2 = cv2.cuda.Event(), cv2.cuda.Event()
    e1.record()
    e2.record()
    monkeypatch.setattr(type(lazycv.runtime.backend()), "elapsed_ms", lambda self, a, b: None)
    with pytest.raises(cv2.error, match="not completed"):
        cv2.cuda.Event.elapsedTime(e1, e2)


def test_buffer_pool_as_opencvs_test_uses_it():
    """OpenCV's test_cuda_buffer_pool, plus what a buffer is good for."""
    cv2.cuda.setBufferPoolUsage(True)
    cv2.cuda.setBufferPoolConfig(cv2.cuda.getDevice(), 1024 * 1024 * 64, 2)
    pool = cv2.cuda.BufferPool(cv2.cuda.Stream())
    m = pool.getBuffer(1024, 1024, cv2.CV_8UC3)
    cv2.cuda.setBufferPoolUsage(False)
    assert m.size() == (1024, 1024) and m.type() == cv2.CV_8UC3
    small = pool.getBuffer((5, 3), cv2.CV_32FC1)                   # (width, height)
    assert small.size() == (5, 3) and small.type() == cv2.CV_32FC1
    small.setTo(2.5)
    np.testing.assert_array_equal(small.download(), np.full((3, 5), 2.5, np.float32))
    assert cv2.cuda_BufferPool is cv2.cuda.BufferPool


def test_buffer_pool_rejects_bad_arguments():
    with pytest.raises(cv2.error, match="BufferPool"):
        cv2.cuda.BufferPool("stream")
    pool = cv2.cuda.BufferPool(cv2.cuda.Stream())
    with pytest.raises(cv2.error, match="getBuffer"):
        pool.getBuffer(3)
    with pytest.raises(cv2.error, match="getAllocator"):
        pool.getAllocator()


def test_wait_for_completion_leaves_nothing_pending(rng):
    a = rand_image(rng, 6, 7, 1, np.uint8)
    s = cv2.cuda_Stream()
    r = cv2.cuda.add(upload(a), 3, stream=s)
    s.waitForCompletion()
    lazycv.reset_stats()
    np.testing.assert_array_equal(r.download(), cv2.add(a, 3))
    assert lazycv.stats()["kernels_launched"] == 0                 # computed at the wait


def _foreign_stream():
    """(a non-blocking stream of other code, its handle, a sync) from torch or cupy."""
    try:
        import torch
        if torch.cuda.is_available():
            st = torch.cuda.Stream()
            return st, st.cuda_stream, st.synchronize
    except ImportError:
        pass
    cp = pytest.importorskip("cupy")
    st = cp.cuda.Stream(non_blocking=True)
    return st, st.ptr, st.synchronize


@pytest.mark.sim
@pytest.mark.skipif(BACKEND != "cuda", reason="orders a real non-blocking stream of other code")
def test_a_foreign_streams_work_and_lazycvs_launches_are_ordered():
    """Work of a non-blocking torch/cupy stream, then a lazycv call on that stream, then more
    work on it: each step sees the one before (the default stream, where lazycv launches, does
    not order a non-blocking stream by itself)."""
    cp = pytest.importorskip("cupy")
    st, handle, sync = _foreign_stream()
    s = cv2.cuda.wrapStream(handle)
    rows, cols = 2048, 4096
    with cp.cuda.ExternalStream(handle):
        x = cp.zeros((rows, cols), cp.float32)
        for _ in range(50):                          # slow producer, queued on the stream
            x += 1
        g = cv2.cuda.createGpuMatFromCudaMemory(rows, cols, cv2.CV_32FC1, x.data.ptr)
        y = cv2.cuda.multiply(g, 2.0, stream=s)     # reads x on the default stream
        y_ptr = y.cudaPtr()                         # computed now; the stream waits for it
        z = cp.ndarray((rows, cols), cp.float32, cp.cuda.MemoryPointer(
            cp.cuda.UnownedMemory(y_ptr, rows * cols * 4, y), 0)) + 1   # on the stream
    sync()
    assert float(z.min()) == float(z.max()) == 101.0
    out = y.download(stream=s)
    s.waitForCompletion()
    assert (out == 100.0).all()


def test_hostmem_create_of_its_own_geometry_keeps_its_memory():
    """create() with the size and type a HostMem has is a no-op, as OpenCV's is: it used to
    page-lock a new buffer just to compare sizes (milliseconds a call; the streamed loop calls it
    for every frame's outputs, which made W5's streamed loop 7x slower than its serial one)."""
    from lazycv.facade import hostmem
    h = cv2.cuda_HostMem(4, 5, cv2.CV_8UC3)
    arr = h.createMatHeader()
    made = []
    real = hostmem._pinned
    hostmem._pinned = lambda shape, dtype: made.append(shape) or real(shape, dtype)
    try:
        h.create(4, 5, cv2.CV_8UC3)
        h.create((5, 4), cv2.CV_8UC3)
        assert made == [] and h.createMatHeader() is arr
        h.create(6, 2, cv2.CV_32FC1)
        assert made == [(6, 2)] and h.size() == (2, 6) and h.type() == cv2.CV_32FC1
    finally:
        hostmem._pinned = real
