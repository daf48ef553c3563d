"""``lazycv bench``: the repository's benchmark workloads (bench/w1.py, w2.py, c1.py) on this
machine's backend, with a progress line per step; prints a table, writes JSON and, when
matplotlib is installed, a PNG bar chart.

W1: a batch of BGR uint8 frames -> resize -> BGR2RGB -> float32 / 255 -> - mean -> / std ->
planar CHW, as the six cv2.cuda calls per frame in a loop (eager: one kernel per op, like
OpenCV's CUDA module; fused: lazycv's plan) and as one ``lazycv.compose`` pipeline. W2: one
frame at a time through the pipeline (per-frame latency). C1: CPU OpenCV's chain per frame
against lazycv with the frame's upload and planes' download included (what a CPU-only user
pays). Times are wall clock per batch, host included, synchronised at the end of each run.
"""
import json
import os
import platform
import sys
import time

import numpy as np

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
FULL = {"frame": (1080, 1920), "out": 640, "batches": [1, 8], "repeats": 10, "w2_frames": 200}
QUICK = {"frame": (270, 480), "out": 160, "batches": [1, 4], "repeats": 3, "w2_frames": 30}
WORKLOADS = ("w1", "w2", "c1")


def w1_calls(cv2, g, std, side):
    """W1 as a user writes it: the six cv2.cuda calls on one frame (bench/ scripts use it too)."""
    r = cv2.cuda.resize(g, (side, side), interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.subtract(f, MEAN)
    f = cv2.cuda.divide(f, std)
    return cv2.cuda.split(f)


def _cpu_chain(cv2, frame, side):
    r = cv2.resize(frame, (side, side), interpolation=cv2.INTER_LINEAR)
    f = cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    f = (f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return np.ascontiguousarray(f.transpose(2, 0, 1))


def _timed(fn, repeats, sync):
    """Median ms of ``repeats`` runs of ``fn`` after one warm-up run (which compiles)."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), float(np.percentile(times, 99))


class _Progress:
    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()

    def step(self, what):
        self.done += 1
        print(f"bench [{self.done}/{self.total}] {time.perf_counter() - self.t0:5.1f}s  {what}",
              file=sys.stderr, flush=True)


def _steps(workloads, cfg):
    steps = []
    if "w1" in workloads:
        for b in cfg["batches"]:
            steps += [("w1", "loop eager", b), ("w1", "loop fused", b), ("w1", "compose", b)]
    if "w2" in workloads:
        steps += [("w2", "loop fused", 1), ("w2", "compose", 1)]
    if "c1" in workloads:
        steps += [("c1", "cpu opencv", 1), ("c1", "loop fused", 1)]
    return steps


def run_bench(backend, workloads, cfg):
    import cv2

    import lazycv
    rows, cols = cfg["frame"]
    side = cfg["out"]
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (rows, cols, 3), dtype=np.uint8) for _ in range(max(cfg["batches"]))]
    steps = _steps(workloads, cfg)
    progress = _Progress(len(steps))
    results = []
    lazycv.enable(backend=backend)
    be = lazycv.runtime.backend()
    sync = be.synchronize
    compose = lazycv.compose(lazycv.resize((side, side)), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                             lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                             lazycv.to_planar(), lazycv.write(device=True))
    std = cv2.cuda_GpuMat(side, side, cv2.CV_32FC3)
    std.setTo(STD)
    gpus = []
    for f in frames:
        g = cv2.cuda_GpuMat()
        g.upload(f)
        gpus.append(g)
    for workload, mode, batch in steps:
        progress.step(f"{workload} {mode}, batch {batch}")
        lazycv.enable(backend=backend, fuse=(mode != "loop eager"))
        repeats = cfg["repeats"]
        if workload == "c1":
            if mode == "cpu opencv":
                def fn():
                    return _cpu_chain(cv2, frames[0], side)
            else:
                def fn():
                    g = cv2.cuda_GpuMat()
                    g.upload(frames[0])
                    return [p.download() for p in w1_calls(cv2, g, std, side)]
        elif workload == "w2":
            repeats = cfg["w2_frames"]
            if mode == "compose":
                def fn():
                    lazycv.materialize(compose(gpus[:1]))
            else:
                def fn():
                    lazycv.materialize(w1_calls(cv2, gpus[0], std, side))
        elif mode == "compose":
            def fn(batch=batch):
                lazycv.materialize(compose(gpus[:batch]))
        else:
            def fn(batch=batch):
                lazycv.materialize([w1_calls(cv2, g, std, side) for g in gpus[:batch]])
        lazycv.reset_stats()
        median, p99 = _timed(fn, repeats, sync)
        st = lazycv.stats()
        runs = repeats + 1
        results.append({"workload": workload, "mode": mode, "batch": batch, "median_ms": median, "p99_ms": p99,
                        "kernels_per_run": st["kernels_launched"] / runs if mode != "cpu opencv" else 0.0,
                        "repeats": repeats})
    lazycv.disable()
    return results


def _table(results, meta):
    lines = [f"lazycv bench: backend {meta['backend']}, frames {meta['frame'][1]}x{meta['frame'][0]} -> "
             f"{meta['out']}x{meta['out']}, {meta['device']}",
             f"{'workload':8} {'mode':11} {'batch':>5} {'median ms':>10} {'p99 ms':>9} {'ms/frame':>9} {'kernels':>8}"]
    for r in results:
        lines.append(f"{r['workload']:8} {r['mode']:11} {r['batch']:5d} {r['median_ms']:10.3f} {r['p99_ms']:9.3f} "
                     f"{r['median_ms'] / r['batch']:9.3f} {r['kernels_per_run']:8.1f}")
    return "\n".join(lines)


def _plot(results, meta, path):
    """A bar chart of ms per frame; False when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [f"{r['workload']} {r['mode']}\nbatch {r['batch']}" for r in results]
    values = [r["median_ms"] / r["batch"] for r in results]
    fig, ax = plt.subplots(figsize=(max(6, len(results) * 0.9), 4))
    ax.bar(range(len(values)), values, color=["#4a78a8" if "fused" in lb or "compose" in lb else "#b0b0b0"
                                              for lb in labels])
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_ylabel("ms per frame (median, host included)")
    ax.set_title(f"lazycv bench, backend {meta['backend']} ({meta['frame'][1]}x{meta['frame'][0]} frames)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _run(args):
    from . import CliError, prepare_backend
    from .info import backend_choice, device_text
    backend = prepare_backend(args.backend)
    if backend == "cuda-sim":
        raise CliError("the simulator runs each GPU thread in Python: its times mean nothing; "
                       "use --backend cpu or cuda")
    cfg = dict(QUICK if args.quick else FULL)
    if args.batches:
        cfg["batches"] = args.batches
    if args.repeats:
        cfg["repeats"] = args.repeats
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown or not workloads:
        raise CliError(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(WORKLOADS)}")
    import lazycv
    name = backend or backend_choice()[0]
    results = run_bench(backend, workloads, cfg)
    meta = {"lazycv": lazycv.__version__, "backend": name, "device": device_text(name), "frame": cfg["frame"],
            "out": cfg["out"], "quick": args.quick, "platform": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    print(_table(results, meta))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "lazycv-bench.json")
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=2)
    print(f"wrote {path}")
    png = os.path.join(args.out, "lazycv-bench.png")
    if _plot(results, meta, png):
        print(f"wrote {png}")
    else:
        print("no plot: matplotlib is not installed (pip install matplotlib)")


def add_commands(sub):
    from . import BACKENDS, int_list, positive_int
    p = sub.add_parser("bench", help="run the W1/W2/C1 workloads: table, JSON and a PNG plot")
    p.add_argument("--quick", action="store_true", help="small frames and few repeats (under a minute on the CPU)")
    p.add_argument("--backend", default=None, choices=BACKENDS)
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: w1,w2,c1")
    p.add_argument("--batches", type=int_list, default=None, help="W1 batch sizes, e.g. 1,8")
    p.add_argument("--repeats", type=positive_int, default=None, help="timed runs per step")
    p.add_argument("--out", default=".", help="folder for lazycv-bench.json and lazycv-bench.png")
    p.set_defaults(run=_run)
