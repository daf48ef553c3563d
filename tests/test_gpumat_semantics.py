"""GpuMat semantics real scripts rely on, where a lazy result must behave as OpenCV's result
(which is already in memory): writes into views of pending results, header copies, views of
views; host arrays of any layout in and out; setTo's scalar conversion; and the cv2.cuda
functions a CPU-only OpenCV would abort on."""
import cv2
import numpy as np
import pytest

from .conftest import BACKEND, assert_close, rand_image, upload


def pending(a):
    """A lazy result equal to ``a`` (not yet in memory)."""
    return cv2.cuda.add(upload(a), 0)


@pytest.mark.sim
@pytest.mark.parametrize("how", ["copyTo", "dst", "convertTo"])
def test_a_write_into_a_view_of_a_pending_result_reaches_it(rng, how):
    base = rand_image(rng, 5, 7, 1, np.uint8)
    patch = rand_image(rng, 2, 3, 1, np.uint8)
    canvas = pending(base)
    roi = cv2.cuda_GpuMat(canvas, (2, 1, 3, 2))
    if how == "copyTo":
        upload(patch).copyTo(roi)
    elif how == "dst":
        cv2.cuda.add(upload(patch), 0, dst=roi)
    else:
        upload(patch).convertTo(cv2.CV_8U, roi)
    exp = base.copy()
    exp[1:3, 2:5] = patch
    assert_close(canvas.download(), exp, 0)
    assert_close(roi.download(), patch, 0)


def test_views_follow_an_in_place_write_into_their_pending_parent(rng):
    base = rand_image(rng, 4, 6, 1, np.uint8)
    new = rand_image(rng, 4, 6, 1, np.uint8)
    out = pending(base)
    roi = cv2.cuda_GpuMat(out, (0, 0, 2, 2))
    upload(new).copyTo(out)                     # same size and type: in place, as in OpenCV
    assert_close(roi.download(), new[:2, :2], 0)


@pytest.mark.sim
def test_a_view_of_a_view_of_a_pending_result_writes_into_the_root(rng):
    base = rand_image(rng, 5, 5, 1, np.uint8)
    out = pending(base)
    inner = cv2.cuda_GpuMat(cv2.cuda_GpuMat(out, (1, 1, 3, 3)), (1, 1, 1, 1))
    inner.setTo(0)
    exp = base.copy()
    exp[2, 2] = 0
    assert_close(out.download(), exp, 0)


@pytest.mark.parametrize("how", ["constructor", "assignTo"])
def test_a_header_copy_of_a_pending_result_shares_its_memory(rng, how):
    base = rand_image(rng, 3, 4, 1, np.uint8)
    p = pending(base)
    if how == "constructor":
        h = cv2.cuda_GpuMat(p)
    else:
        h = cv2.cuda_GpuMat()
        p.assignTo(h)
    h.setTo(9)
    assert_close(p.download(), np.full_like(base, 9), 0)
    p.setTo(4)
    assert_close(h.download(), np.full_like(base, 4), 0)


@pytest.mark.parametrize("view", ["reversed channels", "one channel", "every other column", "upside down",
                                  "transposed", "fortran order"])
def test_upload_takes_any_numpy_layout(rng, view):
    bgr = rand_image(rng, 4, 6, 3, np.uint8)
    arr = {"reversed channels": bgr[..., ::-1], "one channel": bgr[..., 1], "every other column": bgr[:, ::2],
           "upside down": bgr[::-1], "transposed": bgr[..., 0].T,
           "fortran order": np.asfortranarray(bgr[..., 2])}[view]
    g = cv2.cuda_GpuMat()
    g.upload(arr)
    assert_close(g.download(), np.ascontiguousarray(arr), 0)


def test_download_into_a_region_of_a_bigger_host_image(rng):
    a = rand_image(rng, 2, 3, 3, np.uint8)
    host = np.zeros((4, 6, 3), np.uint8)
    view = host[1:3, 2:5]
    got = upload(a).download(view)
    assert got is view
    exp = np.zeros_like(host)
    exp[1:3, 2:5] = a
    np.testing.assert_array_equal(host, exp)


@pytest.mark.parametrize("typ, value", [(cv2.CV_32SC1, 3e9), (cv2.CV_32SC1, -3e9), (cv2.CV_8UC1, float("nan")),
                                        (cv2.CV_8UC1, float("inf")), (cv2.CV_16SC1, 1e12), (cv2.CV_16SC1, 1e9),
                                        (cv2.CV_8UC1, 2.5), (cv2.CV_8UC1, 3.5)])
def test_setto_converts_its_scalar_as_opencv(typ, value):
    """saturate_cast<T>(double): cvRound (half to even; NaN, inf and past int32 give INT_MIN),
    then clamped — the CPU reference is cv2.add of the scalar to zeros."""
    dtype = {cv2.CV_32SC1: np.int32, cv2.CV_8UC1: np.uint8, cv2.CV_16SC1: np.int16}[typ]
    got = cv2.cuda_GpuMat(2, 2, typ, value).download()
    assert_close(got, cv2.add(np.zeros((2, 2), dtype), value), 0)


def test_reshape_to_other_rows_reads_at_the_call(rng):
    g = upload(np.arange(12, dtype=np.uint8).reshape(3, 4))
    x = cv2.cuda.add(g.reshape(1, 12), 1)
    g.upload(np.zeros((3, 4), np.uint8))        # after the read: it must see the old data
    assert_close(x.download(), np.arange(1, 13, dtype=np.uint8).reshape(12, 1), 0)


def test_module_spellings_and_device_queries():
    e1, e2 = cv2.cuda.Event(), cv2.cuda.Event()
    e1.record()
    e2.record()
    assert cv2.cuda.Event_elapsedTime(e1, e2) >= 0
    s = cv2.cuda.Stream_Null()
    s.waitForCompletion()
    info = cv2.cuda.DeviceInfo()
    assert info.deviceID() == cv2.cuda.getDevice()
    assert info.majorVersion() >= 3 and info.multiProcessorCount() >= 1 and info.isCompatible()
    assert info.totalMemory() >= info.freeMemory() > 0
    g = cv2.cuda_GpuMat(2, 2, cv2.CV_8UC1)
    m = cv2.cuda.createContinuous(3, 4, cv2.CV_8UC3, g)
    assert m is g and m.size() == (4, 3) and m.type() == cv2.CV_8UC3 and m.isContinuous()
    big = cv2.cuda_GpuMat(10, 10, cv2.CV_8UC1)
    assert cv2.cuda.ensureSizeIsEnough(5, 6, cv2.CV_8UC1, big).size() == (6, 5)


def test_create_continuous_without_a_gpumat_gives_a_host_array_as_opencvs_binding(rng):
    """OpenCV's binding makes an output nobody passed a Mat: scripts hand the result to cv2's
    CPU functions or download into it."""
    m = cv2.cuda.createContinuous(3, 4, cv2.CV_8UC1)
    assert isinstance(m, np.ndarray) and m.shape == (3, 4) and m.dtype == np.uint8 and m.flags.c_contiguous
    a = rand_image(rng, 3, 4, 1, np.uint8)
    upload(a).download(m)
    np.testing.assert_array_equal(cv2.threshold(m, 100, 255, cv2.THRESH_BINARY)[1],
                                  cv2.threshold(a, 100, 255, cv2.THRESH_BINARY)[1])
    e = cv2.cuda.ensureSizeIsEnough(2, 5, cv2.CV_32FC3)
    assert isinstance(e, np.ndarray) and e.shape == (2, 5, 3) and e.dtype == np.float32
    assert cv2.cuda.ensureSizeIsEnough(1, 4, cv2.CV_32FC3, e) is e            # big enough: kept
    assert cv2.cuda.createContinuous(2, 5, cv2.CV_32FC3, e) is e
    assert cv2.cuda.createContinuous(5, 2, cv2.CV_32FC3, e).shape == (5, 2, 3)
    assert cv2.cuda.ensureSizeIsEnough(3, 5, cv2.CV_32FC3, e).shape == (3, 5, 3)
    with pytest.raises(cv2.error, match="createContinuous"):
        cv2.cuda.createContinuous(3, 4, cv2.CV_8UC1, "arr")
    with pytest.raises(cv2.error, match="ensureSizeIsEnough"):
        cv2.cuda.ensureSizeIsEnough(-1, 4, cv2.CV_8UC1)


@pytest.mark.parametrize("name, args", [("fastNlMeansDenoising", (None, 3.0)),
                                        ("nonLocalMeans", (None, 3.0, (7, 7)))])
def test_what_lazycv_does_not_provide_raises_instead_of_aborting(name, args):
    if not hasattr(cv2.cuda, name):
        pytest.skip(f"this OpenCV has no cv2.cuda.{name}")
    with pytest.raises(cv2.error, match=name):
        getattr(cv2.cuda, name)(*args)


def test_hostmem_methods():
    h = cv2.cuda_HostMem(3, 4, cv2.CV_8UC3)
    h.createMatHeader()[:] = 7
    c = h.clone()
    assert c.size() == (4, 3) and c.type() == cv2.CV_8UC3 and (c.createMatHeader() == 7).all()
    c.createMatHeader()[:] = 1
    assert (h.createMatHeader() == 7).all()                 # a clone owns its memory
    assert h.elemSize1() == 1 and h.step1() == 12
    r = h.reshape(1)
    assert r.size() == (12, 3) and r.channels() == 1
    r.createMatHeader()[0, 0] = 9                             # a reshape shares it
    assert h.createMatHeader()[0, 0, 0] == 9
    other = cv2.cuda_HostMem(2, 2, cv2.CV_32FC1)
    h.swap(other)
    assert h.size() == (2, 2) and other.size() == (4, 3)
    h.create(5, 6, cv2.CV_16UC1)
    assert h.size() == (6, 5) and h.type() == cv2.CV_16UC1


@pytest.mark.sim
def test_from_dlpack_of_a_gpumat_is_a_view_of_all_of_it(rng):
    """``cv2.cuda_GpuMat.from_dlpack(GpuMat)`` (OpenCV 5) shares the source's memory; of a
    pending result it is a view that the result's flush fills."""
    a = rand_image(rng, 6, 7, 3, np.uint8)
    g = upload(a)
    v = cv2.cuda_GpuMat.from_dlpack(g)
    assert (v.size(), v.type()) == (g.size(), g.type())
    np.testing.assert_array_equal(v.download(), a)
    pend = cv2.cuda.add(g, (1, 2, 3))
    pv = cv2.cuda_GpuMat.from_dlpack(pend)
    np.testing.assert_array_equal(pv.download(), cv2.add(a, (1, 2, 3, 0)))


# every DeviceInfo query OpenCV's binding has that a script sizes its work by (the CUDA
# backend asks the driver; the CPU backend's virtual device answers a Hopper-class GPU's values)
_DEVICE_QUERIES = ["sharedMemPerBlock", "regsPerBlock", "warpSize", "memPitch", "maxThreadsPerBlock",
                   "clockRate", "totalConstMem", "textureAlignment", "texturePitchAlignment",
                   "kernelExecTimeoutEnabled", "integrated", "computeMode", "surfaceAlignment",
                   "concurrentKernels", "ECCEnabled", "pciBusID", "pciDeviceID", "pciDomainID", "tccDriver",
                   "asyncEngineCount", "memoryClockRate", "memoryBusWidth", "l2CacheSize",
                   "maxThreadsPerMultiProcessor", "totalGlobalMem"]


@pytest.mark.sim
def test_device_info_answers_opencvs_queries():
    info = cv2.cuda.DeviceInfo()
    got = {name: getattr(info, name)() for name in _DEVICE_QUERIES}
    assert all(isinstance(v, (int, bool)) for v in got.values()), got
    assert got["warpSize"] == 32 and got["maxThreadsPerBlock"] >= 512
    assert got["totalGlobalMem"] == info.totalMemory() > 0
    total, free = info.queryMemory()
    assert total >= free > 0
    assert len(info.maxThreadsDim()) == 3 and min(info.maxThreadsDim()) >= 1
    assert len(info.maxGridSize()) == 3 and info.maxGridSize()[0] >= 65535


@pytest.mark.sim
def test_cuda_ptr_is_an_address_on_every_backend(rng):
    """OpenCV's test_cuda_interop asserts ``cudaPtr() != 0`` for an uploaded GpuMat; a ROI's
    address is its parent's moved by the ROI's offset (step per row, elemSize per column)."""
    g = upload(rand_image(rng, 6, 8, 3, np.uint8))
    base = g.cudaPtr()
    assert base != 0
    roi = cv2.cuda_GpuMat(g, (2, 1, 4, 3))
    assert roi.cudaPtr() == base + 1 * g.step + 2 * g.elemSize()
    assert cv2.cuda_GpuMat().cudaPtr() == 0


@pytest.mark.sim
@pytest.mark.skipif(BACKEND != "cuda", reason="imports device memory from cupy/torch on a real GPU")
def test_from_dlpack_wraps_a_device_tensor_without_a_copy(rng):
    a = rand_image(rng, 5, 7, 3, np.float32)
    try:
        import cupy
        t = cupy.asarray(a)
        ptr = t.data.ptr
    except ImportError:
        torch = pytest.importorskip("torch")
        t = torch.from_numpy(a).cuda()
        ptr = t.data_ptr()
    g = cv2.cuda_GpuMat.from_dlpack(t)
    assert (g.size(), g.type()) == ((7, 5), cv2.CV_32FC3)
    assert g.cudaPtr() == ptr
    np.testing.assert_array_equal(cv2.cuda.multiply(g, (2, 2, 2)).download(), a * 2)
    with pytest.raises(cv2.error, match="device memory.*from_dlpack"):
        cv2.cuda_GpuMat.from_dlpack(a)                   # host memory: upload it instead


@pytest.mark.sim
def test_a_roi_read_before_a_set_to_sees_the_new_upload_every_frame():
    """A frame's upload completes the previous frame's pending ``setTo`` on a ROI, which marks
    that region as holding the fill; the upload must clear the mark after that, or the next
    read of the ROI takes the old fill's value instead of the new frame (found by a chain probe:
    58 on every second frame where OpenCV gives 11 + frame)."""
    g = cv2.cuda_GpuMat()
    got = []
    for frame in range(5):
        g.upload(np.full((8, 8), 10 + frame, np.uint8))
        roi = cv2.cuda_GpuMat(g, (2, 2, 3, 3))
        x = cv2.cuda.add(roi, 1)          # reads the ROI ...
        roi.setTo(57)                     # ... which is overwritten afterwards
        got.append(int(x.download()[0, 0]))     # (the setTo stays pending into the next frame)
    assert got == [11 + f for f in range(5)]
    last = np.full((8, 8), 14, np.uint8)
    last[2:5, 2:5] = 57
    np.testing.assert_array_equal(g.download(), last)


@pytest.mark.sim
def test_swap_of_a_pending_result_carries_its_views_along(rng):
    """swap exchanges headers: a view of the pending result views the memory the other header
    now owns, and a write through it lands there (the view was cut off and its write lost)."""
    a = rand_image(rng, 3, 4, 1, np.uint8)
    b = np.full((3, 4), 9, np.uint8)
    p = cv2.cuda.add(upload(a), 1)
    v = p.row(0)
    q = upload(b)
    p.swap(q)
    v.setTo(0)
    want = cv2.add(a, 1)
    want[0] = 0
    np.testing.assert_array_equal(q.download(), want)
    np.testing.assert_array_equal(p.download(), b)


def test_empty_ranges_and_rects_give_an_empty_gpumat_as_opencv(rng):
    g = upload(rand_image(rng, 5, 6, 3, np.uint8))
    for m in (g.rowRange(2, 2), g.colRange(3, 3), cv2.cuda_GpuMat(g, (0, 0, 0, 2)), cv2.cuda_GpuMat(g, (1, 1, 3, 0))):
        assert m.empty() and m.size() == (0, 0) and not m.isContinuous()
    with pytest.raises(cv2.error, match="outside the parent"):
        cv2.cuda_GpuMat(g, (0, 0, -1, 2))
    assert not cv2.cuda_GpuMat().isContinuous()


def test_a_1d_array_uploads_as_a_column_and_locate_roi_takes_opencvs_arguments(rng):
    a = rng.random(7).astype(np.float32)
    g = upload(a)
    assert g.size() == (1, 7) and g.type() == cv2.CV_32FC1
    np.testing.assert_array_equal(g.download(), a.reshape(7, 1))
    roi = cv2.cuda_GpuMat(upload(rand_image(rng, 5, 6, 1, np.uint8)), (1, 2, 3, 2))
    assert roi.locateROI((0, 0), (0, 0)) == roi.locateROI() == ((6, 5), (1, 2))


@pytest.mark.sim
def test_module_level_classes_and_static_spellings_are_lazycvs():
    """cv2.cuda_DeviceInfo and friends at the top of cv2 (version banners use them), and the
    Class_method spellings of static methods: a CPU-only OpenCV's own raise 'no CUDA'."""
    assert cv2.cuda_DeviceInfo().deviceID() == cv2.cuda.getDevice()
    assert cv2.cuda_DeviceInfo(0).deviceID() == 0
    assert cv2.cuda.TargetArchs.has(9, 0) and cv2.cuda.TargetArchs_hasEqualOrGreaterPtx(5, 0)
    assert cv2.cuda_TargetArchs.builtWith(cv2.cuda.FEATURE_SET_COMPUTE_50)
    a = cv2.cuda.GpuMat_defaultAllocator()
    assert a is cv2.cuda_GpuMat.defaultAllocator() and isinstance(a, cv2.cuda_GpuMat_Allocator)
    g = cv2.cuda_GpuMat(3, 4, cv2.CV_8UC1, a)                   # an allocator argument is accepted
    assert g.size() == (4, 3)
    cv2.cuda.GpuMat_setDefaultAllocator(a)
    assert cv2.cuda_Stream(a).cudaPtr() != 0


@pytest.mark.sim
def test_a_view_of_a_pending_result_reports_its_parents_step(rng):
    """OpenCV: a ROI keeps its parent's step and is not continuous, before any data exists."""
    g = upload(rand_image(rng, 12, 24, 3, np.uint8))
    r = cv2.cuda.resize(g, (20, 10))
    v = cv2.cuda_GpuMat(r, (1, 1, 3, 3))
    assert v.step == r.step == 60 and not v.isContinuous() and v.step1() == 60
    assert cv2.cuda_GpuMat(r, (0, 2, 20, 3)).isContinuous()            # full-width rows are
    v.download()
    assert v.step == 60 and not v.isContinuous()


@pytest.mark.sim
def test_reshape_follows_opencvs_rules(rng):
    a = np.arange(72, dtype=np.uint8).reshape(4, 6, 3)
    g = upload(a)
    r = g.reshape(4)                    # 18 elements a row do not divide by 4: the rows that fit
    assert r.size() == (1, 18) and r.channels() == 4
    np.testing.assert_array_equal(r.download().ravel(), a.ravel())
    v = g.rowRange(1, 3).reshape(1, 1)                              # a continuous view: any rows
    assert v.size() == (36, 1)
    np.testing.assert_array_equal(v.download().ravel(), a[1:3].ravel())
    with pytest.raises(cv2.error, match="reshape"):
        g.colRange(0, 2).reshape(1, 1)                              # not continuous
    with pytest.raises(cv2.error, match="reshape"):
        g.reshape(1, 5)                                             # 72 elements in 5 rows


@pytest.mark.sim
def test_an_empty_range_is_all_as_in_opencvs_binding(rng):
    g = upload(rand_image(rng, 5, 6, 1, np.uint8))
    assert g.rowRange(()).size() == (6, 5)
    assert cv2.cuda_GpuMat(g, (), (2, 5)).size() == (3, 5)
    np.testing.assert_array_equal(cv2.cuda_GpuMat(g, (1, 3), ()).download(), g.download()[1:3])


def test_hostmem_answers_as_opencv_when_empty_or_one_dimensional():
    e = cv2.cuda_HostMem()
    assert e.empty() and e.type() == cv2.CV_8UC1 and e.channels() == 1 and e.size() == (0, 0)
    col = cv2.cuda_HostMem(np.arange(10, dtype=np.uint8))           # a 1-D array is a column
    assert col.size() == (1, 10) and col.type() == cv2.CV_8UC1
    np.testing.assert_array_equal(col.createMatHeader().ravel(), np.arange(10))
    with pytest.raises(cv2.error, match="HostMem"):
        cv2.cuda_HostMem(np.zeros(3, np.int64))
    with pytest.raises(cv2.error, match="HostMem"):
        cv2.cuda_HostMem(2, 2, cv2.CV_8UC1, alloc_type=3)
    with pytest.raises(cv2.error, match="registerPageLocked"):
        cv2.cuda.registerPageLocked(np.zeros((4, 4))[:, ::2])
