"""CUDA backend (and the simulator): generated kernels become ``numba.cuda.jit`` kernels with
one thread per output pixel."""
import os

import numpy as np

from ..memory import BufferPool
from .base import Backend

_FRAME = '''import math
import numpy as np
from numba import cuda


@cuda.jit({opts})
def kernel({params}):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if x < W and y < H:
{body}
'''

_BATCHED = '''import math
import numpy as np
from numba import cuda


@cuda.jit({opts})
def kernel(MAXH, TI, TF, {params}):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    b = cuda.blockIdx.z
    H = TI[b, 0]
    W = TI[b, 1]
    if x < W and y < H:
{branches}
'''

BLOCK = (32, 8, 1)


class CudaBackend(Backend):
    is_device = True

    def __init__(self, simulator=False):
        if simulator:
            if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
                import sys
                if "numba.cuda" in sys.modules:
                    raise RuntimeError(
                        "lazycv: backend 'cuda-sim' needs NUMBA_ENABLE_CUDASIM=1 set before numba.cuda "
                        "is imported; set it in the environment of the process")
                os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        from numba import cuda
        self.cuda = cuda
        self.simulator = simulator
        self.name = "cuda-sim" if simulator else "cuda"
        if simulator:
            self.int_load = "int({})"
        self.buffers = BufferPool(lambda shape, dt: cuda.device_array(shape, dt),
                                  lambda st: st.view(st.dtype),
                                  int(os.environ.get("LAZYCV_POOL_MB", 4096)) << 20,
                                  None if simulator else self._slab_items)

    def _slab_items(self, storage, n):
        """The 2-D item views of a 3-D slab, built directly: DeviceNDArray indexing costs
        ~70 µs a call, which a batch of hundreds of items cannot afford."""
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        shape, strides, dt = storage.shape[1:], storage.strides[1:], storage.dtype
        step = storage.strides[0]
        mem = storage.gpu_data
        return [DeviceNDArray(shape, strides, dt, gpu_data=mem.view(b * step, (b + 1) * step))
                for b in range(n)]

    def kernel_frame(self, params, row_lines, lines):
        lines = row_lines + lines                 # one thread per pixel: nothing to hoist
        opts = "" if self.simulator else "cache=True"
        return _FRAME.format(opts=opts, params=", ".join(params), body=self.indent(lines, 8))

    def batched_frame(self, params, branches):
        """One thread per pixel of every item; each item's kind selects its branch."""
        opts = "" if self.simulator else "cache=True"
        out = []
        for j, (pre, row_lines, lines) in enumerate(branches):
            lines = row_lines + lines
            if len(branches) == 1:
                out += pre + lines
            else:
                out.append(("if" if j == 0 else "elif") + f" TI[b, 2] == {j}:")
                out += ["    " + ln for ln in pre + lines]
        return _BATCHED.format(opts=opts, params=", ".join(params), branches=self.indent(out, 8))

    def launch_batched(self, compiled, n_items, max_h, max_w, ti, tf, arrays, stream=None):
        bx, by, _ = BLOCK
        grid = ((max_w + bx - 1) // bx, (max_h + by - 1) // by, n_items)
        cuda = self.cuda
        dti, dtf = cuda.to_device(ti), cuda.to_device(tf)
        self._launch(compiled.fn, grid, (max_h, dti, dtf) + tuple(arrays), stream)

    def alloc_batch(self, n, rows, row_elems, dtype):
        return self.buffers.alloc_batch(n, (rows, row_elems), np.dtype(dtype))

    def alloc(self, rows, row_elems, dtype):
        return self.buffers.alloc((rows, row_elems), np.dtype(dtype))

    def _launch(self, fn, grid, args, stream):
        """Launch through numba-cuda's dispatcher. (Calling the compiled overload directly
        skipped the per-call type resolution but gave wrong results on the device when a
        kernel was reused, 2026-11-30: see bench/RESULTS.md run 5; not used until understood.)"""
        if stream is None:
            fn[grid, BLOCK](*args)
        else:
            fn[grid, BLOCK, stream](*args)

    def launch(self, compiled, H, W, args, stream=None):
        bx, by, _ = BLOCK
        grid = ((W + bx - 1) // bx, (H + by - 1) // by, 1)
        self._launch(compiled.fn, grid, (H, W) + tuple(args), stream)

    @staticmethod
    def _full_rows(buf, c0, ncols):
        return c0 == 0 and ncols == buf.shape[1]

    def upload(self, buf, y0, c0, arr2d, stream=None):
        """Direct copy when the region is whole rows; otherwise the runtime stages it."""
        if not self._full_rows(buf, c0, arr2d.shape[1]):
            return False
        dst = buf[y0:y0 + arr2d.shape[0]]
        if stream is None:
            dst.copy_to_device(np.ascontiguousarray(arr2d))
        else:
            dst.copy_to_device(np.ascontiguousarray(arr2d), stream=stream)
        return True

    def download(self, buf, y0, c0, rows, ncols, out2d, stream=None):
        if not self._full_rows(buf, c0, ncols):
            return False
        src = buf[y0:y0 + rows]
        if stream is None:
            src.copy_to_host(out2d)
        else:
            src.copy_to_host(out2d, stream=stream)
        return True

    def device_function(self, fn):
        """A plain Python function made callable from generated kernels."""
        return self.cuda.jit(device=True)(fn)

    def synchronize(self, stream=None):
        if stream is None:
            self.cuda.synchronize()
        else:
            stream.synchronize()

    def pointer(self, buf):
        return buf.device_ctypes_pointer.value or 0

    def from_foreign(self, obj):
        """Wrap memory that exposes __cuda_array_interface__ without copying."""
        return self.cuda.as_cuda_array(obj)
