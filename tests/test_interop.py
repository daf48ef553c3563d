"""CPU-backend interop: numpy views (``__array_interface__``), DLPack, ``cudaPtr()`` (a host
address on this backend), ``cv2.cuda.createGpuMatFromCudaMemory`` over pitched host memory,
and the header semantics OpenCV documents for ``step``, ``isContinuous``, ``locateROI`` and
``adjustROI`` (cv::cuda::GpuMat in modules/core/src/cuda/gpu_mat.cu and cuda_gpu_mat.cpp)."""
import ctypes

import cv2
import numpy as np
import pytest

import lazycv

from .conftest import BACKEND, DEPTHS, assert_close, rand_image, upload

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="host-memory interop is the CPU backend's")


def _host_bytes(ptr, n):
    """``n`` bytes at host address ``ptr``, copied out (an independent read of the memory)."""
    return bytes((ctypes.c_uint8 * n).from_address(ptr))


# ---------------------------------------------------------------------------- numpy views

@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_asarray_is_a_zero_copy_view(rng, cn, dtype):
    a = rand_image(rng, 7, 9, cn, dtype)
    g = upload(a)
    v = np.asarray(g)
    assert v.shape == a.shape and v.dtype == a.dtype
    np.testing.assert_array_equal(v, a)
    ai = g.__array_interface__
    assert ai["shape"] == a.shape and np.dtype(ai["typestr"]) == a.dtype
    assert v.ctypes.data == ai["data"][0] == g.cudaPtr()
    assert v.strides[0] == g.step
    # a write through the view is a write into the GpuMat
    v[2, 3] = 1
    v[-1] = v[0]
    b = a.copy()
    b[2, 3] = 1
    b[-1] = b[0]
    np.testing.assert_array_equal(g.download(), b)
    # and work recorded after the write reads the new pixels
    got = cv2.cuda.resize(g, (5, 4), interpolation=cv2.INTER_NEAREST).download()
    np.testing.assert_array_equal(got, cv2.resize(b, (5, 4), interpolation=cv2.INTER_NEAREST))


def test_asarray_of_a_pending_result(rng):
    a = rand_image(rng, 10, 12, 3, np.uint8)
    r = cv2.cuda.cvtColor(cv2.cuda.resize(upload(a), (6, 5), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGR2RGB)
    ref = cv2.cvtColor(cv2.resize(a, (6, 5), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGR2RGB)
    v = np.asarray(r)
    np.testing.assert_array_equal(v, ref)
    v[0, 0] = (7, 8, 9)
    ref[0, 0] = (7, 8, 9)
    np.testing.assert_array_equal(r.download(), ref)
    gray = cv2.cuda.cvtColor(r, cv2.COLOR_RGB2GRAY).download()
    np.testing.assert_array_equal(gray, cv2.cvtColor(ref, cv2.COLOR_RGB2GRAY))


def test_asarray_of_a_roi_views_the_parent(rng):
    a = rand_image(rng, 8, 11, 3, np.uint8)
    g = upload(a)
    x, y, w, h = 3, 2, 5, 4
    roi = cv2.cuda_GpuMat(g, (x, y, w, h))
    v = np.asarray(roi)
    np.testing.assert_array_equal(v, a[y:y + h, x:x + w])
    assert v.strides == (11 * 3, 3, 1)                       # the parent's row pitch
    v[...] = 200
    b = a.copy()
    b[y:y + h, x:x + w] = 200
    np.testing.assert_array_equal(g.download(), b)


@pytest.mark.parametrize("export", ["asarray", "foreign-pointer"])
def test_write_after_recording_does_not_leak_into_earlier_results(rng, export):
    """Results mean what OpenCV computes at the call: a host write made *after* a call was
    recorded must not change that call's result (CPU cv2 / eager semantics, SPEC §3)."""
    a = rand_image(rng, 6, 8, 3, np.uint8)
    if export == "asarray":
        g = upload(a)
        view = np.asarray(g)
    else:
        view = a.copy()
        g = cv2.cuda.createGpuMatFromCudaMemory(6, 8, cv2.CV_8UC3, view.ctypes.data, view.strides[0])
    r = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY)             # recorded, still pending
    view[...] = 0                                             # then the memory changes
    np.testing.assert_array_equal(r.download(), cv2.cvtColor(a, cv2.COLOR_BGR2GRAY))
    np.testing.assert_array_equal(g.download(), np.zeros_like(a))


# ---------------------------------------------------------------------------- DLPack

def test_dlpack_device_is_cpu():
    g = upload(np.zeros((2, 3), np.uint8))
    assert tuple(g.__dlpack_device__()) == (1, 0)             # (kDLCPU, 0)


@pytest.mark.parametrize("cn", [1, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_from_dlpack_shares_memory(rng, cn, dtype):
    a = rand_image(rng, 5, 7, cn, dtype)
    g = upload(a)
    d = np.from_dlpack(g)
    assert d.shape == a.shape and d.dtype == a.dtype
    np.testing.assert_array_equal(d, a)
    assert d.ctypes.data == g.cudaPtr()
    np.asarray(g)[0, 0] = 0                                   # a write through another view
    assert (d[0, 0] == 0).all()


def test_from_dlpack_of_roi_and_pending(rng):
    a = rand_image(rng, 9, 10, 4, np.uint16)
    g = upload(a)
    roi = cv2.cuda_GpuMat(g, (1, 2, 6, 5))
    d = np.from_dlpack(roi)
    np.testing.assert_array_equal(d, a[2:7, 1:7])
    assert d.ctypes.data == g.cudaPtr() + 2 * g.step + 1 * g.elemSize()
    pend = cv2.cuda.cvtColor(cv2.cuda.resize(g, (4, 3), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGRA2GRAY)
    ref = cv2.cvtColor(cv2.resize(a, (4, 3), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGRA2GRAY)
    np.testing.assert_array_equal(np.from_dlpack(pend), ref)


def test_from_dlpack_is_writable_through(rng):
    """numpy asks for a DLPack >= 1.0 capsule (max_version=(1, 0)); a writable exporter says
    so, and writes through the imported array land in the GpuMat (as with numpy's own
    exporter)."""
    a = rand_image(rng, 4, 5, 3, np.uint8)
    g = upload(a)
    d = np.from_dlpack(g)
    assert d.flags.writeable, "numpy.from_dlpack(GpuMat) came back read-only"
    d[1, 2] = (1, 2, 3)
    b = a.copy()
    b[1, 2] = (1, 2, 3)
    np.testing.assert_array_equal(g.download(), b)


@pytest.mark.parametrize("cn", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.float32, np.float64])
def test_gpumat_from_dlpack_round_trips_as_opencvs_test(rng, cn, dtype):
    """OpenCV 5's test_dlpack_GpuMat (modules/python/test/test_cuda.py) for the types lazycv
    holds: ``cv.cuda_GpuMat.from_dlpack(src)`` of an uploaded GpuMat downloads what was uploaded."""
    ref = (rng.random((64, 128, cn)) * 255).astype(dtype)
    src = cv2.cuda_GpuMat()
    src.upload(ref)
    dst = cv2.cuda_GpuMat.from_dlpack(src)
    assert dst.cudaPtr() == src.cudaPtr()                     # a view, no copy
    np.testing.assert_array_equal(dst.download(), ref[..., 0] if cn == 1 else ref)


def test_gpumat_from_dlpack_wraps_host_memory_without_a_copy(rng):
    a = rand_image(rng, 4, 6, 3, np.float32)
    g = cv2.cuda_GpuMat.from_dlpack(a)
    assert g.size() == (6, 4) and g.type() == cv2.CV_32FC3
    assert g.cudaPtr() == a.ctypes.data
    a[1, 2] = (7, 8, 9)
    np.testing.assert_array_equal(g.download(), a)
    f = cv2.cuda.add(g, (1, 1, 1)).download()
    np.testing.assert_array_equal(f, cv2.add(a, (1, 1, 1, 0)))


def test_gpumat_from_dlpack_rejects_what_it_cannot_wrap():
    with pytest.raises(cv2.error, match="must export DLPack.*from_dlpack"):
        cv2.cuda_GpuMat.from_dlpack([1, 2, 3])
    with pytest.raises(cv2.error, match="empty.*from_dlpack"):
        cv2.cuda_GpuMat.from_dlpack(cv2.cuda_GpuMat())


# ---------------------------------------------------------------------------- cudaPtr

def test_cuda_ptr_is_the_host_address_of_the_first_pixel(rng):
    a = rand_image(rng, 6, 9, 3, np.uint8)
    g = upload(a)
    p = g.cudaPtr()
    assert _host_bytes(p, 6 * 9 * 3) == a.tobytes()
    x, y, w, h = 2, 3, 4, 2
    roi = cv2.cuda_GpuMat(g, (x, y, w, h))
    assert roi.cudaPtr() == p + y * g.step + x * g.elemSize()
    for row in range(h):
        assert _host_bytes(roi.cudaPtr() + row * roi.step, w * 3) == a[y + row, x:x + w].tobytes()
    assert cv2.cuda_GpuMat().cudaPtr() == 0


def test_cuda_ptr_of_a_pending_result_is_stable(rng):
    a = rand_image(rng, 5, 6, 1, np.float32)
    r = cv2.cuda.multiply(upload(a), (2.0, 0, 0, 0))
    p = r.cudaPtr()
    ref = cv2.multiply(a, 2.0)
    assert _host_bytes(p, ref.nbytes) == ref.tobytes()
    # later writes into r (OpenCV: same size/type -> same memory) keep the exported address
    cv2.cuda.add(r, (1.0, 0, 0, 0), r)
    assert r.cudaPtr() == p
    assert _host_bytes(p, ref.nbytes) == cv2.add(ref, 1.0).tobytes()


# ---------------------------------------------------------------------------- createGpuMatFromCudaMemory

_DEPTH_CN = {cv2.CV_MAKETYPE(d, c): (d, c) for d in DEPTHS for c in (1, 2, 3, 4)}
PITCHED = [(cv2.CV_8UC3, 5, 6, 32), (cv2.CV_16UC1, 7, 3, 16), (cv2.CV_32FC4, 4, 5, 96), (cv2.CV_8UC1, 9, 10, 64)]


def _pitched(rng, typ, rows, cols, step, fill=0xA5):
    """A host buffer of ``rows`` rows of ``step`` bytes (fill byte in the padding) holding a
    random image; returns (raw bytes buffer, image view into it, contiguous copy)."""
    depth, cn = _DEPTH_CN[typ]
    dt = np.dtype(DEPTHS[depth])
    raw = np.full((rows, step), fill, np.uint8)
    img = rand_image(rng, rows, cols, cn, dt)
    row_bytes = cols * cn * dt.itemsize
    raw[:, :row_bytes] = img.reshape(rows, -1).view(np.uint8)
    view = raw[:, :row_bytes].view(dt).reshape(img.shape)
    return raw, view, img


@pytest.mark.parametrize("typ,rows,cols,step", PITCHED)
def test_create_from_pitched_memory(rng, typ, rows, cols, step):
    raw, view, img = _pitched(rng, typ, rows, cols, step)
    m = cv2.cuda.createGpuMatFromCudaMemory(rows, cols, typ, raw.ctypes.data, step)
    assert m.size() == (cols, rows) and m.type() == typ
    assert m.step == step
    assert not m.isContinuous()
    assert m.cudaPtr() == raw.ctypes.data
    np.testing.assert_array_equal(m.download(), img)
    # no copy: a host write into the buffer is seen by the GpuMat
    view[0, 0] = 3
    img[0, 0] = 3
    np.testing.assert_array_equal(m.download(), img)
    m2 = cv2.cuda.createGpuMatFromCudaMemory((cols, rows), typ, raw.ctypes.data, step)
    assert m2.size() == (cols, rows) and m2.step == step
    np.testing.assert_array_equal(m2.download(), img)


def test_create_gpumat_from_cuda_memory_names_a_missing_argument():
    for call in (lambda: cv2.cuda.createGpuMatFromCudaMemory(4, 4, cudaMemoryAddress=1),
                 lambda: cv2.cuda.createGpuMatFromCudaMemory((4, 4), cv2.CV_8UC1),
                 lambda: cv2.cuda.createGpuMatFromCudaMemory(rows=4, type=cv2.CV_8UC1, cudaMemoryAddress=1)):
        with pytest.raises(cv2.error, match="missing required argument .*createGpuMatFromCudaMemory"):
            call()


@pytest.mark.parametrize("typ,rows,cols,step", PITCHED)
def test_pitched_mat_as_input(rng, typ, rows, cols, step):
    raw, view, img = _pitched(rng, typ, rows, cols, step)
    m = cv2.cuda.createGpuMatFromCudaMemory(rows, cols, typ, raw.ctypes.data, step)
    tol_lin = 1 if img.dtype.kind != "f" else 1e-2            # SPEC §3, resize LINEAR
    for dsize in [(3, 2), (cols + 4, rows + 3), (1, 1)]:
        for interp, tol in [(cv2.INTER_NEAREST, 0), (cv2.INTER_LINEAR, tol_lin)]:
            got = cv2.cuda.resize(m, dsize, interpolation=interp).download()
            assert_close(got, cv2.resize(img, dsize, interpolation=interp), tol, what=f"resize {dsize} {interp}")
    cn = 1 if img.ndim == 2 else img.shape[2]
    codes = {1: [cv2.COLOR_GRAY2BGR, cv2.COLOR_GRAY2BGRA], 3: [cv2.COLOR_BGR2GRAY, cv2.COLOR_BGR2RGB],
             4: [cv2.COLOR_BGRA2GRAY, cv2.COLOR_BGRA2BGR, cv2.COLOR_RGBA2BGRA]}[cn]
    for code in codes:
        got = cv2.cuda.cvtColor(m, code).download()
        assert_close(got, cv2.cvtColor(img, code), 1e-5 if img.dtype.kind == "f" else 0, rel=1e-5, what=f"code {code}")
    # fused: ROI of the pitched mat -> cvtColor -> resize
    roi = cv2.cuda_GpuMat(m, (1, 1, cols - 1, rows - 1))
    assert roi.step == step
    got = cv2.cuda.resize(cv2.cuda.cvtColor(roi, codes[0]), (4, 3), interpolation=cv2.INTER_NEAREST).download()
    ref = cv2.resize(cv2.cvtColor(np.ascontiguousarray(img[1:, 1:]), codes[0]), (4, 3), interpolation=cv2.INTER_NEAREST)
    assert_close(got, ref, 1e-5 if img.dtype.kind == "f" else 0, rel=1e-5)


def test_writes_into_pitched_memory_keep_the_padding(rng):
    rows, cols, step = 6, 5, 24
    raw, view, img = _pitched(rng, cv2.CV_8UC3, rows, cols, step, fill=0x5A)
    m = cv2.cuda.createGpuMatFromCudaMemory(rows, cols, cv2.CV_8UC3, raw.ctypes.data, step)
    src = rand_image(rng, rows, cols, 3, np.uint8)
    out = cv2.cuda.cvtColor(upload(src), cv2.COLOR_BGR2RGB, m)
    assert out is m
    m.download()                                              # make sure the write happened
    np.testing.assert_array_equal(view, cv2.cvtColor(src, cv2.COLOR_BGR2RGB))
    assert (raw[:, cols * 3:] == 0x5A).all(), "the row padding was overwritten"
    roi = cv2.cuda_GpuMat(m, (1, 2, 3, 3))
    roi.setTo((9, 8, 7))
    roi.download()
    exp = cv2.cvtColor(src, cv2.COLOR_BGR2RGB)
    exp[2:5, 1:4] = (9, 8, 7)
    np.testing.assert_array_equal(view, exp)
    assert (raw[:, cols * 3:] == 0x5A).all(), "the row padding was overwritten"


def test_create_from_memory_without_step_is_continuous(rng):
    a = rand_image(rng, 4, 6, 3, np.float32)
    m = cv2.cuda.createGpuMatFromCudaMemory(4, 6, cv2.CV_32FC3, a.ctypes.data)
    assert m.step == 6 * 3 * 4 and m.isContinuous()
    np.testing.assert_array_equal(m.download(), a)
    assert m.locateROI() == ((6, 4), (0, 0))


# ---------------------------------------------------------------------------- header semantics

def test_step_and_continuity():
    g = cv2.cuda_GpuMat(6, 7, cv2.CV_16UC3)
    esz = 6
    assert g.elemSize() == esz and g.elemSize1() == 2
    assert g.step >= 7 * esz and g.step % g.elemSize1() == 0
    assert g.isContinuous() == (g.step == 7 * esz)
    assert g.step1() == g.step // 2
    assert g.rowRange(1, 4).step == g.step and g.rowRange(1, 4).isContinuous() == g.isContinuous()
    assert not g.colRange(1, 4).isContinuous()               # gaps between its rows
    assert g.colRange(1, 4).step == g.step
    assert g.row(3).isContinuous()                            # a single row has no gaps
    assert not g.col(2).isContinuous()
    assert cv2.cuda_GpuMat(g, (0, 1, 7, 3)).isContinuous() == g.isContinuous()
    assert not cv2.cuda_GpuMat(g, (1, 1, 5, 3)).isContinuous()


def test_locate_roi(rng):
    a = rand_image(rng, 10, 12, 1, np.uint8)
    g = upload(a)
    assert g.locateROI() == ((12, 10), (0, 0))
    roi = cv2.cuda_GpuMat(g, (3, 2, 5, 4))
    assert roi.locateROI() == ((12, 10), (3, 2))
    inner = cv2.cuda_GpuMat(roi, (1, 1, 2, 2))                # offsets add up, whole size stays
    assert inner.locateROI() == ((12, 10), (4, 3))
    np.testing.assert_array_equal(inner.download(), a[3:5, 4:6])
    assert g.rowRange(4, 7).locateROI() == ((12, 10), (0, 4))
    assert g.col(11).locateROI() == ((12, 10), (11, 0))
    # a ROI of a pending result
    r = cv2.cuda.resize(g, (8, 6), interpolation=cv2.INTER_NEAREST)
    pr = cv2.cuda_GpuMat(r, (2, 1, 3, 4))
    assert pr.locateROI() == ((8, 6), (2, 1))
    np.testing.assert_array_equal(pr.download(),
                                  cv2.resize(a, (8, 6), interpolation=cv2.INTER_NEAREST)[1:5, 2:5])


def test_adjust_roi(rng):
    a = rand_image(rng, 10, 12, 3, np.uint8)
    g = upload(a)
    roi = cv2.cuda_GpuMat(g, (4, 3, 3, 2))
    out = roi.adjustROI(1, 2, 3, 1)                           # grow: top, bottom, left, right
    assert out.size() == (7, 5) and out.locateROI() == ((12, 10), (1, 2))
    np.testing.assert_array_equal(out.download(), a[2:7, 1:8])
    assert roi.size() == (7, 5)                               # the header itself moved
    roi.adjustROI(-1, -1, -2, 0)                              # shrink
    assert roi.locateROI() == ((12, 10), (3, 3)) and roi.size() == (5, 3)
    np.testing.assert_array_equal(roi.download(), a[3:6, 3:8])
    roi.adjustROI(100, 100, 100, 100)                         # clamped to the parent
    assert roi.locateROI() == ((12, 10), (0, 0)) and roi.size() == (12, 10)
    assert roi.isContinuous() == (roi.step == 12 * 3)
    np.testing.assert_array_equal(roi.download(), a)
    # a one-row result of adjustROI is continuous (OpenCV sets the flag for rows == 1)
    one = cv2.cuda_GpuMat(g, (2, 5, 3, 2)).adjustROI(0, -1, 0, 0)
    assert one.size() == (3, 1) and one.isContinuous()
    np.testing.assert_array_equal(one.download(), a[5:6, 2:5])
    # work on an adjusted ROI reads the right pixels
    sub = cv2.cuda_GpuMat(g, (5, 5, 2, 2)).adjustROI(2, 0, 0, 3)
    got = cv2.cuda.cvtColor(sub, cv2.COLOR_BGR2GRAY).download()
    np.testing.assert_array_equal(got, cv2.cvtColor(np.ascontiguousarray(a[3:7, 5:10]), cv2.COLOR_BGR2GRAY))


def test_locate_and_adjust_roi_on_pitched_memory(rng):
    """OpenCV derives wholeSize from datastart/dataend (dataend = start + step*(rows-1) +
    cols*elemSize), so the row padding of a pitched buffer is not part of the whole image:
    wholeSize is (cols, rows), and adjustROI clamps at the last real column."""
    rows, cols, step = 5, 6, 32
    raw, view, img = _pitched(rng, cv2.CV_8UC3, rows, cols, step)
    m = cv2.cuda.createGpuMatFromCudaMemory(rows, cols, cv2.CV_8UC3, raw.ctypes.data, step)
    assert m.locateROI() == ((cols, rows), (0, 0))
    sub = cv2.cuda_GpuMat(m, (4, 1, 2, 2))
    assert sub.locateROI() == ((cols, rows), (4, 1))
    sub.adjustROI(0, 0, 0, 5)                                 # only 0 more columns exist
    assert sub.size() == (2, 2)
    np.testing.assert_array_equal(sub.download(), img[1:3, 4:6])


@pytest.mark.parametrize("share", ["cudaPtr", "asarray"])
def test_sharing_memory_runs_the_pending_work_that_reads_it_first(rng, share):
    """Eager OpenCV computed p from the old data: a write through memory handed out after the
    call must not reach p."""
    a = rand_image(rng, 3, 4, 1, np.uint8)
    g = upload(a)
    p = cv2.cuda.add(g, 1)
    if share == "cudaPtr":
        cv2.cuda.createGpuMatFromCudaMemory(3, 4, cv2.CV_8UC1, g.cudaPtr()).setTo(0)
    else:
        np.asarray(g)[:] = 0
    np.testing.assert_array_equal(p.download(), cv2.add(a, 1))


def test_materialize_and_explain_see_writes_through_gone_views(rng):
    a = rand_image(rng, 3, 4, 1, np.uint8)
    canvas = cv2.cuda_GpuMat(3, 8, cv2.CV_8UC1, 0)
    cv2.cuda.add(upload(a), 1, dst=cv2.cuda_GpuMat(canvas, (0, 0, 4, 3)))
    assert lazycv.explain(canvas).startswith("lazycv plan: 1 kernel")
    lazycv.reset_stats()
    lazycv.materialize(canvas)
    assert lazycv.stats()["kernels_launched"] == 1
    canvas.download()
    assert lazycv.stats()["kernels_launched"] == 1


def test_hostmem_in_and_out_and_unknown_constructor_arguments(rng):
    a = rand_image(rng, 3, 4, 1, np.uint8)
    np.testing.assert_array_equal(cv2.cuda_GpuMat(cv2.cuda_HostMem(a)).download(), a)
    out = cv2.cuda_HostMem(3, 4, cv2.CV_8UC1)
    s = cv2.cuda.Stream()
    upload(a).download(s, out)
    s.waitForCompletion()
    np.testing.assert_array_equal(out.createMatHeader(), a)
    assert cv2.cuda_HostMem(cv2.cuda.HostMem_PAGE_LOCKED).empty()
    with pytest.raises(cv2.error, match="GpuMat"):
        cv2.cuda_GpuMat("junk")


def test_keyword_pointer_wrapping_and_untimed_events():
    h = np.zeros((3, 4), np.uint8)
    g = cv2.cuda.createGpuMatFromCudaMemory(size=(4, 3), type=cv2.CV_8UC1, cudaMemoryAddress=h.ctypes.data)
    g.setTo(5)
    assert (h == 5).all()
    e1, e2 = cv2.cuda.Event(cv2.cuda.Event_DISABLE_TIMING), cv2.cuda.Event(cv2.cuda.Event_DISABLE_TIMING)
    e1.record()
    e2.record()
    with pytest.raises(cv2.error, match="elapsedTime"):
        cv2.cuda.Event.elapsedTime(e1, e2)
