"""Device queries: with lazycv every backend presents a CUDA device, so code that checks
``getCudaEnabledDeviceCount()`` takes its CUDA path (the CPU backend is one virtual device)."""
from .. import runtime
from ..errors import StsOutOfRange, cv_error
from ..runtime import STATE


def getCudaEnabledDeviceCount():
    be = runtime.backend()
    if STATE.backend_name == "cuda":
        return len(be.cuda.gpus)
    return 1


def getDevice():
    be = runtime.backend()
    if STATE.backend_name == "cuda":
        return be.cuda.get_current_device().id
    return 0


def setDevice(device):
    n = getCudaEnabledDeviceCount()
    if not 0 <= int(device) < n:
        raise cv_error("setDevice", f"device {device} is out of range [0, {n})", StsOutOfRange)
    if STATE.backend_name == "cuda":
        runtime.flush()
        runtime.backend().cuda.select_device(int(device))


def resetDevice():
    runtime.flush()


def printShortCudaDeviceInfo(device):
    print(device_description(device))


def printCudaDeviceInfo(device):
    print(device_description(device))


def device_description(device=0):
    be = runtime.backend()
    if STATE.backend_name == "cuda":
        d = be.cuda.get_current_device()
        return f"Device {device}: \"{d.name.decode() if isinstance(d.name, bytes) else d.name}\" (lazycv cuda backend)"
    return f"Device {device}: \"lazycv {STATE.backend_name} backend\" (virtual CUDA device)"


def createGpuMatFromCudaMemory(*args, **kw):
    """(rows, cols, type, cudaMemoryAddress[, step]) or (size, type, cudaMemoryAddress[, step])."""
    from .interop import from_pointer
    if args and isinstance(args[0], (tuple, list)):
        (cols, rows), args = args[0], args[1:]
    else:
        rows, cols, args = kw.pop("rows", None) if not args else args[0], \
            kw.pop("cols", None) if len(args) < 2 else args[1], args[2:]
    typ = args[0] if args else kw.pop("type")
    ptr = args[1] if len(args) > 1 else kw.pop("cudaMemoryAddress")
    step = args[2] if len(args) > 2 else kw.pop("step", 0)
    return from_pointer(int(rows), int(cols), int(typ), int(ptr), int(step))


API = {f.__name__: f for f in (getCudaEnabledDeviceCount, getDevice, setDevice, resetDevice,
                               printShortCudaDeviceInfo, printCudaDeviceInfo)}
