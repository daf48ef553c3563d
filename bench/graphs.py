"""Graph replay vs launching: one iteration of G fused groups (G kernels: a chain of bilinear
resizes, each cut from the next), per-iteration latency p50/p99 for

* ``record``: the cv2.cuda calls recorded and flushed every iteration (lazycv's usual path, with
  its plan cache and flush programs);
* ``tape``: the iteration captured once (lazycv.capture) and replayed launch by launch (N
  launches, nothing recorded or planned);
* ``graph``: the same capture as one CUDA Graph, replayed with one cuGraphLaunch (CUDA only).

Each sample is one iteration from an idle device to its result (synchronised), host included.

    python bench/graphs.py [--groups 1,4,16,64] [--iters 200] [--size 64]

Runs on every backend (printed beside the numbers). Writes $OUT/graphs.json (or bench/out/graphs.json).
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


def chain(groups, size):
    import cv2

    def iteration(x):
        for i in range(groups):
            s = size - 1 - (i % 2)                # alternate sizes: every resize is a kernel
            x = cv2.cuda.resize(x, (s, s), interpolation=cv2.INTER_LINEAR)
        return x
    return iteration


def latency(step, iters):
    for _ in range(10):
        step()
    sync()
    ms = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    return common.summarize(ms)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="1,4,16,64")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    from lazycv import graphs
    lazycv.enable()
    backend = lazycv.backend()
    g = cv2.cuda_GpuMat()
    g.upload(np.random.default_rng(0).integers(0, 256, (args.size, args.size, 3), dtype=np.uint8))
    rows = []
    print(f"graph replay on {backend}: G fused groups per iteration ({args.size}x{args.size} 8UC3), "
          f"ms per iteration, synchronised")
    print(f"{'G':>4} {'mode':>7} {'p50':>8} {'p99':>8} {'launches':>9}")
    for groups in [int(v) for v in args.groups.split(",")]:
        fn = chain(groups, args.size)
        modes = {"record": lambda: lazycv.materialize(fn(g))}
        for name, native in (("tape", False), ("graph", True)):
            if native and backend != "cuda":
                continue
            graphs.NATIVE = native
            captured = lazycv.capture(fn)
            captured(g)
            tape = next(iter(captured.tapes.values()))
            if native and tape.native is None:
                print(f"{groups:4d} {name:>7}  (the capture failed: replayed launch by launch)")
            modes[name] = lambda captured=captured: captured(g)
        graphs.NATIVE = True
        for name, step in modes.items():
            before = lazycv.stats()["kernels_launched"]
            step()
            sync()
            launches = lazycv.stats()["kernels_launched"] - before
            r = latency(step, args.iters)
            print(f"{groups:4d} {name:>7} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {launches:9d}")
            rows.append(dict(groups=groups, mode=name, launches=launches, **r))
    common.write_json(common.out_dir() / "graphs.json", {"backend": backend, "size": args.size, "rows": rows})


if __name__ == "__main__":
    main()
