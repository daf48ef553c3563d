"""Soak: many W1 frames as six cv2.cuda calls each, then frames of changing sizes, watching the
process's memory — the device's used memory on CUDA, the resident set on the CPU backend —
and the pools' idle bytes. Memory must be flat once the pools are warm (issue #20).

    python bench/soak.py [--frames 100000] [--sizes 400] [--json soak.json]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from lazycv.cli.bench import STD, w1_calls


def used_bytes():
    """Memory this process uses on its device: the device's used memory on CUDA (the only
    client on the device machine), the resident set elsewhere."""
    import lazycv
    from lazycv import runtime
    if lazycv.backend() == "cuda":
        free, total = runtime.memory_info()
        return total - free
    with open("/proc/self/statm") as f:
        import os
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100000)
    ap.add_argument("--sizes", type=int, default=400, help="frames of changing sizes afterwards")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    lazycv.enable()
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (270, 480, 3), np.uint8) for _ in range(8)]
    gpus = []
    for f in frames:
        g = cv2.cuda_GpuMat()
        g.upload(f)
        gpus.append(g)
    std = cv2.cuda_GpuMat(160, 160, cv2.CV_32FC3)
    std.setTo(STD)
    samples, t0 = [], time.perf_counter()
    checkpoints = max(1, args.frames // 20)
    for i in range(args.frames):
        planes = w1_calls(cv2, gpus[i % 8], std, 160)
        if i % 64 == 63:
            planes[0].download()                 # a sync now and then, as a consumer would
        if i % checkpoints == 0 or i == args.frames - 1:
            lazycv.materialize(*planes)
            samples.append((i, used_bytes()))
    rate = args.frames / (time.perf_counter() - t0)
    warm = [b for i, b in samples if i >= args.frames // 10]
    sizes = []
    for j in range(args.sizes):
        h, w = int(rng.integers(16, 600)), int(rng.integers(16, 600))
        g = cv2.cuda_GpuMat()
        g.upload(rng.integers(0, 256, (h, w, 3), np.uint8))
        out = int(rng.integers(8, 200))
        s = cv2.cuda_GpuMat(out, out, cv2.CV_32FC3)
        s.setTo(STD)
        for p in w1_calls(cv2, g, s, out):
            p.download()
        if j % max(1, args.sizes // 10) == 0 or j == args.sizes - 1:
            sizes.append((j, used_bytes()))
    st = lazycv.stats()
    res = {"backend": lazycv.backend(), "frames": args.frames, "frames_per_s": rate,
           "memory_after_warmup_mb": [round(b / 2 ** 20, 1) for b in warm],
           "growth_after_warmup_mb": round((max(warm) - min(warm)) / 2 ** 20, 2),
           "changing_sizes_mb": [(j, round(b / 2 ** 20, 1)) for j, b in sizes],
           "compiles": st["compiles"], "kernels_launched": st["kernels_launched"]}
    print(f"backend {res['backend']}: {args.frames} W1 frames (six calls each) at {rate:.0f} frames/s; "
          f"memory after warm-up {min(warm) / 2 ** 20:.1f}-{max(warm) / 2 ** 20:.1f} MB "
          f"(growth {res['growth_after_warmup_mb']} MB)")
    print(f"then {args.sizes} frames of random sizes: memory {[m for _, m in res['changing_sizes_mb']]} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
