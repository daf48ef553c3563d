"""Where W2's per-frame host time goes on the active backend: the six calls' recording, the
flush (materialize) and the release of the frame's results, each timed per frame over a run
without syncs (as bench/w2.py runs), then the launch path's pieces on their own (the parameter
slots written, the driver call), then a cProfile of a few hundred frames.

    python bench/profile_w2.py [--frames 2000] [--small]   (--small: 108x192 frames, 64x64 out)
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
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    import cv2
    import lazycv
    import w1
    lazycv.enable(fuse=True)
    h, w, out = (108, 192, 64) if args.small else (1080, 1920, 640)
    frames = [np.random.default_rng(i).integers(0, 256, (h, w, 3), np.uint8) for i in range(16)]
    gpus = w1.upload_all(frames)
    std = cv2.cuda_GpuMat(out, out, cv2.CV_32FC3)
    std.setTo(w1.STD)
    clock = time.perf_counter

    def calls(g):
        r = cv2.cuda.resize(g, (out, out), interpolation=cv2.INTER_LINEAR)
        rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
        f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
        f = cv2.cuda.subtract(f, w1.MEAN)
        f = cv2.cuda.divide(f, std)
        return cv2.cuda.split(f)

    for i in range(100):
        lazycv.materialize(*calls(gpus[i % 16]))
    w1.sync()
    n = args.frames
    t = np.zeros((n, 3))
    t_all = clock()
    for i in range(n):
        t0 = clock()
        planes = calls(gpus[i % 16])
        t1 = clock()
        lazycv.materialize(*planes)
        t2 = clock()
        del planes
        t[i] = (t1 - t0, t2 - t1, clock() - t2)
    w1.sync()
    wall = (clock() - t_all) / n * 1e6
    t *= 1e6
    print(f"W2 {h}x{w} on {lazycv.backend()}: {wall:.1f} us/frame wall; per frame p50 (p99) us: "
          + ", ".join(f"{k} {np.percentile(t[:, j], 50):.1f} ({np.percentile(t[:, j], 99):.1f})"
                      for j, k in enumerate(["record 6 calls", "materialize", "release"])))
    _launch_pieces(lazycv, calls, gpus)
    cProfile.runctx("for i in range(500): lazycv.materialize(*calls(gpus[i % 16]))", globals(),
                    {"lazycv": lazycv, "calls": calls, "gpus": gpus}, "/tmp/w2.prof")
    stats = pstats.Stats("/tmp/w2.prof")
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumtime").print_stats(30)


def _launch_pieces(lazycv, calls, gpus):
    """The CUDA launch of one frame's kernel, piece by piece (the driver path only): the slots
    written in Python, the driver call through cuda.bindings, the backend's Python launch chain,
    and the program's C launcher (Backend.launcher) that a replayed frame uses."""
    be = lazycv.runtime.STATE.backend
    if not hasattr(be, "_direct"):
        return
    got = {}

    def spy(compiled, H, W, args, stream=None):      # (on the instance: the frame takes be.launch)
        got["a"] = (compiled, H, W, args)
        return type(be).launch(be, compiled, H, W, args, stream)
    be.launch = spy
    lazycv.materialize(*calls(gpus[0]))
    del be.launch
    compiled, H, W, args = got["a"]
    direct = be._direct.get(compiled.fn)
    if direct is None or direct.mode != "driver":
        print("launch pieces: no driver launch for this kernel")
        return
    from lazycv.backends.cuda import _grid
    grid, full = _grid(H, W), (H, W) + tuple(args)
    launcher = be.launcher(compiled, H, W)
    clock, n = time.perf_counter, 2000
    t0 = clock()
    for _ in range(n):
        direct.slots.write(full)
    t1 = clock()
    for _ in range(n):
        direct.cu_launch(direct.cufunc, grid[0], grid[1], grid[2], 32, 4, 1, 0, 0, direct.slots.pointers, 0)
    t2 = clock()
    for _ in range(n):
        be.launch(compiled, H, W, args)
    t3 = clock()
    for _ in range(n if launcher is not None else 0):
        launcher(tuple(args))
    t4 = clock()
    be.synchronize()
    print(f"launch pieces, us each: slots.write {(t1 - t0) / n * 1e6:.2f}, cuLaunchKernel "
          f"{(t2 - t1) / n * 1e6:.2f}, backend launch {(t3 - t2) / n * 1e6:.2f}, program launcher "
          + (f"{(t4 - t3) / n * 1e6:.2f}" if launcher is not None else "none") + f" ({len(full)} arguments)")


if __name__ == "__main__":
    main()
