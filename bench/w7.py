"""W7: compile and cache. Cold compile of a first and a second new pipeline in one process,
a new process's time to first result from the disk cache, and recompiles when only sizes,
ROIs or scalars change. Each phase runs in a fresh process with its own kernel cache folder.

    python bench/w7.py [--backend cpu|cuda] [--profile]   (--profile: where a new process's
                                                        time goes, disk cache warm)

Prints a table, writes $OUT/w7.json (or bench/out/w7.json).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np, cv2, lazycv
lazycv.enable(backend=sys.argv[1])
t_import = time.perf_counter()
rng = np.random.default_rng(0)
frame = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
g = cv2.cuda_GpuMat(); g.upload(frame)

def w1(src, out, mean):
    r = cv2.cuda.resize(src, out)
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return [p.download() for p in cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, mean), (0.229, 0.224, 0.225)))]

def other(src):
    return cv2.cuda.cvtColor(cv2.cuda.resize(src, (320, 180), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGR2GRAY).download()

t1 = time.perf_counter(); w1(g, (640, 640), (0.485, 0.456, 0.406)); t2 = time.perf_counter()
other(g); t3 = time.perf_counter()
c0 = lazycv.stats()["compiles"]
w1(cv2.cuda_GpuMat(g, (10, 20, 700, 500)), (300, 200), (0.1, 0.2, 0.3))
w1(g, (17, 9), (0.5, 0.5, 0.5))
print(json.dumps({"import_s": t_import - t0, "first_pipeline_s": t2 - t1, "second_pipeline_s": t3 - t2,
                  "first_result_since_start_s": t2 - t0,
                  "recompiles_on_size_roi_scalar_change": lazycv.stats()["compiles"] - c0}))
'''


def run_child(backend, cache_dir, profile=False):
    env = dict(os.environ, LAZYCV_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-c", CHILD, backend]
    if profile:          # cumulative-time profile of the whole child, printed before its JSON line
        code = ("import cProfile, pstats, sys; sys.argv = ['-c', %r]; pr = cProfile.Profile(); pr.enable()\n"
                "try:\n    exec(compile(%r, 'w7-child', 'exec'))\nfinally:\n    pr.disable(); "
                "pstats.Stats(pr, stream=sys.stderr).sort_stats('cumtime').print_stats(45)" % (backend, CHILD))
        cmd = [sys.executable, "-c", code]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if profile:
        print(p.stderr[-12000:])
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        cold = run_child(args.backend, cache)
        warm = run_child(args.backend, cache, args.profile)
    table = common.Table(["phase", "import s", "first pipeline s", "second pipeline s",
                          "first result since start s", "recompiles"])
    for name, r in (("cold (empty cache)", cold), ("new process, disk cache", warm)):
        table.add(name, r["import_s"], r["first_pipeline_s"], r["second_pipeline_s"],
                  r["first_result_since_start_s"], r["recompiles_on_size_roi_scalar_change"])
    print(table)
    out = {"device": common.device_info(), "backend": args.backend, "cold": cold, "warm": warm}
    print(f"wrote {common.write_json('w7.json', out)}")


if __name__ == "__main__":
    main()
