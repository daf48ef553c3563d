"""Where a StreamedLoop(graph=True) run's time goes: the host time of each yielded frame (the
first ones carry each slot's capture), and a capture's own cost on a fresh Graph.

    python bench/w5_frames.py [--frames 256] [--size 1920x1080] [--depth 3]

Prints per-frame milliseconds (the first frames, then the median and p90 of the rest) and writes
$OUT/w5_frames.json (or bench/out/).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import w5  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--depth", type=int, default=3)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    lazycv.enable()
    frames = w5.pinned_frames(args.frames, args.size)
    w5.streamed(frames[:args.depth + 2], args.depth, graph=True)      # compile and warm
    runs = []
    for _ in range(3):
        ts = [time.perf_counter()]
        for _i, _out in lazycv.StreamedLoop(frames, w5.w1_frame, depth=args.depth, graph=True):
            ts.append(time.perf_counter())
        runs.append(np.diff(ts) * 1e3)
    g = cv2.cuda_GpuMat()
    g.upload(frames[0])
    captures = []
    for _ in range(5):
        graph = lazycv.capture(w5.w1_frame)
        t0 = time.perf_counter()
        graph(g)
        lazycv.runtime.backend().synchronize()
        captures.append((time.perf_counter() - t0) * 1e3)
    print(f"StreamedLoop(graph=True) on {lazycv.backend()}: {args.frames} frames {args.size}, depth {args.depth}")
    for d in runs:
        rest = d[2 * args.depth:]
        print(f"  total {d.sum():7.2f} ms; first {2 * args.depth} frames {np.round(d[:2 * args.depth], 3).tolist()} ms; "
              f"the rest median {np.median(rest):.3f} p90 {np.percentile(rest, 90):.3f} ms")
    print(f"  a capture on a fresh Graph: {np.round(captures, 3).tolist()} ms")
    common.write_json(common.out_dir() / "w5_frames.json", {
        "backend": lazycv.backend(), "frames": args.frames, "size": args.size, "depth": args.depth,
        "frame_ms": [d.tolist() for d in runs], "capture_ms": captures})


if __name__ == "__main__":
    main()
