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
import common  # noqa: E402


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
    line = common.host_phases(lambda i: calls(gpus[i % 16]), args.frames, w1.sync,
                              ["record 6 calls", "materialize", "release"])
    print(f"W2 {h}x{w} on {lazycv.backend()}: {line}")
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
    clock, n, rest = time.perf_counter, 2000, tuple(args)

    def per_launch(step):
        """µs a call of ``step`` over n calls, the GPU idle before (n launches back to back fill
        the launch queue, and a later loop would wait for an earlier one's kernels)."""
        be.synchronize()
        t0 = clock()
        for _ in range(n):
            step()
        return (clock() - t0) / n * 1e6
    write = per_launch(lambda: direct.slots.write(full))
    driver = per_launch(lambda: direct.cu_launch(direct.cufunc, grid[0], grid[1], grid[2], 32, 4, 1, 0, 0,
                                                 direct.slots.pointers, 0))
    chain = per_launch(lambda: be.launch(compiled, H, W, args))
    own = per_launch(lambda: launcher(rest)) if launcher is not None else None
    be.synchronize()
    print(f"launch pieces, us each: slots.write {write:.2f}, cuLaunchKernel {driver:.2f}, backend launch "
          f"{chain:.2f}, program launcher " + (f"{own:.2f}" if own is not None else "none") + f" ({len(full)} arguments)")


if __name__ == "__main__":
    main()
