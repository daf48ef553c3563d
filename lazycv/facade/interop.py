"""Moving data across the boundary: host copies, zero-copy export (CUDA array interface,
DLPack) and wrapping memory that torch/cupy/OpenCV own."""
import numpy as np

from .. import runtime, streams
from .._types import CN_MAX, DEPTH_DTYPE, DTYPE_DEPTH, host_shape
from ..errors import StsBadArg, StsUnsupportedFormat, cv_error
from ..ir import Allocation, Source
from ..runtime import STATE


def _stream_handle(stream):
    return None if stream is None else stream._handle()


def _foreign(stream):
    """True when a copy on ``stream`` must be ordered against lazycv's launches by hand (a
    stream of other code: it does not wait for the default stream, nor it for it)."""
    return stream is not None and stream._is_foreign()


def host_to_device(buf, y0, c0, rows2d, stream=None):
    """Copy host rows into ``buf`` at row y0, element column c0 (staging through a temporary
    and a copy kernel when the backend cannot copy that region directly)."""
    be = runtime.backend()
    foreign = _foreign(stream)
    # on a stream of lazycv's own: after the buffer's last use on another stream (streams.py);
    # asynchronous when rows2d is page-locked (HostMem), as CUDA copies pageable memory at once
    with streams.copying(None if foreign else stream, buf) as s:
        if foreign:
            s = _stream_handle(stream)
            be.order(None, s)         # earlier kernels may still read what the copy overwrites
        if not be.upload(buf, y0, c0, rows2d, s):
            tmp = be.alloc(rows2d.shape[0], rows2d.shape[1], rows2d.dtype)
            streams.claim(tmp)        # (pooled: another stream may still use its storage)
            be.upload(tmp, 0, 0, rows2d, s)
            if foreign:
                be.order(s, None)
            cn = _cn_for(buf, rows2d)
            src = Source(tmp, 0, 0, rows2d.shape[0], rows2d.shape[1] // cn, DTYPE_DEPTH[rows2d.dtype], cn)
            runtime.copy_region(src, buf, y0, c0 // cn)
        elif foreign:
            be.order(s, None)         # later kernels read what it wrote
    STATE.stats["bytes_h2d"] += rows2d.nbytes


def _host_copy(mat):
    shape = host_shape(mat._rows, mat._cols, mat._cn)
    out = np.empty(shape, DEPTH_DTYPE[mat._depth])
    device_to_host(mat._alloc.buf, mat._y0, mat._x0 * mat._cn, mat._rows, mat._cols * mat._cn,
                   out.reshape(mat._rows, mat._cols * mat._cn))
    return out


def _cn_for(buf, rows2d):
    # the copy kernel works in pixels; any channel count that divides both offsets works,
    # and 1 always does
    return 1


def device_to_host(buf, y0, c0, rows, ncols, out2d, stream=None):
    be = runtime.backend()
    foreign = _foreign(stream)
    with streams.copying(None if foreign else stream, buf) as s:
        if foreign:
            s = _stream_handle(stream)
            be.order(None, s)         # the copy reads what lazycv's kernels wrote
        if not be.download(buf, y0, c0, rows, ncols, out2d, s):
            tmp = be.alloc(rows, ncols, buf.dtype)
            src = Source(buf, y0, c0, rows, ncols, DTYPE_DEPTH[buf.dtype], 1)
            runtime.copy_region(src, tmp, 0, 0)
            if foreign:
                be.order(None, s)
            be.download(tmp, 0, 0, rows, ncols, out2d, s)
        if foreign:
            be.order(s, None)         # later kernels may overwrite what it still reads
    if stream is None:
        be.synchronize(None)
    STATE.stats["bytes_d2h"] += out2d.nbytes


def _export(mat, func):
    with STATE.lock:
        if mat.empty():
            raise cv_error(func, "the GpuMat is empty", StsBadArg)
        mat._materialize()
        runtime.export(mat._alloc)
        if runtime.OBSERVERS:
            runtime.notify("export", mat, _host_copy(mat))
        a = mat._alloc
        item = DEPTH_DTYPE[mat._depth].itemsize
        shape = host_shape(mat._rows, mat._cols, mat._cn)
        strides = (a.row_elems * item, mat._cn * item) + ((item,) if mat._cn > 1 else ())
        offset = (mat._y0 * a.row_elems + mat._x0 * mat._cn) * item
        return a, shape, strides, offset


def cuda_array_interface(mat):
    """CUDA array interface v3: lets torch/cupy/numba view this GpuMat without a copy."""
    if not runtime.backend().is_device:
        raise AttributeError("__cuda_array_interface__ is only available on the 'cuda' backends "
                             f"(this one is {STATE.backend_name!r}); use __array_interface__ or numpy.asarray")
    a, shape, strides, offset = _export(mat, "GpuMat::__cuda_array_interface__")
    ptr = runtime.backend().pointer(a.buf) + offset
    return {"shape": shape, "typestr": DEPTH_DTYPE[mat._depth].str, "data": (ptr, False),
            "strides": strides, "version": 3, "stream": None}


def host_array_interface(mat):
    """On the CPU backend the 'device' memory is host memory: numpy can view it directly."""
    if runtime.backend().is_device:
        raise AttributeError("__array_interface__ is only available on the 'cpu' backend")
    a, shape, strides, offset = _export(mat, "GpuMat::__array_interface__")
    ptr = a.buf.ctypes.data + offset
    return {"shape": shape, "typestr": DEPTH_DTYPE[mat._depth].str, "data": (ptr, False),
            "strides": strides, "version": 3}


def dlpack_device(mat):
    if runtime.backend().is_device and STATE.backend_name == "cuda":
        from numba import cuda
        return (2, cuda.get_current_device().id)     # kDLCUDA
    return (1, 0)                                    # kDLCPU


def to_dlpack(mat, *args, stream=None, **kw):
    """DLPack capsule. CPU backend: numpy's own exporter. CUDA: through CuPy or torch, whichever
    is installed (both import the CUDA array interface without a copy)."""
    if not runtime.backend().is_device:
        a, shape, strides, offset = _export(mat, "GpuMat::__dlpack__")
        view = np.lib.stride_tricks.as_strided(
            a.buf.reshape(-1)[offset // a.buf.itemsize:], shape, strides)
        if stream is not None:
            kw["stream"] = stream
        return view.__dlpack__(*args, **kw)
    if STATE.backend_name != "cuda":
        raise BufferError("DLPack export is not available on the CUDA simulator")
    try:
        import cupy
        return cupy.asarray(mat).__dlpack__(stream=stream) if stream is not None else cupy.asarray(mat).__dlpack__()
    except ImportError:
        pass
    try:
        import torch
        return torch.as_tensor(mat, device="cuda").__dlpack__(stream)
    except ImportError:
        raise BufferError("lazycv: DLPack export on CUDA needs cupy or torch; use __cuda_array_interface__")


def wrap_foreign(mat, obj):
    """Make ``mat`` a view of memory another library owns (no copy)."""
    be = runtime.backend()
    try:
        arr = be.from_foreign(obj)
    except Exception as e:
        raise cv_error("GpuMat", f"cannot wrap {type(obj).__name__}: {e}", StsBadArg)
    _bind_array(mat, arr, owner=obj)


def wrap_dlpack(mat, obj):
    """``GpuMat.from_dlpack``: make ``mat`` a view of the memory ``obj`` exports through DLPack
    (no copy). The CPU backend takes host memory, the CUDA backend device memory (through cupy
    or torch, whichever is installed: numba reads only __cuda_array_interface__)."""
    func = "GpuMat::from_dlpack"
    if not hasattr(obj, "__dlpack__"):
        raise cv_error(func, f"src must export DLPack (__dlpack__), got {type(obj).__name__}", StsBadArg)
    be = runtime.backend()
    try:
        kind = int(obj.__dlpack_device__()[0])
    except Exception:
        kind = None
    if not be.is_device:
        if kind not in (None, 1, 3):        # kDLCPU, kDLCUDAHost (pinned host memory)
            raise cv_error(func, f"the {STATE.backend_name} backend wraps host memory; src is on DLPack "
                                 f"device type {kind} (download it first)", StsBadArg)
        try:
            arr = np.from_dlpack(obj)
        except Exception as e:           # (a dtype or layout numpy cannot import)
            raise cv_error(func, f"cannot import src: {e}", StsBadArg) from None
    else:
        if kind not in (None, 2, 13):       # kDLCUDA, kDLCUDAManaged
            raise cv_error(func, f"the cuda backend wraps device memory; src is on DLPack device "
                                 f"type {kind} (upload it instead)", StsBadArg)
        arr = _device_from_dlpack(func, obj)
    _bind_array(mat, be.from_foreign(arr), owner=arr)


def _device_from_dlpack(func, obj):
    for name in ("cupy", "torch"):
        try:
            lib = __import__(name)
        except ImportError:
            continue
        try:
            return lib.from_dlpack(obj)
        except Exception as e:           # (a dtype or layout the library cannot import)
            raise cv_error(func, f"cannot import src through {name}: {e}", StsBadArg) from None
    raise cv_error(func, "importing DLPack memory on CUDA needs cupy or torch (or pass an object "
                         "with __cuda_array_interface__ to cv2.cuda_GpuMat)", StsBadArg)


def _bind_array(mat, arr, owner):
    shape = tuple(arr.shape)
    if len(shape) == 2:
        rows, cols, cn = shape[0], shape[1], 1
    elif len(shape) == 3 and 1 <= shape[2] <= CN_MAX:
        rows, cols, cn = shape
    else:
        raise cv_error("GpuMat", f"expected a (rows, cols[, cn<=CV_CN_MAX]) array, got shape {shape}", StsBadArg)
    dt = np.dtype(arr.dtype)
    depth = DTYPE_DEPTH.get(dt)
    if depth is None:
        raise cv_error("GpuMat", f"unsupported dtype {dt}", StsUnsupportedFormat)
    item = dt.itemsize
    strides = tuple(arr.strides)
    inner = (strides[-1] == item) and (cn == 1 or strides[1] == cn * item)
    if not inner or strides[0] % item or strides[0] < cols * cn * item:
        raise cv_error("GpuMat", f"memory with strides {strides} is not a pitched image", StsBadArg)
    pitch = strides[0] // item
    buf = _pitched_view(arr, rows, pitch, dt)
    mat._drop()
    mat._rows, mat._cols, mat._depth, mat._cn = rows, cols, depth, cn
    mat._alloc = Allocation(buf, foreign=owner, cols=cols)
    runtime.export(mat._alloc)


def _pitched_view(arr, rows, pitch, dt):
    """A 2-D (rows, pitch) array over the same memory."""
    if isinstance(arr, np.ndarray):
        return np.lib.stride_tricks.as_strided(arr, (rows, pitch), (pitch * dt.itemsize, dt.itemsize))
    from numba import cuda
    ptr = arr.__cuda_array_interface__["data"][0]
    desc = {"shape": (rows, pitch), "typestr": dt.str, "data": (ptr, False), "version": 3,
            "strides": None}
    return cuda.from_cuda_array_interface(desc, owner=arr, sync=False)


def from_pointer(rows, cols, typ, ptr, step=0):
    """``createGpuMatFromCudaMemory``: a GpuMat over memory at ``ptr`` (not owned)."""
    from .._types import split_type
    from .gpumat import GpuMat
    dc = split_type(typ)
    if dc is None:
        raise cv_error("createGpuMatFromCudaMemory", f"unsupported type {typ}", StsUnsupportedFormat)
    depth, cn = dc
    dt = DEPTH_DTYPE[depth]
    step = step or cols * cn * dt.itemsize
    if step % dt.itemsize or step < cols * cn * dt.itemsize:
        raise cv_error("createGpuMatFromCudaMemory", f"step {step} is smaller than a row or not a "
                       f"multiple of the element size {dt.itemsize}", StsBadArg)
    pitch = step // dt.itemsize
    be = runtime.backend()
    if be.is_device:
        from numba import cuda
        desc = {"shape": (rows, pitch), "typestr": dt.str, "data": (int(ptr), False), "version": 3,
                "strides": None}
        buf = cuda.from_cuda_array_interface(desc, owner=None, sync=False)
    else:
        import ctypes
        raw = (ctypes.c_char * (rows * step)).from_address(int(ptr))
        buf = np.frombuffer(raw, dtype=dt).reshape(rows, pitch)
    m = GpuMat()
    m._rows, m._cols, m._depth, m._cn = rows, cols, depth, cn
    m._alloc = Allocation(buf, foreign=ptr, cols=cols)
    runtime.export(m._alloc)
    return m


def adopt_native(obj):
    """A GpuMat of a CUDA-enabled OpenCV build, seen as a lazycv GpuMat over the same memory
    (no copy). None when ``obj`` is not such a GpuMat."""
    from . import patch
    native = patch.NATIVE.get("GpuMat")
    if native is None or not isinstance(obj, native) or not runtime.backend().is_device:
        return None
    if obj.empty():
        from .gpumat import GpuMat
        return GpuMat()
    rows, cols = obj.size()[1], obj.size()[0]
    return from_pointer(rows, cols, obj.type(), obj.cudaPtr(), obj.step)


def to_native(mat):
    """A native cv2.cuda_GpuMat over this lazycv GpuMat's memory, for cv2 functions lazycv does not
    intercept (they reject Python objects)."""
    from . import patch
    create = patch.NATIVE.get("createGpuMatFromCudaMemory")
    if create is None:
        raise cv_error("GpuMat", "this OpenCV build has no CUDA support to hand the GpuMat to", StsBadArg)
    ptr = mat.cudaPtr()
    return create(mat._rows, mat._cols, mat.type(), ptr, mat.step)
