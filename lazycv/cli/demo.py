"""``lazycv demo``: a real preprocessing pipeline written as plain cv2.cuda code, run eager (one
kernel per op, as OpenCV's CUDA module) and fused, on the GPU when one is usable and on the CPU
backend otherwise. Prints kernel counts, times and the error against CPU OpenCV."""
import time

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

# (frame rows, cols), crop rectangle, output side: the real size, and a tiny one for the
# simulator (it runs each GPU thread as Python, ~0.3 ms a thread: 1080p would take an hour)
FULL = ((1080, 1920), (240, 60, 1440, 960), 640)
TINY = ((60, 80), (8, 6, 48, 40), 16)


def pipeline(cv2, gpu, rect, std, side=640):
    """Ordinary cv2.cuda code: crop -> resize -> BGR2RGB -> scale -> normalise -> planar CHW."""
    roi = cv2.cuda_GpuMat(gpu, rect)
    r = cv2.cuda.resize(roi, (side, side), interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.subtract(f, MEAN)
    f = cv2.cuda.divide(f, std)
    planes = cv2.cuda.split(f)
    return [p.download() for p in planes]


def reference(cv2, frame, rect, side=640):
    x, y, w, h = rect
    r = cv2.resize(np.ascontiguousarray(frame[y:y + h, x:x + w]), (side, side), interpolation=cv2.INTER_LINEAR)
    f = cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    f = (f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return [f[..., c] for c in range(3)]


def demo(backend=None, frames=20, tiny=False):
    import cv2

    import lazycv
    (rows, cols), rect, side = TINY if tiny else FULL
    frame = np.random.default_rng(0).integers(0, 256, (rows, cols, 3), dtype=np.uint8)
    ref = reference(cv2, frame, rect, side)
    results = []
    for fuse in (False, True):
        with lazycv.enabled(backend=backend, fuse=fuse):
            gpu = cv2.cuda_GpuMat()
            gpu.upload(frame)
            std = cv2.cuda_GpuMat(side, side, cv2.CV_32FC3)
            std.setTo(STD)
            t0 = time.perf_counter()
            out = pipeline(cv2, gpu, rect, std, side)          # first call: compiles
            first = time.perf_counter() - t0
            for _ in range(0 if tiny else 3):                  # warm the buffer pool and clocks
                pipeline(cv2, gpu, rect, std, side)
            lazycv.reset_stats()
            t0 = time.perf_counter()
            for _ in range(frames):
                out = pipeline(cv2, gpu, rect, std, side)
            per_frame = (time.perf_counter() - t0) / frames
            st = lazycv.stats()
            err = max(float(np.abs(o - r).max()) for o, r in zip(out, ref))
            results.append(("fused" if fuse else "eager", st["kernels_launched"] / frames, per_frame * 1e3,
                            first, err, lazycv.backend()))
    print(f"lazycv {lazycv.__version__} demo: {cols}x{rows} BGR frame -> crop -> resize {side}x{side} -> RGB -> "
          f"/255 -> -mean -> /std -> planar CHW, {frames} frame(s), backend {results[0][5]!r}")
    print(f"{'mode':6} {'kernels/frame':>13} {'ms/frame':>9} {'first call s':>12} {'max err vs cv2':>15}")
    for mode, k, ms, first, err, _ in results:
        print(f"{mode:6} {k:13.1f} {ms:9.2f} {first:12.2f} {err:15.2e}")
    print(f"speed-up of fused over eager: {results[0][2] / results[1][2]:.2f}x (downloads included)")
    return results


def _run(args):
    from . import prepare_backend
    backend = prepare_backend(args.backend)
    tiny = backend == "cuda-sim" or args.tiny
    frames = args.frames if args.frames is not None else (2 if tiny else 20)
    demo(backend, frames, tiny)


def add_commands(sub):
    from . import BACKENDS, positive_int
    d = sub.add_parser("demo", help="run a preprocessing pipeline eager and fused, checked against CPU OpenCV")
    d.add_argument("--backend", default=None, choices=BACKENDS,
                   help="default: cuda when a GPU is usable, else cpu (cuda-sim runs tiny frames)")
    d.add_argument("--frames", type=positive_int, default=None,
                   help="timed frames per mode (default 20; 2 with tiny frames)")
    d.add_argument("--tiny", action="store_true", help="80x60 frames instead of 1080p")
    d.set_defaults(run=_run)
