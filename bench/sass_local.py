"""W1's generated CUDA kernel compiled to SASS on a machine without a GPU (numba-cuda's NVVM
from the nvidia-nvvm / nvidia-cuda-nvrtc wheels, ptxas and cuobjdump): registers, instruction
count and opcode histogram, next to the hand-written CUDA C++ peer (bench/peers.py) compiled
the same way. For trying code-generation changes before spending device time.

    pip install nvidia-nvvm nvidia-cuda-nvrtc nvidia-cuda-cuobjdump   # once; ptxas on PATH
    python bench/sass_local.py [--out /tmp/sass]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inspect_kernel import opcode_histogram  # noqa: E402


def w1_kernel(by_reciprocal=False, compose=False):
    """(CUDA source, kinds) of W1's batched launch (8 small frames), generated as the CPU backend
    launches it (a flush lets go of the computed nodes' inputs once it is done)."""
    import lazycv
    from lazycv import runtime
    lazycv.enable(backend="cpu")
    got = []
    real = runtime._launch_batch

    def spy(kinds, by_node):
        captured = [(members[0][1],) + runtime._bind_kind(members)[:2] for members in kinds]
        got.append((cuda_source(captured)[0], captured))
        return real(kinds, by_node)
    runtime._launch_batch = spy
    frames = [np.random.default_rng(i).integers(0, 256, (36, 48, 3), np.uint8) for i in range(8)]
    import w1
    if compose:
        w1.lazycv_compose_setup(np.stack(frames), tensor=True)()
    else:
        w1.lazycv_setup(frames, True, by_reciprocal)()
    runtime._launch_batch = real
    lazycv.disable()
    return got[-1]


def cuda_source(kinds):
    from lazycv import codegen
    from lazycv.backends.cuda import CudaBackend
    be = CudaBackend.__new__(CudaBackend)
    be.simulator, be.name = False, "cuda"
    be.spellings = CudaBackend(simulator=False).spellings if False else _real_spellings()
    _, specs, source = codegen.generate_batched(kinds, be.batched_frame, be.spellings)
    return re.sub(r"@cuda\.jit\(.*?\)", "@cuda.jit", source), specs


def _real_spellings():
    import inspect
    from lazycv.backends import cuda as cb
    src = inspect.getsource(cb.CudaBackend.__init__)
    m = re.search(r"else:\s*#.*?self\.spellings = (\{.*?\})\n", src, re.S)
    return eval(m.group(1), vars(cb))           # the non-simulator spellings, as the backend has them


def signature(source, kinds):
    from numba import types
    params = re.search(r"def kernel\((.*?)\):", source, re.S).group(1).replace("\n", " ").split(",")
    sig = []
    for p in (q.strip() for q in params):
        if p == "MAXH":
            sig.append(types.int64)
        elif p == "TI":
            sig.append(types.Array(types.int64, 2, "C"))
        elif p == "TF":
            sig.append(types.Array(types.float64, 2, "C"))
        elif re.match(r"(k\d+_)?s\d+", p):
            sig.append(types.Array(types.uint8, 2, "C"))      # W1's sources: uint8 frames / std
        elif re.match(r"(k\d+_)?O\d+", p):
            sig.append(types.Array(types.float32, 3, "C"))
        else:
            raise ValueError(p)
    return types.void(*sig)


def sass_of_numba(source, kinds, out):
    import importlib.util
    from numba import cuda
    path = Path(out) / "w1_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("w1_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = signature(source, kinds)
    ptx, _ = cuda.compile_ptx(mod.kernel.py_func, sig, cc=(9, 0))
    return assemble(ptx, Path(out) / "w1_numba")


PTXAS_FLAGS = []


def assemble(ptx, stem):
    # NVVM from a newer wheel than the machine's ptxas: its PTX ISA is newer than needed
    ptx = re.sub(r"^\.version \d+\.\d+", f".version {ptx_isa()}", ptx, count=1, flags=re.M)
    Path(f"{stem}.ptx").write_text(ptx)
    res = subprocess.run(["ptxas", "-arch=sm_90", "-O3", "-v", *PTXAS_FLAGS, f"{stem}.ptx", "-o", f"{stem}.cubin"],
                         capture_output=True, text=True, check=True)
    regs = re.search(r"Used (\d+) registers", res.stderr)
    spill = re.search(r"(\d+) bytes spill stores", res.stderr)
    if spill and int(spill.group(1)):
        print(f"  {Path(stem).name}: {spill.group(0)}")
    sass = subprocess.run([cuobjdump(), "-sass", f"{stem}.cubin"], capture_output=True, text=True,
                          check=True).stdout
    Path(f"{stem}.sass").write_text(sass)
    return int(regs.group(1)) if regs else None, sass


def ptx_isa():
    """The newest PTX ISA the installed ptxas takes (its error message names it)."""
    res = subprocess.run(["ptxas", "-arch=sm_90", "-"], input=".version 99.0\n.target sm_90\n",
                         capture_output=True, text=True)
    m = re.search(r"current version is '([\d.]+)'", res.stderr)
    return m.group(1) if m else "8.0"


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    import nvidia
    for root in nvidia.__path__:
        for p in Path(root).rglob("cuobjdump"):
            return str(p)
    raise FileNotFoundError("cuobjdump (pip install nvidia-cuda-cuobjdump)")


def sass_of_cpp(out):
    import peers
    src = Path(out) / "w1_cpp.cu"
    src.write_text("#define W1_BITEXACT\n" + peers.W1_CUDA_SRC)
    subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-ptx", str(src), "-o", str(Path(out) / "w1_cpp.ptx")],
                   check=True)
    return assemble((Path(out) / "w1_cpp.ptx").read_text(), Path(out) / "w1_cpp")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/sass"))
    ap.add_argument("--by-reciprocal", action="store_true", help="W1 multiplying by 1/std, not dividing")
    ap.add_argument("--compose", action="store_true", help="W1 through lazycv.compose (std as scalars)")
    ap.add_argument("--pixel-order", default=None, choices=("loop", "unrolled", "interleaved"),
                    help="how a thread walks its pixels (LAZYCV_PIXEL_ORDER)")
    ap.add_argument("--px", type=int, default=0, help="pixels per thread (LAZYCV_PIXELS_PER_THREAD)")
    ap.add_argument("--max-registers", type=int, default=0, help="register cap (LAZYCV_MAX_REGISTERS)")
    args = ap.parse_args()
    from lazycv.backends import cuda as cuda_backend
    if args.pixel_order:
        cuda_backend.PIXEL_ORDER = args.pixel_order
    if args.px:
        cuda_backend.PIXELS_PER_THREAD = args.px
    if args.max_registers:
        PTXAS_FLAGS.append(f"-maxrregcount={args.max_registers}")
    os.makedirs(args.out, exist_ok=True)
    source, kinds = w1_kernel(args.by_reciprocal, args.compose)
    rows = [(f"lazycv generated ({cuda_backend.PIXELS_PER_THREAD} px a thread, {cuda_backend.PIXEL_ORDER})",
             *sass_of_numba(source, kinds, args.out))]
    try:
        rows.append(("CUDA C++ bit-exact (1 px/thread)", *sass_of_cpp(args.out)))
    except (OSError, subprocess.CalledProcessError) as e:
        print("C++ peer not compiled:", e)
    for name, regs, sass in rows:
        total, top = opcode_histogram(sass, top=30)
        print(f"{name}: {regs} registers, {total} SASS instructions")
        print("   ", " ".join(f"{op}:{n}" for op, n in top))
    print(f"sources, PTX and SASS in {args.out}")


if __name__ == "__main__":
    main()
