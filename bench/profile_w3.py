"""Where W3's host time goes on the active backend: the loop's 350 calls over 50 crops of a 4K
frame (recording), the flush (materialize) and the release, each timed per frame over a run
without syncs, the recipe look-ups by kind (_hotpath.recipe_hits), then a cProfile of the
flushes alone.

    python bench/profile_w3.py [--frames 300]
"""
import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    args = ap.parse_args()
    import cv2
    import lazycv
    import w1
    import w34
    lazycv.enable(fuse=True)
    frame = np.random.default_rng(0).integers(0, 256, (2160, 3840, 3), np.uint8)
    rois = w34.rois_for(50, 2160, 3840)
    g = cv2.cuda_GpuMat()
    g.upload(frame)

    def calls():
        return [p for o in w34.w3_calls(g, rois) for p in o]

    for _ in range(30):
        lazycv.materialize(*calls())
    w1.sync()
    hot = lazycv.recipes._hotpath
    hits = hot.recipe_hits() if hot is not None else None
    n = args.frames
    line = common.host_phases(lambda i: calls(), n, w1.sync, ["record 350 calls", "materialize", "release"], "ms")
    print(f"W3 on {lazycv.backend()}: {line}")
    if hits is not None:
        now = hot.recipe_hits()
        print("recipes a frame: " + ", ".join(f"{k} {(now[k] - hits[k]) / n:.1f}" for k in now))
    prof = cProfile.Profile()
    for _ in range(100):
        planes = calls()
        prof.enable()
        lazycv.materialize(*planes)
        prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
