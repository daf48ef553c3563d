"""Where one ``lazycv.compose`` call of W1 spends its host time once its batch program is
captured: wall per call (back to back, synchronised at the end) and a cProfile of the calls.

    python bench/profile_compose.py [--batch 64] [--tensor] [--small]
"""
import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tensor", action="store_true")
    ap.add_argument("--small", action="store_true", help="36x48 frames: host cost only")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    import w1
    h, w = (36, 48) if args.small else (1080, 1920)
    frames = [np.random.default_rng(i).integers(0, 256, (h, w, 3), dtype=np.uint8) for i in range(args.batch)]
    run = w1.lazycv_compose_setup(frames, args.tensor)
    for _ in range(3):
        run()
    w1.sync()
    t0 = time.perf_counter()
    for _ in range(args.calls):
        run()
    host = (time.perf_counter() - t0) / args.calls
    w1.sync()
    wall = (time.perf_counter() - t0) / args.calls
    print(f"compose B={args.batch} {h}x{w} tensor={args.tensor}: host {host * 1e3:.3f} ms/call, "
          f"wall {wall * 1e3:.3f} ms/call")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        run()
    prof.disable()
    w1.sync()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
