"""Throughput of one lazycv.ray_data actor: W1 (B frames 1080x1920 BGR u8 -> 640x640 -> RGB ->
/255 -> normalize -> planar CHW f32) on a Ray Data batch of numpy arrays.

Rows, on the active backend (cuda on a GPU, else cpu):

* direct: the actor's ``__call__`` in this process (no Ray): numpy batch in, numpy (B, 3, 640,
  640) out — the upload, one launch, the download; back to back, median of repeats;
* tensor: the same pipeline with ``write(tensor=True)``: upload and launch, no download;
* upload / download alone: the batch's pageable host <-> device copies (what bounds `direct`);
* ray (when Ray is importable): a local Ray dataset of ``--ray-batches`` such batches through
  ``map_images`` with ``--concurrency`` actors (num_gpus=1 each on a GPU machine): wall time
  from the first to the last batch received (steady state), and the whole run including actor
  start and the first batch's compile (kernel disk cache warm from the direct rows).

    python bench/ray_actor.py [--batch 64] [--repeats 10] [--ray-batches 8] [--concurrency 1]
                              [--no-ray] [--out ray_actor.json]

Prints a table, writes JSON to --out (a bare name goes to $OUT, else bench/out/).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
OUT = (640, 640)


def w1(tensor=False):
    import cv2
    import lazycv
    return lazycv.compose(lazycv.resize(OUT), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                          lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                          lazycv.to_planar(), *([lazycv.write(tensor=True)] if tensor else []))


def frames(batch, h, w):
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    return np.stack([np.roll(base, 7 * i, axis=1) for i in range(batch)])


def sync():
    import cv2
    cv2.cuda.Stream.Null().waitForCompletion()


def timed(fn, repeats, warmup=2):
    """Wall-clock ms per call, each call synchronised (median first)."""
    def call():
        fn()
        sync()
    return common.time_cpu(call, warmup=warmup, iters=repeats)


def check(got, batch):
    """The actor's result against CPU OpenCV on two frames (SPEC.md: 8-bit resize within 1)."""
    import cv2
    tol = 1 / 255 / min(STD) + 1e-5
    worst = 0.0
    for i in (0, len(batch) - 1):
        f = cv2.cvtColor(cv2.resize(batch[i], OUT, interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
        ref = ((f.astype(np.float32) * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)
        worst = max(worst, float(np.abs(got[i] - ref).max()))
    assert worst <= tol, f"differs from CPU OpenCV by {worst}"
    return worst


def direct_rows(batch, repeats):
    import cv2
    import lazycv
    from lazycv.ray_data import PipelineActor
    actor = PipelineActor(w1())                           # enables lazycv (auto backend)
    data = {"image": batch}
    err = check(actor(data)["image"], batch)
    rows = {"direct": timed(lambda: actor(data), repeats)}
    tensor = w1(tensor=True)
    rows["tensor"] = timed(lambda: tensor(batch), repeats)
    b, h, w, c = batch.shape
    g = cv2.cuda_GpuMat()
    tall = batch.reshape(b * h, w, c)
    rows["upload"] = timed(lambda: g.upload(tall), repeats)
    res = cv2.cuda_GpuMat(b * 3 * OUT[1], OUT[0], cv2.CV_32FC1)
    res.setTo(0)
    host = np.empty((b * 3 * OUT[1], OUT[0]), np.float32)
    rows["download"] = timed(lambda: res.download(host), repeats)
    return actor.backend, rows, err, lazycv.stats()


def ray_rows(batch, n_batches, concurrency):
    try:
        import ray
        import ray.data
    except ImportError:
        return None
    from lazycv.ray_data import map_images
    root = str(Path(__file__).resolve().parents[1])
    env = {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for k in ("LAZYCV_CACHE_DIR", "LAZYCV_BACKEND"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    ray.init(include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        ds = ray.data.from_numpy([batch] * n_batches)          # one block a batch, column "data"
        t0 = time.perf_counter()
        arrivals, rows = [], 0
        for out in map_images(ds, w1(), column="data", batch_size=len(batch), concurrency=concurrency) \
                .iter_batches(batch_size=None, batch_format="numpy"):
            rows += len(out["data"])
            arrivals.append((time.perf_counter(), len(out["data"])))
        total = time.perf_counter() - t0
        check(out["data"], batch)
        steady = None
        if len(arrivals) > 1:
            span = arrivals[-1][0] - arrivals[0][0]
            steady = sum(n for _, n in arrivals[1:]) / span if span > 0 else None
        return {"images": rows, "batches": len(arrivals), "concurrency": concurrency,
                "gpus": ray.cluster_resources().get("GPU", 0), "total_s": total,
                "images_per_s_total": rows / total, "images_per_s_steady": steady, "ray": ray.__version__}
    finally:
        ray.shutdown()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", default="1920x1080", help="input WxH")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--ray-batches", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=1, help="actors in the Ray run")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--out", default="ray_actor.json")
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    batch = frames(args.batch, h, w)
    backend, rows, err, stats = direct_rows(batch, args.repeats)
    ray_res = None if args.no_ray else ray_rows(batch, args.ray_batches, args.concurrency)

    b = args.batch
    print(f"one lazycv.ray_data actor on {backend}: {b} frames {w}x{h} u8 -> (B, 3, 640, 640) f32 "
          f"(max err vs CPU OpenCV {err:.2e})")
    t = common.Table(["row", "ms a batch", "images/s", "what"], float_fmt="{:.2f}")
    what = {"direct": "actor __call__ in this process: numpy in, numpy out",
            "tensor": "same pipeline, write(tensor=True): upload + launch, no download",
            "upload": "the batch's pageable upload alone",
            "download": "the result's pageable download alone"}
    for name, r in rows.items():
        t.add(name, r["median_ms"], b / r["median_ms"] * 1e3, what[name])
    if ray_res is not None:
        if ray_res["images_per_s_steady"]:
            t.add("ray steady", b / ray_res["images_per_s_steady"] * 1e3, ray_res["images_per_s_steady"],
                  f"{ray_res['concurrency']} actor(s), first to last batch received")
        t.add("ray total", ray_res["total_s"] * 1e3 / ray_res["batches"], ray_res["images_per_s_total"],
              f"{ray_res['batches']} batches, actor start and first compile included")
    t.print()
    if ray_res is None:
        print("ray: " + ("skipped (--no-ray)" if args.no_ray else "not installed (pip install \"lazycv[ray]\")"))
    path = common.write_json(args.out, {
        "device": common.device_info(), "backend": backend, "batch": b, "input": [h, w, 3],
        "output": [3, OUT[1], OUT[0]], "max_err_vs_cpu_opencv": err,
        "direct": {k: dict(r, images_per_s=b / r["median_ms"] * 1e3) for k, r in rows.items()},
        "ray": ray_res, "stats": stats})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
