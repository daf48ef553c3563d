"""Installing lazycv as ``cv2.cuda`` and taking it out again, exactly."""
import cv2

from ..ops import API
from . import interop
from .gpumat import GpuMat
from .stream import Event, Stream, wrapStream

_MISSING = object()
NATIVE = {}            # the CUDA-enabled build's own classes/functions, when present
_saved = []            # stack of saved attribute states (enable() nests)


def _native_cuda_build():
    try:
        return cv2.cuda.getCudaEnabledDeviceCount() > 0
    except Exception:
        return False


def _wrap_native(fn):
    """A native cv2.cuda function that lazycv does not intercept: hand it materialised native
    GpuMats (cv2's C code rejects Python objects), and adopt native results."""
    def call(*args, **kw):
        conv = lambda a: interop.to_native(a) if isinstance(a, GpuMat) else a
        out = fn(*(conv(a) for a in args), **{k: conv(v) for k, v in kw.items()})
        return out
    call.__name__ = getattr(fn, "__name__", "native")
    call.__wrapped__ = fn
    return call


def _functions():
    from . import device, hostmem
    table = dict(API)
    table.update(device.API)
    table.update(hostmem.API)
    table.update(GpuMat=GpuMat, Stream=Stream, Event=Event, Stream_Null=Stream.Null,
                 Event_elapsedTime=Event.elapsedTime, wrapStream=wrapStream,
                 GpuMat_defaultAllocator=GpuMat.defaultAllocator, GpuMat_getStdAllocator=GpuMat.getStdAllocator,
                 GpuMat_setDefaultAllocator=GpuMat.setDefaultAllocator,
                 createGpuMatFromCudaMemory=device.createGpuMatFromCudaMemory)
    if not _native_cuda_build():
        table.update({n: device.unsupported(n) for n in device.ABORTING if n not in table})
    return table


def install():
    """Patch cv2.cuda (and cv2.cuda_GpuMat etc.); returns a token for uninstall."""
    cuda = cv2.cuda
    if not NATIVE and _native_cuda_build():
        NATIVE["GpuMat"] = cuda.GpuMat
        if hasattr(cuda, "createGpuMatFromCudaMemory"):
            NATIVE["createGpuMatFromCudaMemory"] = cuda.createGpuMatFromCudaMemory
    saved = []
    table = _functions()
    from .hostmem import HostMem
    from .device import BufferPool, DeviceInfo, TargetArchs
    from .gpumat import GpuMatAllocator
    top = {"cuda_GpuMat": GpuMat, "cuda_Stream": Stream, "cuda_Event": Event, "cuda_HostMem": HostMem,
           "cuda_BufferPool": BufferPool, "cuda_DeviceInfo": DeviceInfo, "cuda_TargetArchs": TargetArchs,
           "cuda_GpuMat_Allocator": GpuMatAllocator,
           "cuda_Stream_Null": Stream.Null, "cuda_Event_elapsedTime": Event.elapsedTime}
    for name, value in table.items():
        saved.append((cuda, name, getattr(cuda, name, _MISSING)))
        setattr(cuda, name, value)
    for name, value in top.items():
        saved.append((cv2, name, getattr(cv2, name, _MISSING)))
        setattr(cv2, name, value)
    if NATIVE:
        for name in dir(cuda):
            if name.startswith("_") or name in table:
                continue
            obj = getattr(cuda, name)
            if callable(obj) and not isinstance(obj, type):
                saved.append((cuda, name, obj))
                setattr(cuda, name, _wrap_native(obj))
    _saved.append(saved)
    return len(_saved)


def uninstall():
    """Undo the most recent install()."""
    if not _saved:
        return
    for mod, name, value in reversed(_saved.pop()):
        if value is _MISSING:
            try:
                delattr(mod, name)
            except AttributeError:
                pass
        else:
            setattr(mod, name, value)


def depth():
    return len(_saved)
