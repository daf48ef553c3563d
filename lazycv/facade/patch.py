"""Installing lazycv as ``cv2.cuda`` (and ``cv2.cudacodec``) and taking it out again, exactly.

Without a CUDA build of OpenCV, every name the CUDA build's binding has is installed
(facade/cuda_names.py), each from the first source that has it: a fused op (ops.common.API),
the facade's objects, a CPU OpenCV path (ops.algorithms.FALLBACK_API), else a stand-in that
raises cv2.error saying why — so a script meets results or cv2.error, never an AttributeError.
"""
import types

import cv2

from ..ops import API
from ..ops.algorithms import FALLBACK_API
from ..ops.video import CODEC_API
from . import cuda_names, interop
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
        for name, obj in FALLBACK_API.items():
            table.setdefault(name, obj)
        for name in cuda_names.cuda_names() - table.keys():
            table[name] = _stand_in(name, table)
    return table


def _stand_in(name, table):
    """What a CUDA-build name lazycv cannot compute is under lazycv: its constant, or a
    function/class raising cv2.error (a static method of a class lazycv provides: the
    provided class's own)."""
    from . import device
    if name in cuda_names.CONSTANTS:
        return cuda_names.CONSTANTS[name]
    cls, _, static = name.rpartition("_")
    why = cuda_names.NO_CPU_EQUIVALENT.get(name) or cuda_names.NO_CPU_EQUIVALENT.get(cls) or device.NO_CUDA_BUILD
    if name in cuda_names.CLASSES:
        return device.unsupported_class(name, cuda_names.CLASSES[name], why)
    if cls in cuda_names.CLASSES and static in cuda_names.CLASSES[cls]:
        owner = table.get(cls) or FALLBACK_API.get(cls)
        if owner is not None and hasattr(owner, static):
            return getattr(owner, static)
    return device.unsupported(name, why)


def _codec_module():
    """cv2.cudacodec as a CUDA build has it, over CPU OpenCV's videoio (ops/video.py)."""
    from . import device
    mod = types.ModuleType("cv2.cudacodec", "lazycv: cv2.cudacodec over CPU OpenCV's videoio")
    for name in cuda_names.codec_names():
        if name in CODEC_API:
            value = CODEC_API[name]
        elif name in cuda_names.CODEC_CONSTANTS:
            value = cuda_names.CODEC_CONSTANTS[name]
        elif name in cuda_names.CODEC_CLASSES:
            value = device.unsupported_class(f"cudacodec::{name}", why="it needs NVIDIA's video codec SDK")
        else:
            value = device.unsupported(f"cudacodec::{name}", why="it needs NVIDIA's video codec SDK")
        setattr(mod, name, value)
    return mod


def supported():
    """cv2.cuda name -> "fused" (a lazycv op), "fallback" (runs through CPU OpenCV) or
    "unsupported" (raises cv2.error), for every function and class of OpenCV's CUDA modules and
    every fused op; cv2.cudacodec's names are prefixed "cudacodec."."""
    names = {n for n in cuda_names.cuda_names() if n not in cuda_names.CONSTANTS} | set(API)
    table = {}
    for name in sorted(names):
        cls, _, static = name.rpartition("_")
        owner = cls if cls in cuda_names.CLASSES and static in cuda_names.CLASSES[cls] else name
        if name in API:
            table[name] = "fused"
        elif owner in FALLBACK_API or name in FALLBACK_API:
            table[name] = "fallback"
        else:
            table[name] = "unsupported"
    for name in sorted(cuda_names.codec_names() - set(cuda_names.CODEC_CONSTANTS)):
        table[f"cudacodec.{name}"] = "fallback" if name in CODEC_API else "unsupported"
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
    if not _native_cuda_build():
        top.update({f"cuda_{cls}": table[cls] for cls in cuda_names.CLASSES})
        if not hasattr(cv2, "cudacodec"):
            codec = _codec_module()
            top["cudacodec"] = codec
            top.update({f"cudacodec_{cls}": getattr(codec, cls)
                        for cls in (*cuda_names.CODEC_CLASSES, *cuda_names.CODEC_STRUCTS)})
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
