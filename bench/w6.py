"""W6: each frame's mean brightness sets the gain of frame n + k (k = 5), without a host sync
(lazycv.DelayBuffer), vs the loop that downloads the statistic every frame.

Frames are on the device already (the copies are W5's subject). Per frame: the mean (a
reduction), a gain 118 / mean, and the frame times the gain of k frames ago. Three loops:

* ``download``: ``cv2.cuda.sum`` brings the mean to the host each frame (a sync), the gain is a
  host number kept k frames in a list — what cv2.cuda code does without device scalars;
* ``delay``: the statistic stays on the device, ``DelayBuffer.push`` hands back frame n - k's;
* ``graph``: the delay loop's step captured once (lazycv.capture) and replayed per frame.

Every loop launches each frame's result (``lazycv.materialize``) and synchronises once at the
end; frames/s over the whole run. Target (BENCHMARKS.md): delay >= 3x download, on the device.

    python bench/w6.py [--frames 256] [--size 1920x1080] [--k 5] [--repeats 3]

Runs on every backend (printed beside the numbers). Writes $OUT/w6.json (or bench/out/w6.json).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from w1 import sync  # noqa: E402

TARGET = 118.0


def download_loop(frames, k):
    import cv2
    import lazycv
    n = frames[0].size()[0] * frames[0].size()[1]
    gains, outs = [1.0] * k, []
    for g in frames:
        mean = cv2.cuda.sum(g)[0] * (1.0 / n)          # downloads: the host waits for the GPU
        gains.append(TARGET / mean)
        out = cv2.cuda.multiply(g, gains[-1 - k])
        lazycv.materialize(out)
        outs = outs[-4:] + [out]
    return outs


def delay_step(delay, n):
    import cv2

    def step(g):
        mean = cv2.cuda.multiply(cv2.cuda.calcSum(g), 1.0 / n)
        return cv2.cuda.multiply(g, delay.push(cv2.cuda.divide(TARGET, mean)))
    return step


def delay_loop(frames, k, like):
    import lazycv
    n = frames[0].size()[0] * frames[0].size()[1]
    step, outs = delay_step(lazycv.DelayBuffer(k, like, initial=1.0), n), []
    for g in frames:
        out = step(g)
        lazycv.materialize(out)
        outs = outs[-4:] + [out]
    return outs


def graph_loop(frames, k, like):
    import lazycv
    n = frames[0].size()[0] * frames[0].size()[1]
    graph = lazycv.capture(delay_step(lazycv.DelayBuffer(k, like, initial=1.0), n))
    out = None
    for g in frames:
        out = graph(g)                # (the graph's output memory: each replay rewrites it)
    return [out]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    lazycv.enable()
    w, h = (int(v) for v in args.size.split("x"))
    rng = np.random.default_rng(0)
    base = rng.integers(0, 200, (h, w), dtype=np.uint8)
    frames = []
    for i in range(args.frames):
        g = cv2.cuda_GpuMat()
        g.upload(np.clip(base.astype(np.int32) + (i * 7) % 50, 0, 255).astype(np.uint8))
        frames.append(g)
    like = cv2.cuda.calcSum(frames[0])
    loops = {"download": lambda: download_loop(frames, args.k), "delay": lambda: delay_loop(frames, args.k, like),
             "graph": lambda: graph_loop(frames, args.k, like)}
    last = {name: [o.download() for o in run()] for name, run in loops.items()}    # warm; compared below
    fps = {}
    for name, run in loops.items():
        times = []
        for _ in range(args.repeats):
            sync()
            t0 = time.perf_counter()
            outs = run()
            lazycv.materialize(*outs)
            sync()
            times.append(time.perf_counter() - t0)
        fps[name] = args.frames / min(times)
    same = all(np.array_equal(a, b) for a, b in zip(last["download"], last["delay"])) and \
        np.array_equal(last["download"][-1], last["graph"][-1])
    backend = lazycv.backend()
    print(f"W6 on {backend}: {args.frames} frames {w}x{h} 8UC1, gain from the mean of frame n-{args.k}")
    for name in loops:
        print(f"  {name:9s} {fps[name]:9.1f} frames/s  ({fps[name] / fps['download']:.2f}x download)")
    print(f"  delay and graph loops == download loop (last frames): {same}")
    common.write_json(common.out_dir() / "w6.json", {
        "backend": backend, "frames": args.frames, "size": [w, h], "k": args.k, "fps": fps,
        "delay_equals_download": same, "stats": lazycv.stats()})


if __name__ == "__main__":
    main()
