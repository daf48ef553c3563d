"""Backends run generated kernels and own device memory: ``cpu`` (Numba parallel loops),
``cuda`` (numba-cuda on an NVIDIA GPU) and ``cuda-sim`` (Numba's CUDA simulator, for tests)."""
import os

_INSTANCES = {}
NAMES = ("cuda", "cpu", "cuda-sim")


def cuda_usable():
    """True when a real GPU can run kernels (never under the simulator)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:
        return False


def get(name, device=0):
    """The backend ``name`` of ``device``: one instance a device, so memory pools, launch
    handles and streams are the device's own (the CPU backend's devices are virtual ones)."""
    b = _INSTANCES.get((name, device))
    if b is None:
        if name == "cpu":
            from .cpu import CpuBackend
            b = CpuBackend()
        elif name in ("cuda", "cuda-sim"):
            from .cuda import CudaBackend
            b = CudaBackend(simulator=(name == "cuda-sim"))
        else:
            raise ValueError(f"lazycv: unknown backend {name!r}; expected one of {NAMES}")
        b.device = device
        _INSTANCES[name, device] = b
    return b
