"""C1's frame on the CPU backend with its upload and downloads copied on the calling thread
alone or in bands on the worker threads (CpuBackend.MIN_BYTES_TO_SPLIT_COPY), alternated in one
process beside the warm-heap cv2 chain: whether banding the copies pays on this host.

    python bench/c1_copies.py [--rounds 3] [--repeats 30]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import c1  # noqa: E402
import common  # noqa: E402
import peers  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    from lazycv.backends.cpu import CpuBackend
    frame = peers.make_frames(1, seed=1)[0]
    ref = peers.reference_w1(frame[None])
    c1.warm_heap()
    chain = lambda: peers.cv2_cpu_chain(frame)[None]  # noqa: E731
    run = c1.lazycv_w1(frame, True)
    banded = CpuBackend.MIN_BYTES_TO_SPLIT_COPY
    table = common.Table(["round", "copies", "lazycv ms", "warm cv2 chain ms", "vs chain", "max err"])
    out = {"device": common.device_info(), "rows": []}
    for r in range(args.rounds):
        for name, limit in (("one thread", 1 << 62), ("in bands", banded)):
            CpuBackend.MIN_BYTES_TO_SPLIT_COPY = limit
            t = common.time_cpu(run, warmup=3, iters=args.repeats)["median_ms"]
            w = common.time_cpu(chain, warmup=3, iters=args.repeats)["median_ms"]
            err = peers.check(run(), ref)
            table.add(r + 1, name, t, w, w / t, err)
            out["rows"].append({"round": r + 1, "copies": name, "lazycv_ms": t, "chain_ms": w, "max_abs_err": err})
    CpuBackend.MIN_BYTES_TO_SPLIT_COPY = banded
    print(table)
    print(f"wrote {common.write_json('c1_copies.json', out)}")


if __name__ == "__main__":
    main()
