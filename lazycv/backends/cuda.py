"""CUDA backend (and the simulator): generated kernels become ``numba.cuda.jit`` kernels with
one thread per output pixel."""
import ctypes
import os
import re
import struct

import numpy as np

from ..codegen import assigned
from ..memory import BufferPool, pool_cap
from . import cubins, reduce_kernels
from .base import Backend

_FRAME = '''import math
import numpy as np
from numba import cuda


@cuda.jit({opts})
def kernel({params}):
    x = cuda.blockIdx.x * (cuda.blockDim.x * {px}) + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if x < W and y < H:
{body}
'''

_BATCHED = '''import math
import numpy as np
from numba import cuda


@cuda.jit({opts})
def kernel(MAXH, TI, TF, {params}):
    x = cuda.blockIdx.x * (cuda.blockDim.x * {px}) + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    b = cuda.blockIdx.z
    H = TI[b, 0]
    W = TI[b, 1]
    if x < W and y < H:
{branches}
'''

# a reduction (codegen.generate_reduce): each block takes rows blockIdx.x, + gridDim.x, ... and
# its threads the pixels of a row (coalesced, no division per pixel, the row's lines once per
# row), folding them into each thread's accumulators; the block's threads are then folded in
# shared memory into the block's partials, P[block]; the launch folds the blocks in order
# (backends/reduce_kernels.fold)
_REDUCE = '''import math
import numpy as np
from numba import cuda


@cuda.jit({opts})
def kernel({params}):
    _sh = cuda.shared.array(({width}, {threads}), np.float64)
    _t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    _nt = cuda.blockDim.x * cuda.blockDim.y
{init}
    y = cuda.blockIdx.x
    while y < H:
{row}
        x = _t
        while x < W:
{body}
            x += _nt
        y += cuda.gridDim.x
{stash}
    cuda.syncthreads()
    _s = _nt // 2
    while _s > 0:
        if _t < _s:
{combine}
        cuda.syncthreads()
        _s //= 2
    if _t == 0:
{store}
'''

BLOCK = (32, 4, 1)
# output pixels per thread along x, BLOCK[0] apart (stores stay coalesced): the per-item table
# loads and per-row math are paid once for all of them. Baked into the source; a sweep that
# changes it must drop the kernel and plan caches (bench/kernel_variants.py measures both).
PIXELS_PER_THREAD = int(os.environ.get("LAZYCV_PIXELS_PER_THREAD", "4"))

# code-generation knobs measured by bench/kernel_variants.py (baked into the source, like the
# two above). How a thread walks its pixels: "loop" (one pixel after another), "unrolled" (the
# same, written out), "interleaved" (written out with every pixel's loads before any pixel's
# store, so all of a thread's loads are in flight at once: the compiler may not move a load
# above a store it cannot prove apart). And a register cap for the compiler (more threads per
# SM); 0 = none.
PIXEL_ORDER = os.environ.get("LAZYCV_PIXEL_ORDER", "loop")
MAX_REGISTERS = int(os.environ.get("LAZYCV_MAX_REGISTERS", "0"))


def _grid(H, W):
    """The grid of a kernel over an H x W output (PIXELS_PER_THREAD pixels a thread in x)."""
    bx, by = BLOCK[0] * PIXELS_PER_THREAD, BLOCK[1]
    return ((W + bx - 1) // bx, (H + by - 1) // by, 1)


# how a compiled kernel is launched after its first (dispatcher) launch, cheapest first
LAUNCH_MODES = ("driver", "packed", "overload", "dispatcher")


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
        if simulator:                 # plain Python: keep ints unbounded (numpy scalars wrap)
            self.spellings = {"int_load": "int({})", "floor_i32": "int(math.floor({}))",
                              "rint_i32": "round({})", "rint_f32_i32": "round({})", "index": "{}",
                              "fma_f32": Backend.spellings["fma_f32"],
                              "wrap_i32": "((int({}) + 2147483648) % 4294967296 - 2147483648)"}
        else:
            # math.floor is floorf/floor on the GPU; round() goes through float64 and int64,
            # libdevice's float2int_rn is one cvt.rni.s32.f32
            # indices unsigned: Numba then skips its negative-index wraparound on every load and
            # store (W1's kernel 0.57 -> 0.40 ms at 64 frames, bench/RESULTS.md run 17)
            self.spellings = {"int_load": "np.int32({})", "floor_i32": "np.int32(math.floor({}))",
                              "rint_i32": "np.int32(round({}))",
                              "rint_f32_i32": "cuda.libdevice.float2int_rn({})", "index": "np.uint64({})",
                              "wrap_i32": "np.int32({})",
                              "fma_f32": "cuda.fma(np.float32({}), np.float32({}), np.float32({}))"}
        self.launch_mode = os.environ.get("LAZYCV_LAUNCH", "driver")
        if self.launch_mode not in LAUNCH_MODES:
            raise ValueError(f"lazycv: LAZYCV_LAUNCH must be one of {', '.join(LAUNCH_MODES)}, "
                             f"got {self.launch_mode!r}")
        self._direct = {}
        self._cc = None
        if simulator:
            self._driver = self._tables = None
        else:
            from numba.cuda.cudadrv import driver
            self._driver = driver            # whole-row copies and table uploads call it directly
            self._tables = _TableStaging(cuda, driver)
        self.buffers = BufferPool(lambda shape, dt: cuda.device_array(shape, dt),
                                  (lambda st: st.view(st.dtype)) if simulator else _fresh_view,
                                  pool_cap("LAZYCV_POOL_MB", 4096,
                                           lambda: cuda.current_context().get_memory_info()[0]),
                                  None if simulator else self._slab_items,
                                  # a slab item's storage is its slab's (pin one: pin the slab)
                                  None if simulator else _slab_or_self)

    def pinned(self, shape, dtype):
        """Page-locked host memory (``HostMem``), recycled: ``cuMemHostAlloc`` costs about a
        millisecond a megabyte, and a loop that makes page-locked buffers each time it starts
        (StreamedLoop: depth x outputs of them) paid that before its first frame. A buffer
        returns to the pool once every view of it is garbage (memory.host_view), as the
        device pool's do; at most ``LAZYCV_PINNED_POOL_MB`` (default: an eighth of the free
        host memory, at most 512 MB) stay idle, none longer than the pool's idle time."""
        pool = self.__dict__.get("_pinned_pool")
        if pool is None:
            from ..memory import host_free_bytes, host_lifetime, host_view
            cuda = self.cuda
            pool = self._pinned_pool = BufferPool(lambda shp, dt: cuda.pinned_array(shp, dt), host_view,
                                                  pool_cap("LAZYCV_PINNED_POOL_MB", 512, host_free_bytes),
                                                  lifetime_of=host_lifetime)
        return pool.alloc(tuple(shape), np.dtype(dtype))

    def _slab_items(self, storage, n, slab):
        """The 2-D item views of a 3-D slab, built without numba's constructor: DeviceNDArray
        indexing costs ~70 µs a call and even a plain constructor tens of µs, which a batch of
        hundreds of items cannot afford. The layout of one item is worked out once per storage
        (a proper DeviceNDArray); each item copies it, gets its packed launch parameters
        (``_flatten_array``), and builds its memory view only if something asks for it. The
        layout's plain attributes live on a class made for the storage, so an item is made
        with three entries of its own instead of a copy of the layout's dozen."""
        cached = storage.__dict__.get("_lazycv_items")
        if cached is None:
            from numba.cuda.cudadrv.devicearray import DeviceNDArray
            step = storage.strides[0]
            mem = storage.gpu_data
            first = DeviceNDArray(storage.shape[1:], storage.strides[1:], storage.dtype,
                                  gpu_data=mem.view(0, step))
            base_cls = _slab_item_class()
            state = {k: v for k, v in first.__dict__.items() if k not in _PER_ITEM}
            shared = {k: v for k, v in state.items() if not hasattr(base_cls, k)}
            own = {k: v for k, v in state.items() if k not in shared}   # (where the class has the name)
            cls = type(base_cls.__name__, (base_cls,), dict(shared, __module__=base_cls.__module__))
            cached = storage._lazycv_items = (cls, own, _flatten_array(first), step, mem)
        cls, own, flat, step, mem = cached
        base, head, tail = flat[4], flat[:4], flat[5:]
        new = cls.__new__
        items = []
        for b in range(n):
            item = new(cls)
            d = item.__dict__
            if own:
                d.update(own)
            d["_lazycv_slab"] = slab           # the pool recycles the slab once every item is gone
            d["_lazycv_mem"] = (mem, b * step, b * step + step)
            d["_lazycv_params"] = head + (base + b * step,) + tail
            items.append(item)
        return items

    @staticmethod
    def _pixels(row_lines, lines):
        """A thread's body: the row's lines once, then each of its pixels along x."""
        px = PIXELS_PER_THREAD
        if px == 1:
            return row_lines + lines
        if PIXEL_ORDER == "interleaved":
            body = _interleaved(lines, px)
            if body is not None:
                return row_lines + body
        if PIXEL_ORDER in ("unrolled", "interleaved"):
            out = row_lines + ["_x0 = x"]
            for k in range(px):
                out += [f"x = _x0 + {k} * cuda.blockDim.x", "if x < W:"] + ["    " + ln for ln in lines]
            return out
        return row_lines + ["_x0 = x", f"for _k in range({px}):",
                            "    x = _x0 + _k * cuda.blockDim.x", "    if x < W:"] + \
            ["        " + ln for ln in lines]

    def _jit_options(self):
        if self.simulator:
            return ""
        return "cache=True" + (f", max_registers={MAX_REGISTERS}" if MAX_REGISTERS else "")

    def kernel_frame(self, params, row_lines, lines):
        return _FRAME.format(opts=self._jit_options(), params=", ".join(params), px=PIXELS_PER_THREAD,
                             body=self.indent(self._quiet(self._pixels(row_lines, lines)), 8))

    def reduce_frame(self, params, row_lines, lines, fold):
        """A reduction's kernel (``fold``: codegen.Fold): blocks of BLOCK's threads (a power of
        two, the shared-memory fold's halving) over the pixels."""
        init, step, accs = fold.lines()
        if fold.kind == "sum":
            combine = [f"_sh[{k}, _t] += _sh[{k}, _t + _s]" for k in range(fold.width)]
        else:
            combine = []
            for better, v, i in (("better_min", 0, 2), ("better_max", 1, 3)):
                combine += [f"if {better}(_sh[{v}, _t + _s], int(_sh[{i}, _t + _s]), _sh[{v}, _t], int(_sh[{i}, _t])):",
                            f"    _sh[{v}, _t] = _sh[{v}, _t + _s]", f"    _sh[{i}, _t] = _sh[{i}, _t + _s]"]
        return _REDUCE.format(
            opts=self._jit_options(), params=", ".join(params), width=fold.width, threads=BLOCK[0] * BLOCK[1],
            init=self.indent(init, 4), row=self.indent(self._quiet(row_lines) if row_lines else ["pass"], 8),
            body=self.indent(self._quiet(lines + step), 12),
            stash=self.indent([f"_sh[{k}, _t] = {a}" for k, a in enumerate(accs)], 4),
            combine=self.indent(combine, 12),
            store=self.indent([f"P[cuda.blockIdx.x, {k}] = _sh[{k}, 0]" for k in range(fold.width)], 8))

    reduce_launches = 2             # a reduction's kernel and the fold of its blocks' partials

    def reduce_partials(self, rows, cols, width):
        """A reduction's partials: one row of ``width`` per block — a block per image row, at
        most MAX_BLOCKS (the fold reads them all); one in the simulator, whose threads are
        Python threads."""
        n = 1 if self.simulator else max(1, min(reduce_kernels.MAX_BLOCKS, rows))
        return self.alloc(n, width, np.float64)

    def _quiet(self, lines):
        """The simulator runs the body as numpy scalar code, which warns where the GPU silently
        gives inf or NaN (a float divided by zero, a float32 cast of a large double): the body
        runs under np.errstate(all="ignore") there, in each simulated thread (numpy's error
        state is per thread), with the GPU's results and no RuntimeWarnings."""
        if not self.simulator:
            return lines
        return ['with np.errstate(all="ignore"):'] + ["    " + ln for ln in lines]

    def batched_frame(self, params, branches):
        """One thread per pixel of every item; each item's kind selects its branch."""
        opts = self._jit_options()
        out = []
        for j, (pre, row_lines, lines) in enumerate(branches):
            lines = self._pixels(row_lines, lines)
            if len(branches) == 1:
                out += pre + lines
            else:
                out.append(("if" if j == 0 else "elif") + f" TI[b, 2] == {j}:")
                out += ["    " + ln for ln in pre + lines]
        return _BATCHED.format(opts=opts, params=", ".join(params), px=PIXELS_PER_THREAD,
                               branches=self.indent(self._quiet(out), 8))

    def launch_batched(self, compiled, n_items, max_h, max_w, ti, tf, arrays, stream=None, tables=None):
        grid = _grid(max_h, max_w)[:2] + (n_items,)
        if tables is not None:
            dti, dtf = tables
        elif self.simulator:
            dti, dtf = self.cuda.to_device(ti), self.cuda.to_device(tf)
        else:
            # on a stream of lazycv's own, tables take fresh memory: a pooled table could go to a
            # launch on another stream before this one has read it (the default stream is
            # ordered against lazycv's blocking streams by CUDA itself)
            pool = self.buffers if stream is None else _FreshMemory(self.cuda)
            dti, dtf = self._tables.upload((ti, tf), pool, stream)
        self._launch(compiled.fn, grid, (max_h, dti, dtf) + tuple(arrays), stream)

    def constant_tables(self, ti, tf):
        """Per-item tables that many launches read (a batch program's): on the device once."""
        return self.cuda.to_device(ti), self.cuda.to_device(tf)

    def launch_view(self, arr, shape):
        """A reshape for the direct launch paths: only the launch parameters (a numba reshape
        builds a DeviceNDArray, tens of µs); None for the paths that type real arrays."""
        if self.simulator:
            return super().launch_view(arr, shape)
        if self.launch_mode not in ("driver", "packed"):
            return None
        from numba.cuda.np import numpy_support
        p = _array_params(arr)
        strides = numpy_support.strides_from_shape(shape=shape, itemsize=p[3], c_contiguous=True,
                                                   f_contiguous=False)
        return _LaunchView(p[:5] + tuple(shape) + tuple(strides))

    def alloc_batch(self, n, rows, row_elems, dtype):
        return self.buffers.alloc_batch(n, (rows, row_elems), np.dtype(dtype))

    def alloc(self, rows, row_elems, dtype):
        return self.buffers.alloc((rows, row_elems), np.dtype(dtype))

    def _launch(self, fn, grid, args, stream):
        """Launch a generated kernel. The first call goes through numba-cuda's dispatcher (which
        compiles it); later calls go to the compiled overload with arguments packed here,
        skipping the dispatcher's per-call typing of every argument (LAZYCV_LAUNCH=dispatcher
        keeps the dispatcher). Safe because every generated module serves one signature (one
        overload); a dispatcher with several overloads always goes through typing."""
        direct = self._direct.get(fn) if self.launch_mode != "dispatcher" else None
        if direct is None and self.launch_mode != "dispatcher" and not self.simulator \
                and not fn.overloads:
            types = _numba_types(args)
            direct = self._from_disk(fn, types)
            if direct is None:
                _load_array_registry_without_blas_probe()
                direct = self._compile_apart(fn, types)
        if direct is not None:
            try:
                direct.launch(grid, args, stream)
                return
            except _NotPackable:
                pass
        if not fn.overloads:             # (the dispatcher is about to compile or load it)
            _load_array_registry_without_blas_probe()
        if stream is None:
            fn[grid, BLOCK](*args)
        else:
            fn[grid, BLOCK, stream](*args)
        if direct is None and self.launch_mode != "dispatcher" and not self.simulator:
            self._direct_for(fn)

    def _direct_for(self, fn):
        """The direct launcher of ``fn``'s one compiled overload (None with several); its cubin
        is kept for later processes (cubins)."""
        if len(fn.overloads) != 1:
            return None
        overload = next(iter(fn.overloads.values()))
        direct = self._direct[fn] = _DirectLaunch(overload.argument_types, self.launch_mode, kernel=overload)
        if direct.mode == "driver":
            cubins.save(fn, overload, self._compute_capability())
        return direct

    def _compute_capability(self):
        if self._cc is None:
            self._cc = tuple(self.cuda.get_current_device().compute_capability)
        return self._cc

    def _from_disk(self, fn, types):
        """The direct launcher of ``fn`` from the cubin an earlier process kept (cubins), for
        these argument types; None when there is none (numba then compiles or loads it)."""
        if self.launch_mode != "driver" or types is None:
            return None
        got = cubins.load(fn, types, self._compute_capability())
        if got is None:
            return None
        code, entry = got
        try:
            from numba.cuda.cudadrv import driver
            module = self.cuda.current_context().create_module_image(
                driver.ObjectCode.from_cubin(code, name=entry))
            direct = _DirectLaunch(types, "driver", cufunc=_cu_function(module.get_function(entry).handle))
        except Exception:                # a damaged or foreign file: numba's path decides
            return None
        if direct.mode != "driver":
            return None
        self._direct[fn] = direct
        return direct

    def _compile_apart(self, fn, types):
        """Compile (or load from the disk cache) ``fn`` for argument ``types`` on a worker
        thread and return its direct launcher; None to leave it to the dispatcher.

        Numba's compiler catches exceptions internally and some outlive the compile in
        reference cycles; their tracebacks hold every frame below them. Compiled on the
        caller's stack, that is the user's code too, whose locals — lazy GpuMats the user has
        dropped — then stay alive until a full garbage collection and get computed as live
        results at the next flush (measured: an extra kernel and a recompile in a new process).
        On its own thread the compile's frames end at the thread."""
        import threading
        if types is None:
            return None
        out = {}

        def work():
            try:
                out["kernel"] = fn.compile(types)
            except Exception:               # the dispatcher's own launch reports it to the caller
                pass
        t = threading.Thread(target=work, name="lazycv-compile")
        t.start()
        t.join()
        return self._direct_for(fn) if "kernel" in out else None

    def launch(self, compiled, H, W, args, stream=None):
        if compiled.reduce is not None:          # args: the recipe's, the partials, the statistic
            part = args[-2]
            self._launch(compiled.fn, (part.shape[0], 1, 1), (H, W) + tuple(args[:-1]), stream)
            reduce_kernels.fold(self, compiled.reduce, part, args[-1], stream)
            return
        self._launch(compiled.fn, _grid(H, W), (H, W) + tuple(args), stream)

    def launcher(self, compiled, rows, cols):
        """_hotpath.Launcher of the kernel's driver launch (its direct launcher's slots, the
        grid of ``launch``), for a one-kernel program's run in C: W2's frame then skips this
        class's launch -> _launch -> _DirectLaunch chain (about 2 µs of Python)."""
        if HOT_LAUNCHER is None or compiled.reduce is not None or self.launch_mode != "driver":
            return None
        direct = self._direct.get(compiled.fn)
        address = direct.c_address() if direct is not None else 0
        if not address:
            return None
        return HOT_LAUNCHER(_DRIVER_LAUNCH[0], address, _grid(rows, cols) + BLOCK, direct.slots.ints,
                            direct.slots.pointers, direct.slots.codes, (rows, cols))

    @staticmethod
    def _full_rows(buf, c0, ncols):
        return c0 == 0 and ncols == buf.shape[1]

    def _rows_at(self, buf, y0, rows):
        """A device pointer to whole rows ``y0 .. y0 + rows`` of a dense buffer, for numba's
        copy functions (slicing a DeviceNDArray and ``copy_to_*``'s own checks build several
        array views per call, tens of µs); None when ``buf`` has padded rows."""
        if self.simulator or buf.strides[0] != buf.shape[1] * buf.dtype.itemsize:
            return None
        flat = buf.__dict__.get("_lazycv_params")
        base = flat[4] if flat is not None else (buf.device_ctypes_pointer.value or 0)
        return _DevicePointer(base + y0 * buf.strides[0])

    def upload(self, buf, y0, c0, arr2d, stream=None):
        """Direct copy when the region is whole rows; otherwise the runtime stages it."""
        if not self._full_rows(buf, c0, arr2d.shape[1]):
            return False
        arr2d = np.ascontiguousarray(arr2d, dtype=buf.dtype)
        dst = self._rows_at(buf, y0, arr2d.shape[0])
        if dst is not None:
            if arr2d.nbytes:
                self._driver.host_to_device(dst, arr2d, arr2d.nbytes, stream or 0)
            return True
        dst = buf[y0:y0 + arr2d.shape[0]]
        if stream is None:
            dst.copy_to_device(arr2d)
        else:
            dst.copy_to_device(arr2d, stream=stream)
        return True

    def download(self, buf, y0, c0, rows, ncols, out2d, stream=None):
        if not self._full_rows(buf, c0, ncols):
            return False
        src = self._rows_at(buf, y0, rows) if out2d.flags.c_contiguous and out2d.dtype == buf.dtype else None
        if src is not None:
            if out2d.nbytes:
                self._driver.device_to_host(out2d, src, out2d.nbytes, stream or 0)
            return True
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

    def default_stream(self):
        return None if self.simulator else self.cuda.default_stream()

    def order(self, first, then):
        if self.simulator:
            return
        ev = self.cuda.event(timing=False)
        ev.record(first or self.cuda.default_stream())
        ev.wait(then or self.cuda.default_stream())

    def idle(self, stream):
        if self.simulator:
            return True
        ev = self.cuda.event(timing=False)
        ev.record(stream or self.cuda.default_stream())
        return ev.query()

    # CUDA events (numba-cuda's public event API); the simulator keeps the base class's host events
    def record_event(self, stream, timing=True, reuse=None):
        if self.simulator:
            return super().record_event(stream, timing)
        ev = reuse if reuse is not None and getattr(reuse, "_lazycv_backend", None) is self else None
        if ev is None:
            ev = self.cuda.event(timing=timing)
            ev._lazycv_backend = self               # (an event is its device's)
        ev.record(stream or self.cuda.default_stream())
        return ev

    def wait_event(self, stream, event):
        if not self.simulator:
            event.wait(stream or self.cuda.default_stream())

    def event_done(self, event):
        return True if self.simulator else event.query()

    def event_synchronize(self, event):
        if not self.simulator:
            event.synchronize()

    def lane(self):
        """The simulator's device memory is host memory (``pointer``): the host lane serves."""
        if self.simulator:
            return super().lane()
        try:
            from .lanes import DriverLane
            return DriverLane(self.cuda)
        except ImportError:             # (no cuda.bindings: the loop keeps the facade's path)
            return None

    def elapsed_ms(self, start, end):
        """None while either event has not completed (CUDA's cudaErrorNotReady)."""
        if self.simulator:
            return super().elapsed_ms(start, end)
        if not (start.query() and end.query()):
            return None
        return self.cuda.event_elapsed_time(start, end)

    def pointer(self, buf):
        if self.simulator:               # the simulator's device memory is a host array
            return buf._ary.ctypes.data
        return buf.device_ctypes_pointer.value or 0

    def from_foreign(self, obj):
        """Wrap memory that exposes __cuda_array_interface__ without copying."""
        return self.cuda.as_cuda_array(obj)


def _load_array_registry_without_blas_probe():
    """numba-cuda loads its array-math registry at the first compile or disk-cache load, and
    that module probes for scipy's BLAS by importing scipy.linalg: about 0.5 s of a new
    process's time to its first result (measured on the H200 host). A GPU kernel cannot call
    BLAS, so the registry is loaded here with the probe answering "none" (numba-cuda then uses
    its own inner-product loop, which is what runs on a GPU anyway); the probe function is
    restored at once, so nothing else sees a change. Called before numba compiles or loads a
    kernel (a process whose kernels all come from kept cubins never loads the registry)."""
    import importlib
    import sys
    name = "numba.cuda.np.arraymath"
    if name in sys.modules:
        return
    try:
        linalg = importlib.import_module("numba.cuda.np.linalg")
    except Exception:          # whatever breaks here breaks numba-cuda's own load the same way
        return
    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:
        return

    def no_blas():
        raise ImportError("BLAS is not callable from CUDA kernels")
    linalg.ensure_blas = no_blas
    try:
        importlib.import_module(name)
    except Exception:          # a numba-cuda that differs: let it load the usual way later
        pass
    finally:
        linalg.ensure_blas = probe


def _numba_types(args):
    """numba's types of a launch's arguments (what it compiles for); None when one has none
    (the dispatcher's own launch then decides)."""
    try:
        from numba import typeof
        return tuple(typeof(a) for a in args)
    except Exception:
        return None


class _DevicePointer:
    """A raw device address in the form numba's driver copy functions accept."""
    __cuda_memory__ = True
    __slots__ = ("device_ctypes_pointer",)

    def __init__(self, address):
        self.device_ctypes_pointer = ctypes.c_void_p(address)


class _TableStaging:
    """Asynchronous upload of a batched launch's per-item tables.

    A plain ``cuda.to_device`` copies synchronously, and on the default stream a synchronous
    copy waits for every kernel queued before it: the host would stall on the previous batch at
    each launch. Here a table goes through pinned host memory with an asynchronous copy, so the
    host runs ahead of the GPU. Staging buffers form a ring; a slot is written again only after
    its previous copy has run (its event), and the device tables come from the buffer pool,
    whose reuse is ordered on the same stream.
    """
    SLOTS = 8

    def __init__(self, cuda, driver):
        self.cuda, self.driver = cuda, driver
        self.slots = [[None, None] for _ in range(self.SLOTS)]
        self.next = 0

    def upload(self, arrays, pool, stream=None):
        cuda = self.cuda
        stream = stream or cuda.default_stream()
        slot = self.slots[self.next]
        self.next = (self.next + 1) % self.SLOTS
        host, event = slot
        if event is not None:
            event.synchronize()
        sizes = [(a.nbytes + 7) // 8 * 8 for a in arrays]
        if host is None or host.nbytes < sum(sizes):
            host = slot[0] = cuda.pinned_array(max(sum(sizes), 1 << 16), np.uint8)
        out, off = [], 0
        for a, size in zip(arrays, sizes):
            staged = host[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
            staged[...] = a
            dev = pool.alloc(a.shape, a.dtype)
            # the driver call itself: DeviceNDArray.copy_to_device builds two array views per
            # call for its checks (~tens of µs), more than the copy
            self.driver.host_to_device(dev, staged, a.nbytes, stream)
            out.append(dev)
            off += size
        if event is None:
            event = slot[1] = cuda.event(timing=False)
        event.record(stream)
        return out


class _FreshMemory:
    """Device memory that is not pooled (freed by numba-cuda after the work using it)."""
    __slots__ = ("cuda",)

    def __init__(self, cuda):
        self.cuda = cuda

    def alloc(self, shape, dtype):
        return self.cuda.device_array(shape, dtype)


def _fresh_view(storage):
    """A new array object over pooled ``storage`` (what ``storage.view()`` returns, without
    numba's constructor): the object's lifetime is what the pool tracks. Its launch
    parameters are the storage's, worked out once."""
    if "_lazycv_params" not in storage.__dict__:
        _flatten_array(storage)
    view = type(storage).__new__(type(storage))
    view.__dict__.update(storage.__dict__)
    view.__dict__.pop("_lazycv_items", None)
    return view


def _slab_or_self(view):
    """The object whose end returns ``view``'s storage to the pool: its slab for a slab item."""
    return view.__dict__.get("_lazycv_slab", view)


class _LaunchView:
    """Launch parameters of an array that has no object of its own (BatchProgram's slab)."""
    __slots__ = ("_lazycv_params",)

    def __init__(self, params):
        self._lazycv_params = params


_SLAB_ITEM = None


def _slab_item_class():
    """A DeviceNDArray whose memory view (a numba MemoryPointer, several µs to build) is made on
    first use: a packed launch reads the item's cached parameters and never needs it, so most
    batch items never build one. Defined on first use (numba-cuda is imported lazily)."""
    global _SLAB_ITEM
    if _SLAB_ITEM is None:
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        class SlabItem(DeviceNDArray):
            @property
            def gpu_data(self):
                mem = self.__dict__.get("_gpu_data")
                if mem is None:
                    slab_mem, start, stop = self._lazycv_mem
                    mem = self.__dict__["_gpu_data"] = slab_mem.view(start, stop)
                return mem

            @gpu_data.setter
            def gpu_data(self, mem):
                self.__dict__["_gpu_data"] = mem
        _SLAB_ITEM = SlabItem
    return _SLAB_ITEM


# attributes of a DeviceNDArray that name its memory (the rest describe the layout and are shared)
_PER_ITEM = ("gpu_data", "_gpu_data", "_strided_memory_view_shim", "_lazycv_params", "_lazycv_mem")


class _NotPackable(Exception):
    """An argument the packed path does not handle: launch through the dispatcher instead."""


# _hotpath.launch where the C extension was built and is in use (bound by recipes.bind, which
# honours LAZYCV_HOTPATH=0): a launch's parameters written and cuLaunchKernel called in C
HOT_LAUNCH = None
HOT_LAUNCHER = None          # _hotpath.Launcher, bound with HOT_LAUNCH (CudaBackend.launcher)
_DRIVER_LAUNCH = []          # [address of libcuda's cuLaunchKernel, or 0], looked up once


def _driver_launch_address():
    """The address of the driver's ``cuLaunchKernel`` (the legacy default-stream entry point,
    as cuda.bindings calls it), 0 where it cannot be found."""
    if not _DRIVER_LAUNCH:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            _DRIVER_LAUNCH.append(ctypes.cast(lib.cuLaunchKernel, ctypes.c_void_p).value or 0)
        except (OSError, AttributeError):
            _DRIVER_LAUNCH.append(0)
    return _DRIVER_LAUNCH[0]


def _c_launchable(cufunc):
    """The address of ``cufunc`` for _hotpath.launch, once per kernel; 0 where the C launch
    cannot serve it (no driver entry point found, or a handle of another binding)."""
    if not _driver_launch_address():
        return 0
    try:
        return int(cufunc)
    except TypeError:
        return 0


class _DirectLaunch:
    """A compiled overload launched without the dispatcher.

    ``driver`` (the default) keeps one parameter buffer per kernel — an 8-byte slot per kernel
    parameter and the array of pointers to the slots that ``cuLaunchKernel`` reads, both built
    once — writes each launch's values into it (ParamSlots.write) and calls
    ``cuda.bindings.driver.cuLaunchKernel``, or does both in C (``HOT_LAUNCH``). ``packed``
    builds the parameter list for ``cuda.core.launch`` (which converts every parameter again
    each call). Both flatten an
    array argument once per array object into what numba-cuda passes for it (meminfo, parent,
    size, itemsize, data pointer, shape, strides — the layout of ``_Kernel._prepare_args``) and
    cache it on the array. ``overload`` hands the arguments to numba-cuda's ``_Kernel.launch``
    (its own packing, no typing). ``driver`` falls back to ``packed`` where cuda.bindings is
    missing.
    """
    __slots__ = ("kernel", "mode", "packers", "cukernel", "configs", "to_core_stream",
                 "default_stream", "config_cls", "launch_fn", "kinds", "slots", "cufunc",
                 "cu_launch", "cufunc_address")

    def __init__(self, argument_types, mode, kernel=None, cufunc=None):
        """``kernel``: numba-cuda's compiled overload; or ``cufunc``, the loaded function of a
        kept cubin (driver mode only)."""
        from cuda.core import LaunchConfig, launch
        from numba.cuda import types
        from numba.cuda.cudadrv import driver
        self.kernel, self.mode, self.configs = kernel, mode, {}
        self.cukernel, self.cufunc = None, cufunc
        self.to_core_stream, self.config_cls, self.launch_fn = driver._to_core_stream, LaunchConfig, launch
        self.default_stream = driver._to_core_stream(0)
        packers, kinds, widths = [], [], []
        for ty in argument_types:
            if isinstance(ty, types.Array):
                packers.append(None)
                kinds.append(None)
                widths.append(5 + 2 * ty.ndim)
                continue
            if isinstance(ty, types.Integer):
                packers.append(getattr(ctypes, f"c_{ty}"))
                kinds.append("i")
            elif ty == types.float64:
                packers.append(ctypes.c_double)
                kinds.append("f64")
            elif ty == types.float32:
                packers.append(ctypes.c_float)
                kinds.append("f32")
            else:
                self.mode = "overload"            # nothing generated uses other types today
                break
            widths.append(1)
        self.packers, self.kinds = packers, kinds
        if self.mode == "driver":
            try:
                from cuda.bindings import driver as cu
                self.cu_launch = cu.cuLaunchKernel
            except ImportError:
                self.mode = "packed"
        if self.mode == "driver":
            self.slots = ParamSlots(kinds, widths)
            self.cufunc_address = None

    def launch(self, grid, args, stream):
        if self.mode == "driver":
            self._launch_driver(grid, args, stream)
            return
        core_stream = self.default_stream if stream is None else self.to_core_stream(stream)
        if self.mode == "overload":
            self.kernel.launch(args, grid, BLOCK, core_stream, 0)
            return
        params = []
        for pack, v in zip(self.packers, args):
            if pack is None:
                params += _array_params(v)
            else:
                params.append(pack(v))
        config = self.configs.get(grid)
        if config is None:
            config = self.configs[grid] = self.config_cls(grid=grid, block=BLOCK, shmem_size=0)
        if self.cukernel is None:
            self.cukernel = self.kernel._codelibrary.get_cufunc().kernel
        self.launch_fn(core_stream, config, self.cukernel, *params)

    def c_address(self):
        """The kernel's address for _hotpath's C launch (0 where it cannot serve it), the
        kernel's loaded function looked up first."""
        if self.mode != "driver":
            return 0
        if self.cufunc is None:
            self.cufunc = _cu_function(self.kernel._codelibrary.get_cufunc().handle)
        if self.cufunc_address is None:
            self.cufunc_address = _c_launchable(self.cufunc)
        return self.cufunc_address

    def _launch_driver(self, grid, args, stream):
        address = self.c_address()             # (the loaded function too, which both paths call)
        handle = 0 if stream is None else int(stream.handle or 0)
        if HOT_LAUNCH is not None and address:
            # the slots written and the driver called in C (W2: 6 µs a launch in Python)
            err = HOT_LAUNCH(_DRIVER_LAUNCH[0], address, handle, tuple(grid) + BLOCK,
                             self.slots.ints, self.slots.pointers, self.slots.codes, tuple(args))
            if err is not None:                # (None: an argument the Python path writes)
                if err:
                    raise RuntimeError(f"lazycv: cuLaunchKernel failed: CUresult {err}")
                return
        self.slots.write(args)
        err, = self.cu_launch(self.cufunc, grid[0], grid[1], grid[2], BLOCK[0], BLOCK[1], BLOCK[2], 0,
                              handle, self.slots.pointers, 0)
        if err:
            raise RuntimeError(f"lazycv: cuLaunchKernel failed: {err!r}")


class ParamSlots:
    """A kernel's parameters as ``cuLaunchKernel`` reads them: one 8-byte slot per parameter
    and an array of pointers to the slots (``pointers``: its address), both made once. Kinds
    per argument: None (an array: its flattened parameters), "i", "f32", "f64" (``codes``: the
    same as _hotpath.launch reads them). Slots are little-endian, so a 4-byte parameter is read
    from its slot's low half.

    A launch's values go in with one ``struct.pack_into`` call of a function generated for the
    kinds (1.6 µs for W2's 26 arguments where a loop over them into a numpy array took 5)."""
    __slots__ = ("kinds", "codes", "ints", "f64", "f32", "_ptrs", "pointers", "_pack")

    def __init__(self, kinds, widths):
        self.kinds = kinds
        # a byte an argument: 1 an int, 2 a float64, 3 a float32, an array's slot count
        self.codes = bytes(w if k is None else {"i": 1, "f64": 2, "f32": 3}[k]
                           for k, w in zip(kinds, widths))
        nslots = sum(widths)
        self.ints = np.zeros(max(nslots, 1), np.int64)
        self.f64, self.f32 = self.ints.view(np.float64), self.ints.view(np.float32)
        self._ptrs = np.arange(nslots, dtype=np.uint64) * 8 + self.ints.ctypes.data
        self.pointers = self._ptrs.ctypes.data
        self._pack = _slot_packer(kinds, widths, self.ints)

    def write(self, args):
        """This launch's values."""
        try:
            self._pack(args)
        except (struct.error, OverflowError, TypeError):   # a value struct will not take
            self._write_slowly(args)

    def _write_slowly(self, args):
        """As ``write``, through numpy's conversions (a float32 parameter past float32's range
        becomes inf, as numba-cuda passes it)."""
        values, floats = [], None
        for kind, v in zip(self.kinds, args):
            if kind is None:
                values += _array_params(v)
            elif kind == "i":
                values.append(v)
            else:
                if floats is None:
                    floats = []
                floats.append((len(values), kind, v))
                values.append(0)
        self.ints[:] = values
        if floats:
            for i, kind, v in floats:
                if kind == "f64":
                    self.f64[i] = v
                else:
                    self.f32[2 * i] = v


def _array_params(v):
    """An array argument's flattened kernel parameters, worked out once per array object."""
    return getattr(v, "_lazycv_params", None) or _flatten_array(v)


def _slot_packer(kinds, widths, slots):
    """A function writing one launch's arguments into ``slots`` (8 bytes a parameter) with one
    ``struct.pack_into``, generated per kernel signature so that no per-argument dispatch
    remains. ``widths``: the slots each argument takes (an array: 5 + 2 * ndim)."""
    fmt, parts = "<", []
    for i, (kind, width) in enumerate(zip(kinds, widths)):
        if kind is None:
            fmt += "q" * width
            parts.append(f"*params(a[{i}])")
        else:
            fmt += {"i": "q", "f64": "d", "f32": "f4x"}[kind]
            parts.append(f"a[{i}]")
    scope = {"pack": struct.Struct(fmt).pack_into, "slots": slots, "params": _array_params}
    exec(f"def write(a):\n    pack(slots, 0, {', '.join(parts)})\n", scope)
    return scope["write"]


def _cu_function(handle):
    """The CUfunction to launch for a loaded kernel handle (a CUkernel from a library, turned
    into the current context's function; or already a CUfunction)."""
    from cuda.bindings import driver as cu
    if isinstance(handle, cu.CUkernel):
        err, fn = cu.cuKernelGetFunction(handle)
        if err:
            raise RuntimeError(f"lazycv: cuKernelGetFunction failed: {err!r}")
        return fn
    return handle


def _flatten_array(devary):
    """numba-cuda's kernel parameters for one device array (as ``_Kernel._prepare_args`` builds
    them from the array's strided-memory-view shim), cached on the array object."""
    from numba.cuda.np import numpy_support
    shim = getattr(devary, "_strided_memory_view_shim", None)
    if shim is None:
        raise _NotPackable
    itemsize = shim.dtype.itemsize
    shape = tuple(shim.shape)
    layout = shim._layout
    strides = layout.strides_in_bytes or numpy_support.strides_from_shape(
        shape=shape, itemsize=itemsize, c_contiguous=layout.is_contiguous_c,
        f_contiguous=layout.is_contiguous_f)
    flat = (0, 0, shim.size, itemsize, shim.ptr or 0, *shape, *strides)
    try:
        devary._lazycv_params = flat
    except AttributeError:
        pass
    return flat


def _interleaved(lines, px):
    """``px`` pixels of a thread as straight-line code: each assignment (a load, a step of the
    math) for every pixel in turn, names suffixed per pixel, then every pixel's stores, each
    under its own ``x < W`` — so the loads of all pixels are issued before the first one's math
    waits on its data.
    A pixel past the row's end computes with x clamped to the last column, so its loads stay
    inside the image; only its store is skipped. None unless the body is assignments and stores
    with no load after a store (the form codegen.emit_body writes); the plain loop serves it."""
    body, stores = [], []
    for ln in lines:
        if assigned(ln):
            if stores and "[" in ln:
                return None              # a load after a store: keep the written order
            body.append(ln)
        elif ln.rstrip().endswith(":"):
            return None                  # a control line
        else:
            stores.append(ln)
    local = {"x"} | {assigned(ln) for ln in body}
    word = re.compile(r"(?<![.\w])(" + "|".join(sorted(local, key=len, reverse=True)) + r")(?!\w)")

    def rename(ln, k):
        return word.sub(lambda m: f"_x{k}" if m.group(1) == "x" else f"{m.group(1)}_p{k}", ln)
    out, tail = ["_x0 = x"], []
    for k in range(1, px):
        out += [f"_xr{k} = _x0 + {k} * cuda.blockDim.x", f"_x{k} = min(_xr{k}, W - 1)"]
    for ln in body:                       # line by line across the pixels: loads side by side
        out += [rename(ln, k) for k in range(px)]
    tail += [rename(ln, 0) for ln in stores]            # (the frame's guard covers pixel 0)
    for k in range(1, px):
        tail.append(f"if _xr{k} < W:")
        tail += ["    " + rename(ln, k) for ln in stores]
    return out + tail
