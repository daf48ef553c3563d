"""C1: W1 with B=1 on the CPU backend vs the cv2 CPU op chain, in one process.

The cv2 chain is timed first, before lazycv has run anything, on the cold heap of a fresh
process (each fresh 5 MB output page-faults), then on a warm heap (after one large block was
freed: the state of a long-running process), and again at the end, to show whether lazycv's
worker threads slow the user's other OpenCV work. Ratios are given against both. lazycv's time includes the
upload of the frame and the download of the three planes (what a CPU-only user pays).

    python bench/c1.py [--repeats 30]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import peers  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def lazycv_w1(frame, fuse):
    import cv2
    import lazycv
    lazycv.enable(backend="cpu", fuse=fuse)
    gpu = cv2.cuda_GpuMat()
    std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
    std.setTo(STD)

    def run():
        gpu.upload(frame)
        r = cv2.cuda.resize(gpu, (640, 640), interpolation=cv2.INTER_LINEAR)
        rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
        f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
        f = cv2.cuda.subtract(f, MEAN)
        f = cv2.cuda.divide(f, std)
        return np.stack([p.download() for p in cv2.cuda.split(f)])[None]
    return run


def warm_heap():
    """Put the process in a long-running one's state: glibc serves a large block from mmap and
    returns it to the OS on free, so each fresh 5 MB result page-faults (several ms here) —
    until a freed mmapped block raises the mmap threshold past it (glibc's dynamic threshold,
    up to 32 MB); from then on such blocks stay on the heap and are reused warm."""
    big = np.ones(24 << 20, np.uint8)
    del big


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    frame = peers.make_frames(1, seed=1)[0]
    ref = peers.reference_w1(frame[None])
    rows = []
    table = common.Table(["contestant", "median ms", "p99 ms", "vs cv2 before", "vs cv2 warm heap", "max err"])
    cv2_chain = lambda: peers.cv2_cpu_chain(frame)[None]
    before = common.time_cpu(cv2_chain, warmup=3, iters=args.repeats)
    rows.append(("cv2 chain (before lazycv)", before, peers.check(cv2_chain(), ref)))
    warm_heap()
    warm = common.time_cpu(cv2_chain, warmup=3, iters=args.repeats)
    rows.append(("cv2 chain, warm heap", warm, peers.check(cv2_chain(), ref)))
    for name, fuse in (("lazycv cpu fused", True), ("lazycv cpu eager", False)):
        fn = lazycv_w1(frame, fuse)
        err = peers.check(fn(), ref)
        rows.append((name, common.time_cpu(fn, warmup=3, iters=args.repeats), err))
    numba_fused = peers.PEERS["numba_cpu_fused"].setup(frame[None])
    rows.append(("hand-written numba fused", common.time_cpu(numba_fused, 3, args.repeats),
                 peers.check(numba_fused(), ref)))
    after = common.time_cpu(cv2_chain, warmup=3, iters=args.repeats)
    rows.append(("cv2 chain (after lazycv)", after, peers.check(cv2_chain(), ref)))
    out = {"device": common.device_info(), "rows": []}
    for name, t, err in rows:
        table.add(name, t["median_ms"], t["p99_ms"], before["median_ms"] / t["median_ms"],
                  warm["median_ms"] / t["median_ms"], err)
        out["rows"].append({"contestant": name, **t, "max_abs_err": err})
    print(table)
    print(f"wrote {common.write_json('c1.json', out)}")


if __name__ == "__main__":
    main()
