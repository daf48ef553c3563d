"""What recording a cv2.cuda call costs the host, beside a tiny CPU cv2 call in the same run.

W1's calls a frame (the ROI view, resize, cvtColor, convertTo, subtract, divide, split: 7
calls) recorded for ``--frames`` frames before one flush, on small frames so the flush is not
what is timed; µs a call = the recording's wall time / (frames * 7), the median of
``--repeats`` runs, Python's cyclic GC on (as a user runs). Peer in the same process: a tiny
CPU ``cv2.add`` of two 8x8x3 images (issue #22: recording <= 3x that call).

    python bench/record_cost.py [--frames 64] [--repeats 30]

Prints a table, writes $OUT/record_cost.json (or bench/out/record_cost.json).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CALLS = ("GpuMat(roi)", "resize", "cvtColor", "convertTo", "subtract", "divide", "split")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    import cv2
    import lazycv
    lazycv.enable()
    mean = (0.485, 0.456, 0.406)
    host = np.random.default_rng(0).integers(0, 256, (120, 160, 3), np.uint8)
    gpu = cv2.cuda_GpuMat()
    gpu.upload(host)
    std = cv2.cuda_GpuMat(64, 64, cv2.CV_32FC3)
    std.setTo((0.229, 0.224, 0.225))
    rect = (8, 6, 96, 80)
    per_call = {name: [] for name in CALLS}
    clock = time.perf_counter

    def frame(times=None):
        t0 = clock()
        roi = cv2.cuda_GpuMat(gpu, rect)
        t1 = clock()
        r = cv2.cuda.resize(roi, (64, 64), interpolation=cv2.INTER_LINEAR)
        t2 = clock()
        rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
        t3 = clock()
        f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
        t4 = clock()
        f = cv2.cuda.subtract(f, mean)
        t5 = clock()
        f = cv2.cuda.divide(f, std)
        t6 = clock()
        planes = cv2.cuda.split(f)
        t7 = clock()
        if times is not None:
            for name, a, b in zip(CALLS, (t0, t1, t2, t3, t4, t5, t6), (t1, t2, t3, t4, t5, t6, t7)):
                times[name].append(b - a)
        return planes

    def run():
        t0 = clock()
        out = [frame() for _ in range(args.frames)]
        t = clock() - t0
        lazycv.materialize(*out[-1])
        return t
    for _ in range(3):
        run()
    loop = statistics.median(run() for _ in range(args.repeats)) / (args.frames * len(CALLS))
    for _ in range(args.repeats):                  # each call timed on its own (clock reads add ~0.1 us)
        out = [frame(per_call) for _ in range(args.frames)]
        lazycv.materialize(*out[-1])
    a = np.random.default_rng(1).integers(0, 256, (8, 8, 3), np.uint8)
    b = a.copy()
    n = 2000
    ts = []
    for _ in range(args.repeats):
        t0 = clock()
        for _ in range(n):
            cv2.add(a, b)
        ts.append((clock() - t0) / n)
    tiny = statistics.median(ts)
    rows = [("recording, W1's 7 calls a frame (loop)", loop * 1e6)]
    rows += [(f"  {name} (timed alone, median)", statistics.median(per_call[name]) * 1e6) for name in CALLS]
    rows += [("tiny CPU cv2.add (8x8x3)", tiny * 1e6)]
    print(f"lazycv {lazycv.__version__} on {lazycv.backend()}, {args.frames} frames a flush, {args.repeats} repeats")
    print(f"{'':44} {'us':>8}")
    for name, us in rows:
        print(f"{name:44} {us:8.2f}")
    print(f"recording / tiny cv2 call: {loop / tiny:.2f}x (issue #22: <= 3x)")
    common.write_json("record_cost.json", {
        "backend": lazycv.backend(), "frames": args.frames, "repeats": args.repeats,
        "us_per_call": loop * 1e6, "tiny_cv2_us": tiny * 1e6, "ratio": loop / tiny,
        "per_call_us": {name: statistics.median(v) * 1e6 for name, v in per_call.items()}})


if __name__ == "__main__":
    main()
