"""``python -m lazycv demo``: a real preprocessing pipeline written as plain cv2.cuda code, run
eager (one kernel per op, as OpenCV's CUDA module) and fused, on the GPU when one is usable and
on the CPU backend otherwise. Prints kernel counts, times and the error against CPU OpenCV."""
import argparse
import sys
import time

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def pipeline(cv2, gpu, rect, std):
    """Ordinary cv2.cuda code: crop -> resize -> BGR2RGB -> scale -> normalise -> planar CHW."""
    roi = cv2.cuda_GpuMat(gpu, rect)
    r = cv2.cuda.resize(roi, (640, 640), interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.subtract(f, MEAN)
    f = cv2.cuda.divide(f, std)
    planes = cv2.cuda.split(f)
    return [p.download() for p in planes]


def reference(cv2, frame, rect):
    x, y, w, h = rect
    r = cv2.resize(np.ascontiguousarray(frame[y:y + h, x:x + w]), (640, 640), interpolation=cv2.INTER_LINEAR)
    f = cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    f = (f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return [f[..., c] for c in range(3)]


def demo(backend=None, frames=20):
    import cv2

    import lazycv
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    rect = (240, 60, 1440, 960)
    ref = reference(cv2, frame, rect)
    rows = []
    for fuse in (False, True):
        with lazycv.enabled(backend=backend, fuse=fuse):
            gpu = cv2.cuda_GpuMat()
            gpu.upload(frame)
            std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
            std.setTo(STD)
            t0 = time.perf_counter()
            out = pipeline(cv2, gpu, rect, std)              # first call: compiles
            first = time.perf_counter() - t0
            for _ in range(3):                               # warm the buffer pool and clocks
                pipeline(cv2, gpu, rect, std)
            lazycv.reset_stats()
            t0 = time.perf_counter()
            for _ in range(frames):
                out = pipeline(cv2, gpu, rect, std)
            per_frame = (time.perf_counter() - t0) / frames
            st = lazycv.stats()
            err = max(float(np.abs(o - r).max()) for o, r in zip(out, ref))
            rows.append(("fused" if fuse else "eager", st["kernels_launched"] / frames, per_frame * 1e3,
                         first, err, lazycv.backend()))
    print(f"lazycv {lazycv.__version__} demo: 1080p BGR frame -> crop -> resize 640x640 -> RGB -> "
          f"/255 -> -mean -> /std -> planar CHW, {frames} frames, backend {rows[0][5]!r}")
    print(f"{'mode':6} {'kernels/frame':>13} {'ms/frame':>9} {'first call s':>12} {'max err vs cv2':>15}")
    for mode, k, ms, first, err, _ in rows:
        print(f"{mode:6} {k:13.1f} {ms:9.2f} {first:12.2f} {err:15.2e}")
    print(f"speed-up of fused over eager: {rows[0][2] / rows[1][2]:.2f}x (downloads included)")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m lazycv")
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("demo", help="run the demo pipeline eager and fused")
    d.add_argument("--backend", default=None, choices=["cuda", "cpu", "cuda-sim"])
    d.add_argument("--frames", type=int, default=20)
    args = ap.parse_args(argv)
    if args.cmd != "demo":
        ap.print_help()
        return 2
    demo(args.backend, args.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
