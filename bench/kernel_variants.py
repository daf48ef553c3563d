"""W1's generated CUDA kernels under code-generation variants, side by side in one process:
pixels per thread along x and how a thread walks them (a loop, unrolled, or interleaved: every
pixel's loads before any store), and the block shape (bench/RESULTS.md runs 29, 36-38 also
measured register caps, reads through the read-only path, streaming stores and several rows a
thread: none paid).
Each variant regenerates and recompiles two kernels — W1 as a loop of cv2.cuda calls (divides
by a std image) and W1 through lazycv.compose (std as scalars) — checks each batch against CPU
OpenCV and times the captured launch back to back (device time).

    python bench/kernel_variants.py [--batch 64] [--repeats 20]

Prints a table, writes $OUT/kernel_variants_b<batch>.json.
"""
import argparse
import sys

import numpy as np
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import peers  # noqa: E402

VARIANTS = [  # (pixels per thread, pixel order, block)
    (2, "interleaved", (32, 4, 1)),
    (8, "loop", (32, 4, 1)),
    (4, "loop", (32, 4, 1)),            # the default since run 24 (last: two more rows)
]


def measure(run, result, ref, batch, repeats):
    import w1
    err = peers.check(result(run()), ref)
    ms, _ = w1.kernel_only(run, repeats)
    return ms, common.effective_bandwidth(common.w1_bytes(batch), ms) / 1e3, err


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
    table = common.Table(["px/thread", "order", "block", "loop kernel ms", "TB/s",
                          "compose kernel ms", "TB/s", "max err"])
    rows_out = []

    def fresh():
        runtime.STATE.caches.clear()
        runtime.STATE.plans = PlanCache()
        be._direct.clear()

    for px, order, block in VARIANTS:
        cuda_backend.PIXELS_PER_THREAD, cuda_backend.BLOCK, cuda_backend.PIXEL_ORDER = px, block, order
        try:
            fresh()
            loop_ms, loop_tbs, err1 = measure(w1.lazycv_setup(frames, True), w1.lazycv_result, ref,
                                              args.batch, args.repeats)
            fresh()
            comp_ms, comp_tbs, err2 = measure(w1.lazycv_compose_setup(frames, True), w1.tensor_result, ref,
                                              args.batch, args.repeats)
        except Exception as e:                 # a variant this toolchain cannot build: say so, go on
            print(f"[kernel_variants] {px} {order}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        rows_out.append(dict(px=px, order=order,
                         block=list(block), loop_kernel_ms=loop_ms, loop_tb_s=loop_tbs, compose_kernel_ms=comp_ms,
                         compose_tb_s=comp_tbs, max_err=max(err1, err2)))
        table.add(px, order, "x".join(map(str, block[:2])), loop_ms, f"{loop_tbs:.2f}",
                  comp_ms, f"{comp_tbs:.2f}", f"{max(err1, err2):.2g}")
    # the default (last) variant's loop kernel two more ways: the frames as regions of one tall image
    # (no per-item choice of source array), and multiplying by 1/std where W1 divides (the C++
    # peers' arithmetic; within 1e-5 relative of OpenCV's division): what each costs
    import cv2
    tall = cv2.cuda_GpuMat()
    tall.upload(np.concatenate(list(frames)))
    h = frames.shape[1]
    views = [cv2.cuda_GpuMat(tall, (0, i * h, frames.shape[2], h)) for i in range(len(frames))]
    orig = w1.upload_all
    w1.upload_all = lambda _frames: views
    try:
        one = w1.lazycv_setup(frames, True)
    finally:
        w1.upload_all = orig
    for label, run in (("one buffer", one), ("x 1/std", w1.lazycv_setup(frames, True, by_reciprocal=True))):
        ms, tbs, err = measure(run, w1.lazycv_result, ref, args.batch, args.repeats)
        rows_out.append(dict(px=px, order=order,
                         block=list(block), loop_kernel_ms=ms, loop_tb_s=tbs, max_err=err, source=label))
        table.add(px, f"{order} {label}", "x".join(map(str, block[:2])), ms, f"{tbs:.2f}",
                  "", "", f"{err:.2g}")
    print(table.render())
    common.write_json(common.out_dir() / f"kernel_variants_b{args.batch}.json",
                      {"device": common.device_info(), "batch": args.batch, "rows": rows_out})


if __name__ == "__main__":
    main()
