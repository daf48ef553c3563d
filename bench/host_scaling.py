"""How the host path of unchanged cv2.cuda code scales (issue #22's structural checks).

Three measurements, each a ratio of the same code at two sizes, on the active backend:

* record: W1's six calls per frame over N separately uploaded small frames, recorded before
  one flush; µs a frame at N = 200 and N = 2000 (linear recording: the ratio stays near 1);
* write: one upload while P results are pending (a write must not walk every pending result);
* first flush: N separately uploaded frames, one flush, in a fresh process with an empty
  kernel cache (compile included), N = 16 and N = 400 (and 5000 with --big).

    python bench/host_scaling.py [--big] [--json host_scaling.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lazycv.cli.bench import STD, w1_calls

SMALL = (24, 32)          # source frame rows, cols
OUT = 16                  # W1's square output side, scaled down


def _frames(n):
    import numpy as np
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (*SMALL, 3), np.uint8)
    return [np.roll(base, i, axis=1) for i in range(n)]


def _w1(cv2, g, std):
    return w1_calls(cv2, g, std, OUT)


def first_flush(n):
    """Seconds to upload ``n`` frames, record W1 on each and flush once (run in a fresh process)."""
    import cv2
    import lazycv
    lazycv.enable()
    frames = _frames(n)
    std = cv2.cuda_GpuMat(OUT, OUT, cv2.CV_32FC3)
    std.setTo(STD)
    t0 = time.perf_counter()
    outs = []
    for f in frames:
        g = cv2.cuda_GpuMat()
        g.upload(f)
        outs += _w1(cv2, g, std)
    lazycv.materialize(*outs)
    dt = time.perf_counter() - t0
    st = lazycv.stats()
    return {"n": n, "seconds": dt, "kernels_launched": st["kernels_launched"], "compiles": st["compiles"]}


def record_scaling(n, collect=True):
    """µs (this thread's CPU time) a frame to upload and record W1 on ``n`` frames before one
    flush, kernels warm; ``collect=False`` with Python's cyclic GC off (its full collections
    traverse every live object: a cost of CPython that grows with what is pending)."""
    import gc
    import cv2
    import lazycv
    lazycv.enable()
    frames = _frames(n)
    std = cv2.cuda_GpuMat(OUT, OUT, cv2.CV_32FC3)
    std.setTo(STD)
    best = None
    was = gc.isenabled()
    for _ in range(3):
        if not collect:
            gc.disable()
        t0 = time.thread_time()
        outs = []
        for f in frames:
            g = cv2.cuda_GpuMat()
            g.upload(f)
            outs += _w1(cv2, g, std)
        t1 = time.thread_time()
        if was:
            gc.enable()
        lazycv.materialize(*outs)
        rec = (t1 - t0) / n * 1e6
        best = rec if best is None else min(best, rec)
    return best


def write_with_pending(p, into_read=False):
    """µs for one upload into a GpuMat while ``p`` results of other frames are pending (with
    ``into_read``: into the GpuMat those results read, a frame loop's ``g.upload(frame)``)."""
    import cv2
    import lazycv
    lazycv.enable()
    frames = _frames(p)
    std = cv2.cuda_GpuMat(OUT, OUT, cv2.CV_32FC3)
    std.setTo(STD)
    outs, mats = [], []
    for f in frames:
        g = cv2.cuda_GpuMat()
        g.upload(f)
        mats.append(g)
        outs += _w1(cv2, g, std)
    if into_read:
        target = mats[0]
    else:
        target = cv2.cuda_GpuMat()
        target.upload(frames[0])
    best = None
    for _ in range(5):
        t0 = time.thread_time()          # (this thread's CPU time: other load does not count)
        reps = 100
        for _ in range(reps):
            target.upload(frames[1])
        dt = (time.thread_time() - t0) / reps * 1e6
        best = dt if best is None else min(best, dt)
    dt = best
    lazycv.materialize(*outs)
    return dt


def _in_fresh_process(fn_name, arg):
    env = dict(os.environ)
    env["LAZYCV_CACHE_DIR"] = tempfile.mkdtemp(prefix="lazycv-host-scaling-")
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import host_scaling as h; "
            f"print(json.dumps(h.{fn_name}({arg})))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also the first flush of 5000 frames")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import lazycv
    res = {"backend": None}
    r200, r2000 = record_scaling(200), record_scaling(2000)
    n200, n2000 = record_scaling(200, False), record_scaling(2000, False)
    res["backend"] = lazycv.backend()
    res["record_us_per_frame"] = {"200": r200, "2000": r2000, "ratio": r2000 / r200}
    res["record_us_per_frame_gc_off"] = {"200": n200, "2000": n2000, "ratio": n2000 / n200}
    w100, w400 = write_with_pending(100), write_with_pending(400)
    res["upload_us_with_pending"] = {"100": w100, "400": w400, "ratio": w400 / w100}
    r100, r400 = write_with_pending(100, True), write_with_pending(400, True)
    res["upload_us_into_read_memory"] = {"100": r100, "400": r400, "ratio": r400 / r100}
    sizes = [16, 400] + ([5000] if args.big else [])
    res["first_flush"] = [_in_fresh_process("first_flush", n) for n in sizes]
    ff = {r["n"]: r["seconds"] for r in res["first_flush"]}
    res["first_flush_ratio_400_16"] = ff[400] / ff[16]
    print(f"backend {res['backend']}")
    print(f"record W1 (6 calls + upload) a frame: N=200 {r200:.1f} us, N=2000 {r2000:.1f} us "
          f"(ratio {r2000 / r200:.2f}; target <= 1.5); with the cyclic GC off: {n200:.1f} / {n2000:.1f} us "
          f"(ratio {n2000 / n200:.2f})")
    print(f"one upload with pending results: P=100 {w100:.1f} us, P=400 {w400:.1f} us (ratio {w400 / w100:.2f})")
    print(f"one upload into memory pending results read: P=100 {r100:.1f} us, P=400 {r400:.1f} us "
          f"(ratio {r400 / r100:.2f})")
    for r in res["first_flush"]:
        print(f"first flush of {r['n']} separately uploaded frames: {r['seconds']:.2f} s, "
              f"{r['kernels_launched']} launches, {r['compiles']} compiles")
    print(f"first flush N=400 / N=16: {res['first_flush_ratio_400_16']:.2f} (target <= 2.5)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
