"""W1's generated CUDA kernel under code-generation variants, side by side in one process:
pixels per thread along x, index spelling (signed / unsigned) and block shape. Each variant
regenerates and recompiles the kernel, checks the batch against CPU OpenCV and times the
captured launch back to back (device time of the kernel, host launch cost included once).

    python bench/kernel_variants.py [--batch 64] [--repeats 20]

Prints a table, writes $OUT/kernel_variants.json.
"""
import argparse
import sys

import numpy as np
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import peers  # noqa: E402

VARIANTS = [  # (pixels per thread, index spelling, block)
    (1, "{}", (32, 8, 1)),              # the generator before run 17
    (2, "np.uint64({})", (32, 4, 1)),   # the default in runs 17-24
    (4, "np.uint64({})", (32, 4, 1)),   # the default since run 24 (last: also from one buffer)
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    import lazycv
    from lazycv import runtime
    from lazycv.backends import cuda as cuda_backend
    from lazycv.plancache import PlanCache
    import w1
    frames = peers.make_frames(args.batch, seed=args.batch)
    ref = peers.reference_w1(frames)
    lazycv.enable(backend="cuda")
    be = runtime.STATE.backend
    table = common.Table(["px/thread", "index", "block", "kernel ms", "TB/s", "max err"])
    rows = []
    for px, index, block in VARIANTS:
        cuda_backend.PIXELS_PER_THREAD, cuda_backend.BLOCK = px, block
        be.spellings["index"] = index
        runtime.STATE.caches.clear()
        runtime.STATE.plans = PlanCache()
        be._direct.clear()
        run = w1.lazycv_setup(frames, True)
        err = peers.check(w1.lazycv_result(run()), ref)
        ms, n = w1.kernel_only(run, args.repeats)
        tbs = common.effective_bandwidth(common.w1_bytes(args.batch), ms) / 1e3
        row = dict(px=px, index=index, block=list(block), kernel_ms=ms, tb_s=tbs, max_err=err, launches=n)
        rows.append(row)
        table.add(px, index, "x".join(map(str, block[:2])), ms, f"{tbs:.2f}", f"{err:.2g}")
    # the same batch read from one buffer (the frames as regions of one tall image): no
    # per-item choice of source array in the kernel
    import cv2
    tall = cv2.cuda_GpuMat()
    tall.upload(np.concatenate(list(frames)))
    h = frames.shape[1]
    views = [cv2.cuda_GpuMat(tall, (0, i * h, frames.shape[2], h)) for i in range(len(frames))]
    orig = w1.upload_all
    w1.upload_all = lambda _frames: views
    try:
        run = w1.lazycv_setup(frames, True)
    finally:
        w1.upload_all = orig
    err = peers.check(w1.lazycv_result(run()), ref)
    ms, n = w1.kernel_only(run, args.repeats)
    tbs = common.effective_bandwidth(common.w1_bytes(args.batch), ms) / 1e3
    rows.append(dict(px=px, index=index, block=list(block), kernel_ms=ms, tb_s=tbs, max_err=err,
                     launches=n, source="one buffer"))
    table.add(px, index + " one buffer", "x".join(map(str, block[:2])), ms, f"{tbs:.2f}", f"{err:.2g}")
    # the same kernel multiplying by 1/std where W1 divides by std (the C++ peers' arithmetic;
    # within 1e-5 relative of OpenCV's division, not bit-equal): what OpenCV's division costs
    run = w1.lazycv_setup(frames, True, by_reciprocal=True)
    err = peers.check(w1.lazycv_result(run()), ref)
    ms, n = w1.kernel_only(run, args.repeats)
    tbs = common.effective_bandwidth(common.w1_bytes(args.batch), ms) / 1e3
    rows.append(dict(px=px, index=index, block=list(block), kernel_ms=ms, tb_s=tbs, max_err=err,
                     launches=n, source="multiply by 1/std"))
    table.add(px, index + " x 1/std", "x".join(map(str, block[:2])), ms, f"{tbs:.2f}", f"{err:.2g}")
    print(table.render())
    common.write_json(common.out_dir() / "kernel_variants.json",
                      {"device": common.device_info(), "batch": args.batch, "rows": rows})


if __name__ == "__main__":
    main()
