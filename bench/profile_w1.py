"""Where W1-loop's host time goes on the active backend: per-stage wall time of one batch
(recording, then the flush split into plan-cache lookup, launch and result binding) and a
cProfile of a few batches, top functions by internal time.

    python bench/profile_w1.py [--batch 64] [--small]   (--small: 36x48 frames, host cost only)
"""
import argparse
import cProfile
import functools
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--detail", action="store_true", help="time the flush's inner steps too")
    args = ap.parse_args()
    import lazycv
    from lazycv import plancache, runtime
    import w1
    h, w = (36, 48) if args.small else (1080, 1920)
    frames = [np.random.default_rng(i).integers(0, 256, (h, w, 3), dtype=np.uint8) for i in range(args.batch)]
    run = w1.lazycv_setup(frames, True)
    record_only = run.record
    stages, counts = {}, {}

    def timed(mod, name):
        f = getattr(mod, name)

        @functools.wraps(f)
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                stages[name] = stages.get(name, 0.0) + time.perf_counter() - t0
                counts[name] = counts.get(name, 0) + 1
        setattr(mod, name, wrapper)
    from lazycv import program
    for mod, name in [(runtime, "Graph"), (plancache, "_thaw"), (runtime, "_launch_batch"),
                      (runtime, "_finish_kernel"), (runtime, "execute"),
                      (program.FlushProgram, "run"), (program.SingleFlushProgram, "run")]:
        timed(mod, name)
    be = lazycv.runtime.STATE.backend
    timed(type(be), "launch_batched")
    if args.detail:
        from lazycv import codegen
        from lazycv.facade.gpumat import GpuMat
        for mod, name in [(runtime, "flush"), (runtime, "live_pending"), (plancache.PlanCache, "replay"),
                          (runtime, "_launch_single"),
                          (runtime, "_launch"), (runtime, "_output_region"), (runtime, "gather_args"),
                          (runtime, "_bind_kind"), (codegen.KernelCache, "get"),
                          (codegen.KernelCache, "get_batched"), (type(be), "alloc"), (type(be), "alloc_batch"),
                          (type(be), "_launch"), (type(be), "launch"), (GpuMat, "_bind_result"),
                          (lazycv, "materialize")]:
            if hasattr(mod, name):
                timed(mod, name)
    for _ in range(3):
        run()
    w1.sync()
    stages.clear()
    counts.clear()
    rec, tot = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        outs = record_only()
        t1 = time.perf_counter()
        lazycv.materialize(*[p for planes in outs for p in planes])
        w1.sync()
        t2 = time.perf_counter()
        rec.append(t1 - t0)
        tot.append(t2 - t0)
    timed_stages, timed_counts = dict(stages), dict(counts)    # those batches only
    # what else runs during those batches: buffer-pool misses (new device allocations) and
    # Python's cyclic garbage collector
    import gc
    pool = be.buffers
    misses = [0]
    new = pool._new

    def counting_new(shape, dtype):
        misses[0] += 1
        return new(shape, dtype)
    pool._new = counting_new
    gc_time, gc_t0 = [0.0, 0], [0.0]

    def on_gc(phase, info):
        if phase == "start":
            gc_t0[0] = time.perf_counter()
        else:
            gc_time[0] += time.perf_counter() - gc_t0[0]
            gc_time[1] += info["generation"] == 2
    gc.callbacks.append(on_gc)
    per = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        run()
        w1.sync()
        per.append((time.perf_counter() - t0) * 1e3)
    gc.callbacks.remove(on_gc)
    pool._new = new
    print(f"{args.repeats} more batches: ms {sorted(round(p, 2) for p in per)}; pool misses {misses[0]}; "
          f"gc {gc_time[0] * 1e3:.1f} ms in all ({gc_time[1]} full collections)")
    calls = 6 * args.batch
    print(f"W1-loop B={args.batch} {h}x{w} on {lazycv.backend()}: batch {np.median(tot) * 1e3:.3f} ms, "
          f"recording {np.median(rec) * 1e3:.3f} ms ({np.median(rec) * 1e6 / calls:.2f} us/call)")
    # (means over the batches: one slow batch — a pool miss, a collection — shows here and
    # not in the medians above)
    for k, v in sorted(timed_stages.items(), key=lambda kv: -kv[1]):
        n = timed_counts[k]
        print(f"  {k:16s} {v / args.repeats * 1e3:8.3f} ms/batch  {n / args.repeats:6.0f} calls  "
              f"{v / n * 1e6:8.1f} us/call")
    cProfile.runctx("for _ in range(5): run()", globals(), locals(), "/tmp/w1.prof")
    pstats.Stats("/tmp/w1.prof").sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
