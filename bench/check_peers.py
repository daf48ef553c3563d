"""Check every W1 peer that can run here against the cv2 reference.

Runs anywhere: CPU peers always; the CUDA C++ kernel source is also built as
host C++ (g++, one loop iteration per CUDA thread) so its indexing and
arithmetic are checked on a machine without a GPU, and compiled with nvcc
for sm_90 when nvcc exists. GPU peers run when torch/cupy see a device.

    python bench/check_peers.py [--batch B] [--time]

Exits non-zero if any peer exceeds its tolerance.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import peers  # noqa: E402

# Tolerances against the cv2 reference (see peers.py's precision note).
TOL_BITEXACT = 1e-4   # same uint8 resize result; only float rounding of the normalise step
TOL_FLOAT = 2e-2      # float bilinear vs OpenCV's rounded uint8 (max ~0.69 step * 0.0175)

_HOST_PRELUDE = r"""
#include <math.h>
struct W1Dim3 { int x, y, z; };
static W1Dim3 blockIdx, threadIdx, blockDim;
#define __global__
"""

_HOST_DRIVER = r"""
extern "C" void w1_host(const unsigned char* src, float* dst, int B, int H, int W, int OH, int OW,
                        float sx, float sy, float k0, float k1, float k2,
                        float b0, float b1, float b2, int bx, int by) {
    blockDim.x = bx; blockDim.y = by; blockDim.z = 1;
    const int gx = (OW + bx - 1) / bx, gy = (OH + by - 1) / by;
    for (int z = 0; z < B; ++z) for (int y = 0; y < gy; ++y) for (int x = 0; x < gx; ++x) {
        blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
        for (int ty = 0; ty < by; ++ty) for (int tx = 0; tx < bx; ++tx) {
            threadIdx.x = tx; threadIdx.y = ty; threadIdx.z = 0;
            w1_fused(src, dst, H, W, OH, OW, sx, sy, k0, k1, k2, b0, b1, b2);
        }
    }
}
"""


def build_host_kernel(tmp: Path, bitexact: bool):
    """Compile peers.W1_CUDA_SRC as host C++; returns fn(frames) -> (B,3,640,640) or None."""
    if shutil.which("g++") is None:
        return None
    tag = "bitexact" if bitexact else "float"
    cpp, so = tmp / f"w1_{tag}.cpp", tmp / f"w1_{tag}.so"
    cpp.write_text(_HOST_PRELUDE + peers.W1_CUDA_SRC + _HOST_DRIVER)
    cmd = ["g++", "-O2", "-shared", "-fPIC", "-Wno-unknown-pragmas", str(cpp), "-o", str(so)]
    if bitexact:
        cmd.insert(1, "-DW1_BITEXACT")
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(so))
    f32, i32 = ctypes.c_float, ctypes.c_int
    lib.w1_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [i32] * 5 + [f32] * 8 + [i32] * 2
    (k0, k1, k2), (b0, b1, b2) = peers.w1_kernel_constants()

    def run(frames):
        x = np.ascontiguousarray(frames)
        n, h, w, _ = x.shape
        out = np.full((n, 3, peers.OUT_H, peers.OUT_W), np.nan, np.float32)
        lib.w1_host(x.ctypes.data, out.ctypes.data, n, h, w, peers.OUT_H, peers.OUT_W,
                    w / peers.OUT_W, h / peers.OUT_H, k0, k1, k2, b0, b1, b2, 32, 8)
        return out
    return run


def nvcc_compiles(tmp: Path) -> str:
    """Compile the kernel to PTX for sm_90 in both variants; 'ok', 'skipped' or the error."""
    if shutil.which("nvcc") is None:
        return "skipped (no nvcc)"
    src = tmp / "w1.cu"
    src.write_text(peers.W1_CUDA_SRC)
    for extra in ([], ["-DW1_BITEXACT"]):
        r = subprocess.run(["nvcc", "-arch=sm_90", "--ptx", *extra, str(src), "-o", str(tmp / "w1.ptx")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "FAILED: " + r.stderr.strip()
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2, help="frames in the test batch")
    ap.add_argument("--time", action="store_true", help="also time each peer (small iteration counts)")
    args = ap.parse_args()

    frames = peers.make_frames(args.batch, seed=1)
    ref = peers.reference_w1(frames)
    table = common.Table(["peer", "max_abs_err", "tol", "ok", "median_ms"], float_fmt="{:.4g}")
    results, failed = [], False

    def record(name, out, tol, timing=None):
        nonlocal failed
        err = peers.check(out, ref[: out.shape[0]] if out.shape[0] != ref.shape[0] else ref)
        ok = err <= tol
        failed |= not ok
        med = timing["median_ms"] if timing else None
        table.add(name, err, tol, "yes" if ok else "NO", med)
        results.append({"peer": name, "max_abs_err": err, "tol": tol, "ok": ok, "timing": timing})

    # Self-consistency of the reference (a cv2 chain on one frame vs the batch helper).
    record("cv2_cpu_chain", peers.cv2_cpu_chain(frames[0])[None], 0.0)

    for name in ("numba_cpu_fused", "numba_cpu_fused_float"):
        run = peers.PEERS[name].setup(frames)
        tol = TOL_BITEXACT if name == "numba_cpu_fused" else TOL_FLOAT
        timing = common.time_cpu(run, 2, 10) if args.time else None
        record(name, run(), tol, timing)

    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for bitexact in (False, True):
            host = build_host_kernel(tmp, bitexact)
            if host is not None:
                out = host(frames)
                record("cuda_src_on_host" + ("_bitexact" if bitexact else ""), out,
                       TOL_BITEXACT if bitexact else TOL_FLOAT)
        nvcc = nvcc_compiles(tmp)

    for name in ("torch_eager", "torch_compiled", "cupy_rawkernel", "cupy_rawkernel_bitexact"):
        try:
            run = peers.PEERS[name].setup(frames)
            out = run()
        except Exception as e:  # no torch/cupy/GPU here: report, don't fail
            table.add(name, None, None, f"skipped ({type(e).__name__})", None)
            continue
        timing = common.time_gpu(run, 3, 20) if args.time else None
        record(name, out, TOL_BITEXACT if name.endswith("bitexact") else TOL_FLOAT, timing)

    table.print()
    print(f"nvcc sm_90 PTX build of W1_CUDA_SRC: {nvcc}")
    path = common.write_json("check_peers.json", {"device": common.device_info(), "batch": args.batch,
                                                  "nvcc": nvcc, "results": results})
    print(f"wrote {path}")
    failed |= nvcc.startswith("FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
