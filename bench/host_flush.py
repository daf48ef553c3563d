"""The host's cost of recording and flushing unchanged cv2.cuda loops, with the kernels made
negligible: W1's six calls over B small frames (36x48 -> 16x16) recorded, then one flush (the
W1 loop's shape), and W2's flush of one frame with the backend's launch replaced by a no-op
(what the flush costs the host besides the launch), and W3's loop (50 ROI crops of one frame,
seven calls each, one flush), with the same boxes every frame and with new ones (a detector's). Medians over the repeats, kernels warm. ``--profile`` adds a
cProfile of each part (top functions by internal time).

    python bench/host_flush.py [--batch 64] [--repeats 40] [--profile]

Prints a table and writes $OUT/host_flush.json (or bench/out/host_flush.json).
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

MUL = (1 / 255, 1 / 255, 1 / 255)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def w1_calls(cv2, g, std, side):
    r = cv2.cuda.resize(g, (side, side), interpolation=cv2.INTER_LINEAR)
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), std))


def w3_loop(cv2, lazycv, frame, rois):
    """W3 as users write it: a crop's seven calls in a Python loop, then one flush."""
    outs = []
    for r in rois:
        c = cv2.cuda_GpuMat(frame, r)
        f = cv2.cuda.resize(c, (64, 128)).convertTo(cv2.CV_32FC3)
        f = cv2.cuda.divide(cv2.cuda.subtract(cv2.cuda.multiply(f, MUL), MEAN), STD)
        outs.append(cv2.cuda.split(f))
    lazycv.materialize(outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import cv2
    import lazycv
    from lazycv import runtime
    lazycv.enable()
    rng = np.random.default_rng(0)
    gpus = []
    for _ in range(args.batch):
        g = cv2.cuda_GpuMat()
        g.upload(rng.integers(0, 256, (36, 48, 3), np.uint8))
        gpus.append(g)
    side = 16
    std = cv2.cuda_GpuMat(side, side, cv2.CV_32FC3)
    std.setTo(STD)
    clock = time.perf_counter
    prof = cProfile.Profile() if args.profile else None
    profiles = {}

    def timed(fn, part):
        """fn() timed; under --profile also profiled into ``profiles[part]``."""
        if prof is None:
            t0 = clock()
            fn()
            return clock() - t0
        prof.enable()
        t0 = clock()
        fn()
        t = clock() - t0
        prof.disable()
        profiles.setdefault(part, []).append(prof.create_stats() or pstats.Stats(prof))
        prof.clear()
        return t

    record, flush = [], []
    for rep in range(args.repeats + 5):
        t0 = clock()
        outs = [w1_calls(cv2, g, std, side) for g in gpus]
        t1 = clock()
        lazycv.materialize(outs)
        t2 = clock()
        del outs
        if rep >= 5:
            record.append((t1 - t0) * 1e3)
            flush.append((t2 - t1) * 1e3)
    if prof is not None:
        holder = {}
        for rep in range(10):
            timed(lambda: holder.update(outs=[w1_calls(cv2, g, std, side) for g in gpus]), "W1 loop: recording")
            timed(lambda: lazycv.materialize(holder["outs"]), "W1 loop: the flush")
        del holder
    be = runtime.backend()
    launch = type(be).launch
    one = []
    try:
        type(be).launch = lambda self, *a, **k: None          # (the flush without its kernel)
        for i in range(20 * args.repeats + 50):
            planes = w1_calls(cv2, gpus[i % len(gpus)], std, side)
            t0 = clock()
            lazycv.materialize(*planes)
            if i >= 50:
                one.append((clock() - t0) * 1e6)
            del planes
        if prof is not None:
            for i in range(200):
                planes = w1_calls(cv2, gpus[i % len(gpus)], std, side)
                timed(lambda: lazycv.materialize(*planes), "W2: one frame's flush without its launch")
                del planes
    finally:
        type(be).launch = launch
    frame = cv2.cuda_GpuMat()
    frame.upload(rng.integers(0, 256, (540, 960, 3), np.uint8))
    rois = [(int(x), int(y), 32 + int(x) % 200, 64 + int(y) % 300)
            for x, y in zip(rng.integers(0, 700, 50), rng.integers(0, 200, 50))]
    w3 = []
    for rep in range(args.repeats + 5):
        t = timed(lambda: w3_loop(cv2, lazycv, frame, rois), "W3 loop") if rep >= 5 else \
            timed(lambda: w3_loop(cv2, lazycv, frame, rois), "warm-up")
        if rep >= 5:
            w3.append(t * 1e3)
    boxes = np.random.default_rng(1)
    w3_new = []
    for rep in range(args.repeats + 5):          # a detector's loop: new boxes every frame
        new_rois = [(int(x), int(y), 32 + int(boxes.integers(0, 200)), 64 + int(boxes.integers(0, 270)))
                    for x, y in zip(boxes.integers(0, 700, 50), boxes.integers(0, 200, 50))]
        t = timed(lambda: w3_loop(cv2, lazycv, frame, new_rois), "W3 loop, new boxes every frame"
                  if rep >= 5 else "warm-up")
        if rep >= 5:
            w3_new.append(t * 1e3)
    rows = {"w1_loop_record_ms": statistics.median(record), "w1_loop_flush_ms": statistics.median(flush),
            "w2_flush_without_launch_us": statistics.median(one), "w3_loop_ms": statistics.median(w3),
            "w3_loop_new_boxes_ms": statistics.median(w3_new)}
    table = common.Table(["measure", "median"])
    table.add(f"W1 loop, {args.batch} frames: recording, ms", rows["w1_loop_record_ms"])
    table.add(f"W1 loop, {args.batch} frames: the flush, ms", rows["w1_loop_flush_ms"])
    table.add("W2: one frame's flush without its launch, us", rows["w2_flush_without_launch_us"])
    table.add(f"W3 loop, {len(rois)} crops (recording and flush), ms", rows["w3_loop_ms"])
    table.add(f"W3 loop, {len(rois)} new crops every frame, ms", rows["w3_loop_new_boxes_ms"])
    for part, stats in profiles.items():
        if part == "warm-up":
            continue
        print(f"--- cProfile: {part} ({len(stats)} runs), top functions by internal time")
        merged = stats[0]
        for st in stats[1:]:
            merged.add(st)
        merged.sort_stats("tottime").print_stats(18)
    from lazycv.cli.info import info_facts
    print(f"lazycv {lazycv.__version__} on {lazycv.backend()}; recording: {info_facts()['recording']}")
    print(table)
    print(f"wrote {common.write_json('host_flush.json', {'device': common.device_info(), **rows})}")


if __name__ == "__main__":
    main()
