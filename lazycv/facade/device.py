"""Device queries: with lazycv every backend presents a CUDA device, so code that checks
``getCudaEnabledDeviceCount()`` takes its CUDA path (the CPU backend is one virtual device)."""
import os

import numpy as np

from .. import ir, runtime
from .._types import DEPTH_DTYPE, host_shape, split_type
from ..errors import (StsBadArg, StsNotImplemented, StsOutOfRange, binding_call, binding_class, binding_function,
                      binding_keywords, cv_error)
from ..ops.common import int_arg
from ..runtime import STATE


def getCudaEnabledDeviceCount():
    runtime.backend()
    return runtime.device_count()


def getDevice():
    """The calling thread's current device (as in CUDA, each thread has its own)."""
    runtime.backend()
    return ir.current_device()


def setDevice(device):
    """Select the calling thread's device: memory allocated and kernels launched from now on
    are that device's; the thread's pending work runs first, where it was recorded."""
    device = int_arg("setDevice", device, "device")
    n = getCudaEnabledDeviceCount()
    if not 0 <= device < n:
        raise cv_error("setDevice", f"device {device} is out of range [0, {n})", StsOutOfRange)
    runtime.set_device(device)


def resetDevice():
    runtime.flush(everyone=True)


def printShortCudaDeviceInfo(device):
    print(device_description(device))


def printCudaDeviceInfo(device):
    print(device_description(device))


def device_description(device=0):
    be = runtime.backend()
    if STATE.backend_name == "cuda":
        return f"Device {device}: \"{_device_name(be.cuda.get_current_device())}\" (lazycv cuda backend)"
    return f"Device {device}: \"lazycv {STATE.backend_name} backend\" (virtual CUDA device)"


def _device_name(dev):
    return dev.name.decode() if isinstance(dev.name, bytes) else dev.name


@binding_function("createGpuMatFromCudaMemory")
@binding_keywords("rows", "cols", "size", "type", "cudaMemoryAddress", "step", most=5)
def createGpuMatFromCudaMemory(*args, **kw):
    """(rows, cols, type, cudaMemoryAddress[, step]) or (size, type, cudaMemoryAddress[, step])."""
    from .interop import from_pointer
    if "size" in kw:
        args = (kw.pop("size"),) + tuple(args)
    if args and isinstance(args[0], (tuple, list)):
        (cols, rows), args = args[0], args[1:]
    else:
        rows, cols, args = kw.pop("rows", None) if not args else args[0], \
            kw.pop("cols", None) if len(args) < 2 else args[1], args[2:]
    typ = args[0] if args else kw.pop("type", None)
    ptr = args[1] if len(args) > 1 else kw.pop("cudaMemoryAddress", None)
    step = args[2] if len(args) > 2 else kw.pop("step", 0)
    for what, v in (("rows", rows), ("cols", cols), ("type", typ), ("cudaMemoryAddress", ptr)):
        if v is None:
            raise cv_error("createGpuMatFromCudaMemory", f"missing required argument {what!r}", StsBadArg)
    return from_pointer(int(rows), int(cols), int(typ), int(ptr), int(step))


def createContinuous(rows, cols, type, arr=None):
    """``arr`` made ``rows x cols`` of ``type`` with no gaps between rows (every lazycv
    allocation has none): a GpuMat ``arr`` is reallocated when it differs; without ``arr``, or
    with a numpy one, a host array, as OpenCV's binding returns (scripts hand it to cv2's CPU
    functions or download into it)."""
    return _sized("createContinuous", rows, cols, type, arr, exact=True)


def ensureSizeIsEnough(rows, cols, type, arr=None):
    """``arr`` when it already has ``type`` and at least ``rows x cols`` (a GpuMat: its top-left
    region, OpenCV's rule), else a new one; without ``arr`` a host array, as createContinuous."""
    return _sized("ensureSizeIsEnough", rows, cols, type, arr, exact=False)


def _sized(func, rows, cols, type, arr, exact):
    from .gpumat import GpuMat
    dc = split_type(int(type))
    if dc is None:
        raise cv_error(func, f"unsupported type {type}", StsBadArg)
    rows, cols = int(rows), int(cols)
    if rows < 0 or cols < 0:
        raise cv_error(func, f"rows and cols must be >= 0, got {rows}x{cols}", StsBadArg)
    if arr is None or isinstance(arr, np.ndarray):
        # OpenCV's binding: an output nobody passed is a Mat, so the caller gets a host array
        shape = host_shape(rows, cols, dc[1])
        dt = DEPTH_DTYPE[dc[0]]
        if arr is not None and arr.dtype == dt and arr.ndim == len(shape) and arr.shape[2:] == shape[2:]:
            if arr.shape[:2] == shape[:2] and arr.flags.c_contiguous:
                return arr
            if not exact and arr.shape[0] >= rows and arr.shape[1] >= cols:
                return arr
        return np.empty(shape, dt)
    if not isinstance(arr, GpuMat):
        raise cv_error(func, f"arr must be a cv2.cuda.GpuMat or a numpy array, got {arr.__class__.__name__}",
                       StsBadArg)
    if not arr.empty() and arr.type() == int(type):
        if (arr.rows, arr.cols) == (rows, cols):
            return arr
        if not exact and arr.rows >= rows and arr.cols >= cols:
            return GpuMat(arr, (0, 0, cols, rows))
    arr.create(rows, cols, int(type))
    return arr


def setBufferPoolUsage(on):
    """OpenCV's stack allocator for streams; lazycv pools device memory itself (no effect)."""


def setBufferPoolConfig(deviceId, stackSize, stackCount):
    """See setBufferPoolUsage (no effect)."""


@binding_class
class BufferPool:
    """``cv2.cuda.BufferPool(stream)``: scratch GpuMats for work on ``stream``. OpenCV takes
    them from the stream's stack allocator; lazycv's own memory pool serves every GpuMat, so a
    buffer is a new GpuMat of the size and type asked for (its contents undefined, as OpenCV's)."""

    def __init__(self, stream):
        from .stream import Stream
        if not isinstance(stream, Stream):
            raise cv_error("BufferPool", f"expected a cv2.cuda.Stream, got {type(stream).__name__}", StsBadArg)
        self._stream = stream

    def getBuffer(self, *args):
        """``getBuffer(rows, cols, type)`` or ``getBuffer(size, type)``, size = (width, height)."""
        from .gpumat import GpuMat
        if len(args) not in (2, 3):
            raise cv_error("BufferPool::getBuffer", f"expected (rows, cols, type) or (size, type), got "
                                                    f"{len(args)} arguments", StsBadArg)
        return GpuMat(*args)

    def getAllocator(self):
        raise cv_error("BufferPool::getAllocator", "not provided by lazycv: its own pool serves every "
                                                   "GpuMat, there is no allocator object to hand out",
                       StsNotImplemented)


@binding_class
class TargetArchs:
    """``cv2.cuda.TargetArchs``: which GPU architectures the CUDA module was built for. lazycv
    compiles its kernels at run time for the device in use, so every architecture and feature
    set counts as built."""

    @staticmethod
    def builtWith(feature_set):
        int_arg("TargetArchs::builtWith", feature_set, "feature_set")
        return True

    @staticmethod
    def has(major, minor):
        int_arg("TargetArchs::has", major, "major")
        int_arg("TargetArchs::has", minor, "minor")
        return True

    hasPtx = hasBin = hasEqualOrLessPtx = hasEqualOrGreater = hasEqualOrGreaterPtx = \
        hasEqualOrGreaterBin = has


class DeviceInfo:
    """``cv2.cuda.DeviceInfo([device_id])``: what scripts ask before taking a CUDA path."""

    def __init__(self, device_id=None):
        self._id = getDevice() if device_id is None else int(device_id)
        n = getCudaEnabledDeviceCount()
        if not 0 <= self._id < n:
            raise cv_error("DeviceInfo", f"device {self._id} is out of range [0, {n})", StsOutOfRange)

    def _ask(self, on_host, on_device):
        """``on_device(numba-cuda's device object)`` with this device current on the cuda
        backend; ``on_host()`` elsewhere (the CPU backend is one virtual device: the host)."""
        if STATE.backend_name != "cuda":
            return on_host()
        cuda = runtime.backend().cuda
        with cuda.gpus[self._id]:
            return on_device(cuda.get_current_device())

    def deviceID(self):
        return self._id

    def name(self):
        return self._ask(lambda: f"lazycv {STATE.backend_name} backend", _device_name)

    def majorVersion(self):
        return self._capability()[0]

    def minorVersion(self):
        return self._capability()[1]

    def _capability(self):
        # (the CPU backend runs everything a CUDA device would)
        return self._ask(lambda: (9, 0), lambda dev: tuple(dev.compute_capability))

    def multiProcessorCount(self):
        return self._ask(lambda: os.cpu_count() or 1, lambda dev: dev.MULTIPROCESSOR_COUNT)

    def totalMemory(self):
        return self._memory()[1]

    def freeMemory(self):
        return self._memory()[0]

    def _memory(self):
        """(free, total) bytes: the device's, or the host's for the CPU backend."""
        return self._ask(runtime.memory_info, lambda _: runtime.memory_info())

    def totalGlobalMem(self):
        return self._memory()[1]

    def queryMemory(self):
        """(totalMemory, freeMemory), as OpenCV's binding returns its two outputs."""
        free, total = self._memory()
        return total, free

    def maxThreadsDim(self):
        return self._ask(lambda: (1024, 1024, 64),
                         lambda dev: (dev.MAX_BLOCK_DIM_X, dev.MAX_BLOCK_DIM_Y, dev.MAX_BLOCK_DIM_Z))

    def maxGridSize(self):
        return self._ask(lambda: (2147483647, 65535, 65535),
                         lambda dev: (dev.MAX_GRID_DIM_X, dev.MAX_GRID_DIM_Y, dev.MAX_GRID_DIM_Z))

    def isCompatible(self):
        return True

    def supports(self, feature_set):
        return True

    def canMapHostMemory(self):
        return True

    def unifiedAddressing(self):
        return True


# DeviceInfo's plain properties: OpenCV's name -> (the CUDA device attribute, as numba-cuda's
# Device names it; what the CPU backend's virtual device answers: a Hopper-class GPU's value, so
# code that sizes its work by them takes its usual path)
_ATTRIBUTES = {
    "sharedMemPerBlock": ("MAX_SHARED_MEMORY_PER_BLOCK", 49152),
    "regsPerBlock": ("MAX_REGISTERS_PER_BLOCK", 65536),
    "warpSize": ("WARP_SIZE", 32),
    "memPitch": ("MAX_PITCH", 2147483647),
    "maxThreadsPerBlock": ("MAX_THREADS_PER_BLOCK", 1024),
    "clockRate": ("CLOCK_RATE", 1980000),
    "totalConstMem": ("TOTAL_CONSTANT_MEMORY", 65536),
    "textureAlignment": ("TEXTURE_ALIGNMENT", 512),
    "texturePitchAlignment": ("TEXTURE_PITCH_ALIGNMENT", 32),
    "kernelExecTimeoutEnabled": ("KERNEL_EXEC_TIMEOUT", 0),
    "integrated": ("INTEGRATED", 0),
    "computeMode": ("COMPUTE_MODE", 0),
    "surfaceAlignment": ("SURFACE_ALIGNMENT", 512),
    "concurrentKernels": ("CONCURRENT_KERNELS", 1),
    "ECCEnabled": ("ECC_ENABLED", 0),
    "pciBusID": ("PCI_BUS_ID", 0),
    "pciDeviceID": ("PCI_DEVICE_ID", 0),
    "pciDomainID": ("PCI_DOMAIN_ID", 0),
    "tccDriver": ("TCC_DRIVER", 0),
    "asyncEngineCount": ("ASYNC_ENGINE_COUNT", 2),
    "memoryClockRate": ("MEMORY_CLOCK_RATE", 2619000),
    "memoryBusWidth": ("GLOBAL_MEMORY_BUS_WIDTH", 5120),
    "l2CacheSize": ("L2_CACHE_SIZE", 52428800),
    "maxThreadsPerMultiProcessor": ("MAX_THREADS_PER_MULTIPROCESSOR", 2048),
}


_BOOLEAN = {"kernelExecTimeoutEnabled", "integrated", "concurrentKernels", "ECCEnabled", "tccDriver"}


def _attribute_method(name, attr, on_host):
    def method(self):
        value = self._ask(lambda: on_host, lambda dev: getattr(dev, attr))
        return bool(value) if name in _BOOLEAN else int(value)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"DeviceInfo::{name}() (CUDA's {attr})."
    return method


for _name, (_attr, _host) in _ATTRIBUTES.items():
    setattr(DeviceInfo, _name, _attribute_method(_name, _attr, _host))
binding_class(DeviceInfo)              # (after the attribute methods: they are wrapped too)


NO_CUDA_BUILD = ("this OpenCV build has no CUDA support, and lazycv has neither a fused op nor a CPU OpenCV "
                 "algorithm with its results")


def unsupported(name, why=NO_CUDA_BUILD):
    """A cv2.cuda function lazycv does not provide, standing in for a CPU-only OpenCV's own
    (which aborts the process, "No CUDA support", where a script expects an exception) or for
    a name such a build lacks altogether (an AttributeError): calling it raises cv2.error."""
    def fn(*args, **kw):
        raise cv_error(name, f"not provided by lazycv: {why}", StsNotImplemented)
    fn.__name__ = name
    fn.__doc__ = f"Not provided by lazycv: {why}."
    return fn


def unsupported_class(name, statics=(), why=NO_CUDA_BUILD):
    """A class of OpenCV's CUDA modules lazycv cannot compute: constructing it or calling its
    static factories raises cv2.error naming lazycv and why."""
    refuse = unsupported(name, why)
    attrs = {"__init__": lambda self, *args, **kw: refuse(), "__doc__": f"Not provided by lazycv: {why}."}
    attrs.update({s: staticmethod(unsupported(f"{name}::{s}", why)) for s in statics})
    return type(name, (), attrs)


API = {f.__name__: binding_call(f, f.__name__)
       for f in (getCudaEnabledDeviceCount, getDevice, setDevice, resetDevice, printShortCudaDeviceInfo,
                 printCudaDeviceInfo, createContinuous, ensureSizeIsEnough, setBufferPoolUsage, setBufferPoolConfig)}
API["DeviceInfo"] = DeviceInfo
API["BufferPool"] = BufferPool
API["TargetArchs"] = TargetArchs
# OpenCV's binding also spells static methods Class_method
API.update({f"TargetArchs_{n}": getattr(TargetArchs, n) for n in (
    "builtWith", "has", "hasPtx", "hasBin", "hasEqualOrLessPtx", "hasEqualOrGreater", "hasEqualOrGreaterPtx",
    "hasEqualOrGreaterBin")})
# what a CPU-only OpenCV's cv2.cuda would abort on (install() replaces it only without CUDA)
ABORTING = ("fastNlMeansDenoising", "fastNlMeansDenoisingColored", "nonLocalMeans")
