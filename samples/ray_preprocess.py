"""Ray Data: DNN preprocessing of a dataset of frames by lazycv actors (lazycv.ray_data).

    python samples/ray_preprocess.py [--frames 64] [--batch-size 16] [--concurrency N] [--num-gpus N]

A Ray dataset of frames of two sizes goes through resize 224x224 -> BGR2RGB -> /255 ->
(x - mean) / std -> planar CHW, as a compose pipeline run by ``map_batches`` actors: one per GPU
on a GPU cluster (num_gpus=1 each, the cuda backend), one CPU actor on a machine without GPUs.
Every row is checked against CPU OpenCV. The same actor class is then called in this process,
without Ray, for its throughput alone. Without Ray installed (pip install "lazycv[ray]") only
that part runs. docs/scale-out.md explains the deployment.
"""
import argparse
import sys
import time

import cv2
import numpy as np

import lazycv
from lazycv.ray_data import PipelineActor, map_images

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SIZE = (224, 224)

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--frames", type=int, default=64)
ap.add_argument("--batch-size", type=int, default=16)
ap.add_argument("--concurrency", type=int, default=None, help="actors (default: one per GPU, else 1)")
ap.add_argument("--num-gpus", type=float, default=None, help="GPUs per actor (default: 1 if the cluster has GPUs)")
args = ap.parse_args()

preprocess = lazycv.compose(lazycv.resize(SIZE), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                            lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                            lazycv.to_planar())


def frames(n):
    """Synthetic BGR frames: three of four 360x640, the rest 480x640 (a dataset of two sizes)."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        h, w = (480, 640) if i % 4 == 3 else (360, 640)
        ramp = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
        noise = rng.normal(0, 25, (h, w, 3)).astype(np.float32)
        out.append(np.clip(ramp + noise + i, 0, 255).astype(np.uint8))
    return out


def cpu_reference(frame):
    f = cv2.cvtColor(cv2.resize(frame, SIZE, interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
    return ((f.astype(np.float32) * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)


data = frames(args.frames)
# an 8-bit resize may differ from CPU OpenCV by 1 (SPEC.md), which /255 and /std scale
tol = 1 / 255 / min(STD) + 1e-5

try:
    import ray
except ImportError:
    ray = None
    print("Ray is not installed (pip install \"lazycv[ray]\"): only the in-process run below", file=sys.stderr)

if ray is not None:
    ray.init(include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    ds = ray.data.from_items([{"image": f, "id": i} for i, f in enumerate(data)])
    t0 = time.perf_counter()
    out = map_images(ds, preprocess, out="input", batch_size=args.batch_size, concurrency=args.concurrency,
                     num_gpus=args.num_gpus)
    rows = 0
    for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
        for i, chw in zip(batch["id"], batch["input"]):
            err = float(np.abs(chw - cpu_reference(data[i])).max())
            assert chw.shape == (3, SIZE[1], SIZE[0]) and err <= tol, f"frame {i} differs by {err}"
            rows += 1
    dt = time.perf_counter() - t0
    assert rows == len(data)
    gpus = ray.cluster_resources().get("GPU", 0)
    print(f"ray: {rows} frames in {dt:.2f} s = {rows / dt:.1f} images/s (actor start and first compile "
          f"included; cluster GPUs: {gpus:g}); every row equal to CPU OpenCV")
    ray.shutdown()

# ---- the same actor class in this process: what one actor does with a batch ----
actor = PipelineActor(preprocess)
batch = {"image": np.stack([f for f in data if f.shape[0] == 360][:args.batch_size])}
actor(batch)                                            # the first batch of its shape compiles
lazycv.reset_stats()
t0 = time.perf_counter()
reps = 5
for _ in range(reps):
    got = actor(batch)["image"]
dt = (time.perf_counter() - t0) / reps
stats = lazycv.stats()
for chw, f in zip(got, batch["image"]):
    err = float(np.abs(chw - cpu_reference(f)).max())
    assert err <= tol, f"differs from CPU OpenCV by {err}"
print(f"in this process ({actor.backend}): {len(got)} frames a call, {len(got) / dt:.1f} images/s, "
      f"{stats['kernels_launched'] / reps:g} launch(es) a batch; equal to CPU OpenCV")
print(stats)
