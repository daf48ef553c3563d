"""Is W3 slow in some processes, and why? Runs W3 (w34's loop of 50 crops, lazycv fused) in
many fresh processes, alternating the lazycv trees given, and prints per process: the W3 median
and min (ms, ``w1.wall_time``: 5 frames + a sync a sample), the frame split into recording and
materialize (p50), a fixed pure-Python workload's time (is the whole process slow, or lazycv?),
the CPUs the process ran on, its thread count and the cyclic GC's collections.
``--eager`` also times the loop op by op (fuse=False) in the same process, after the fused
loop: the ratio of the two in one process's state. ``--stub-launch`` (CPU backend): the batched launch does nothing after the warm-up, so the host's
work is timed alone (the CPU kernel would otherwise be most of a frame); results are then wrong.

    python bench/w3_spread.py --trees .snap_old,.snap --procs 8 [--torch]
    LAZYCV_BACKEND=cpu python bench/w3_spread.py --trees old_tree,. --stub-launch
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cpu_now():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def _python_work():
    """A fixed pure-Python workload (tuples, dicts, calls): its time says how fast this
    process's core runs plain Python."""
    t0 = time.perf_counter()
    d = {}
    for i in range(20000):
        d[i & 255] = (i, i + 1, str(i & 7))
    return (time.perf_counter() - t0) * 1e3


def child(repeats, with_torch, stub_launch, with_eager=False):
    import gc
    import numpy as np
    if with_torch:
        import torch  # noqa: F401 - the peers' import, as w34.py has it
    sys.path.insert(0, str(HERE))
    import common
    import w1
    import w34
    frame, rois = w34.w3_inputs()
    import cv2
    import lazycv
    lazycv.enable(fuse=True)
    g = cv2.cuda_GpuMat()
    g.upload(frame)

    def calls(i=0):
        return [p for o in w34.w3_calls(g, rois) for p in o]

    def fn():
        lazycv.materialize(*calls())
    cpus, py_ms = set(), []
    counts = [0, 0, 0]

    def on_gc(phase, info):
        if phase == "start":
            counts[info["generation"]] += 1
    gc.callbacks.append(on_gc)
    for _ in range(50):
        fn()
    if stub_launch:
        from lazycv.backends import cpu
        cpu.CpuBackend.launch_batched = lambda self, *a, **k: None
        for _ in range(20):
            fn()
    w1.sync()
    samples = []
    for _ in range(repeats):
        cpus.add(_cpu_now())
        py_ms.append(_python_work())
        samples.append(w1.wall_time(fn, 1, 5, warm_s=0.0)["median_ms"])
    cpus.add(_cpu_now())
    phases = common.host_phases(calls, 200, w1.sync, ["record", "materialize", "release"], "ms")
    eager = None
    if with_eager:                                       # the same loop op by op, this process
        lazycv.enable(fuse=False)
        for _ in range(3):
            fn()
        w1.sync()
        eager = float(np.median([w1.wall_time(fn, 1, 2, warm_s=0.0)["median_ms"] for _ in range(5)]))
    hot = getattr(lazycv.recipes._hotpath, "recipe_hits", None)   # (a tree before stop 30 has none)
    print(json.dumps({"median_ms": float(np.median(samples)), "min_ms": float(np.min(samples)),
                      "max_ms": float(np.max(samples)), "python_ms": float(np.median(py_ms)),
                      "cpus": sorted(cpus), "threads": len(os.listdir("/proc/self/task")),
                      "gc": counts, "phases": phases,
                      "recipe_hits": hot() if hot is not None else None, "eager_ms": eager,
                      "affinity": len(os.sched_getaffinity(0))}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", default=".")
    ap.add_argument("--procs", type=int, default=6, help="processes per tree")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--torch", action="store_true", help="import torch in each process, as w34.py does")
    ap.add_argument("--stub-launch", action="store_true", help="CPU backend: time the host's work alone")
    ap.add_argument("--eager", action="store_true", help="also the loop op by op (fuse=False) in each process")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.repeats, args.torch, args.stub_launch, args.eager)
    trees = args.trees.split(",")
    rows = []
    print(f"{'tree':12} {'median':>7} {'min':>7} {'max':>7} {'py ms':>6} {'thr':>4} {'gc 0/1/2':>10}  cpus")
    for i in range(args.procs):
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                p for p in (os.environ.get("PYTHONPATH", "").split(os.pathsep)[:1] + [str(Path(tree).resolve())]) if p))
            cmd = [sys.executable, str(HERE / "w3_spread.py"), "--child", "--repeats", str(args.repeats)]
            cmd += ["--torch"] * args.torch + ["--stub-launch"] * args.stub_launch + ["--eager"] * args.eager
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            try:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                print(f"{tree}: failed: {p.stderr[-800:]}")
                continue
            r["tree"] = tree
            rows.append(r)
            print(f"{tree:12} {r['median_ms']:7.3f} {r['min_ms']:7.3f} {r['max_ms']:7.3f} {r['python_ms']:6.2f} "
                  f"{r['threads']:4d} {'/'.join(map(str, r['gc'])):>10}  {r['cpus']}")
            print(f"{'':12} {r['phases']}")
            if r.get("eager_ms"):
                print(f"{'':12} eager (fuse=False) {r['eager_ms']:.3f} ms: fused {r['eager_ms'] / r['median_ms']:.1f}x")
    import common
    print(f"wrote {common.write_json('w3_spread.json', {'device': common.device_info(), 'rows': rows})}")


if __name__ == "__main__":
    main()
