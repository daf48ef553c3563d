"""W7's floor: what a new process pays before lazycv runs anything, step by step, each step in
fresh processes (median of --repeats). It says how much of "first result from the disk cache"
lazycv can still remove: Python with numpy and cv2, CUDA's driver and context through
cuda-bindings, numba, numba-cuda's import and its context, then lazycv's import and enable.

    python bench/w7_floor.py [--repeats 5]

Prints a table, writes $OUT/w7_floor.json (or bench/out/w7_floor.json).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

# each step's child prints its own elapsed seconds since its first line (interpreter start-up
# is timed around the child)
STEPS = {
    "python": "pass",
    "numpy + cv2": "import numpy, cv2",
    "cuda-bindings: cuInit + primary context": (
        "from cuda.bindings import driver as cu\n"
        "cu.cuInit(0); _, dev = cu.cuDeviceGet(0); _, ctx = cu.cuDevicePrimaryCtxRetain(dev)\n"
        "cu.cuCtxSetCurrent(ctx); _, p = cu.cuMemAlloc(1 << 20); cu.cuCtxSynchronize()"),
    "numba": "import numba",
    "numba.cuda import": "from numba import cuda",
    "numba.cuda + context": "from numba import cuda; cuda.current_context(); cuda.device_array(16)",
    "numpy + cv2 + lazycv import": "import numpy, cv2, lazycv",
    "+ enable('cuda') + first upload": (
        "import numpy as np, cv2, lazycv; lazycv.enable(backend='cuda')\n"
        "g = cv2.cuda_GpuMat(); g.upload(np.zeros((8, 8), np.uint8)); g.download()"),
}

CHILD = "import time; _t0 = time.perf_counter()\n{body}\nprint(time.perf_counter() - _t0)"


def run(body):
    import time
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD.format(body=body)], capture_output=True, text=True,
                       timeout=300)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return None, wall, p.stderr.strip().splitlines()[-1:]
    return float(p.stdout.strip().splitlines()[-1]), wall, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    table = common.Table(["step (fresh process)", "in-process s", "process wall s"])
    out = {"device": common.device_info(), "steps": {}}
    for name, body in STEPS.items():
        inner, walls, err = [], [], None
        for _ in range(args.repeats):
            t, w, err = run(body)
            if t is None:
                break
            inner.append(t)
            walls.append(w)
        if err:
            table.add(name, "failed", " ".join(err)[:60])
            out["steps"][name] = {"error": err}
            continue
        out["steps"][name] = {"in_process_s": inner, "wall_s": walls}
        table.add(name, statistics.median(inner), statistics.median(walls))
    print(table)
    print(f"wrote {common.write_json('w7_floor.json', out)}")


if __name__ == "__main__":
    main()
