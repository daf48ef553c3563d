"""W2: W1 one frame at a time, 2 000 frames back to back, one sync at the end.

Each lazycv frame is what a video loop does: the six cv2.cuda calls recorded, then the three
planes asked for (one flush, no download). Frames come round-robin from 16 uploaded 1080p
frames. Reported per contestant: wall time per frame over the whole run (host and device,
the final sync included) and the per-frame host time (each frame's Python call alone) at p50
and p99. Peers run the same frames one call a frame.

    python bench/w2.py [--frames 2000] [--peers torch_eager,torch_compiled,cupy_rawkernel,cvcuda_fused2,cvcuda_ops]

compose runs in four forms: write(tensor=True) or write(device=True), on [g] or on the bare
GpuMat g; the last three are printed as ratios to the first (issue #22: <= 1.3x).

Prints a table, writes $OUT/w2.json (or bench/out/w2.json).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import peers  # noqa: E402
import w1  # noqa: E402

POOL = 16          # distinct frames, used round-robin


def download_planes(planes):
    return np.stack([p.download() for p in planes])


# compose's forms of a one-frame call (issue #22: the bare GpuMat and ``write(device=True)``
# within 1.3x of the list / tensor form): (tensor?, list?) -> the result as a (3, H, W) array
COMPOSE_FORMS = {
    "tensor, [g]": (True, True, lambda t: w1.tensor_result(t)[0]),
    "tensor, g": (True, False, w1.tensor_result),
    "device, [g]": (False, True, lambda planes: download_planes(planes[0])),
    "device, g": (False, False, download_planes),
}


def lazycv_frames(frames, compose=None):
    """One zero-argument callable a frame: the user's per-frame code, or one compose call in
    the form ``compose`` names (a key of COMPOSE_FORMS)."""
    import cv2
    import lazycv
    lazycv.enable(fuse=True)
    gpus = w1.upload_all(frames)
    if compose:
        tensor, as_list, to_host = COMPOSE_FORMS[compose]
        p = w1.compose_pipeline(tensor=tensor)
        if as_list:
            return [lambda g=g: p([g]) for g in gpus], to_host
        return [lambda g=g: p(g) for g in gpus], to_host
    std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
    std.setTo(w1.STD)

    def frame(g):
        planes = w1.frame_calls(g, std)
        lazycv.materialize(*planes)
        return planes
    return [lambda g=g: frame(g) for g in gpus], download_planes


def peer_frames(name, frames):
    """The peer's per-frame callables over one device copy of the frames (one compiled
    function, each call a one-frame view)."""
    if name in ("torch_eager", "torch_compiled"):
        x = peers.to_torch(frames)
        fn = peers.torch_eager if name == "torch_eager" else peers.torch_compiled()
        calls = [lambda i=i: fn(x[i:i + 1]) for i in range(len(frames))]
        return calls, lambda out: out.cpu().numpy()[0]
    if name == "cupy_rawkernel":
        import cupy as cp
        x = peers.to_cupy(frames)
        fn = peers.cupy_rawkernel()
        out = cp.empty((1, 3, peers.OUT_H, peers.OUT_W), cp.float32)
        calls = [lambda i=i: fn(x[i:i + 1], out) for i in range(len(frames))]
        return calls, lambda o: o.get()[0]
    if name in peers.PEERS:                 # any other peer: set up once per one-frame batch
        calls = [peers.PEERS[name].setup(frames[i:i + 1]) for i in range(len(frames))]
        return calls, lambda o: peers._to_numpy(o)[0]
    raise ValueError(f"no per-frame form of peer {name!r}")


def run_frames(calls, n, warmup=50):
    """(wall µs per frame over ``n`` frames with one sync at the end, per-frame host times µs)."""
    for i in range(warmup):
        calls[i % len(calls)]()
    w1.sync()
    host = np.empty(n)
    clock = time.perf_counter
    t_start = clock()
    for i in range(n):
        t0 = clock()
        calls[i % len(calls)]()
        host[i] = clock() - t0
    w1.sync()
    return (clock() - t_start) / n * 1e6, host * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--peers", default="torch_eager,torch_compiled,cupy_rawkernel,cvcuda_fused2,cvcuda_ops")
    args = ap.parse_args(argv)
    frames = peers.make_frames(POOL, seed=2)
    ref = peers.reference_w1(frames[:1])[0]
    contestants = [("lazycv fused (six calls + flush a frame)", lambda: lazycv_frames(frames))]
    contestants += [(f"lazycv compose {form} (one call a frame)", lambda form=form: lazycv_frames(frames, form))
                    for form in COMPOSE_FORMS]
    contestants += [(name, lambda name=name: peer_frames(name, frames))
                    for name in [p for p in args.peers.split(",") if p]]
    table = common.Table(["contestant", "µs/frame (wall)", "host p50 µs", "host p99 µs", "max err"])
    out = {"device": common.device_info(), "frames": args.frames, "rows": []}
    for name, setup in contestants:
        try:
            calls, to_host = setup()
            err = peers.check(to_host(calls[0]())[None], ref[None])
            with common.HostWatch() as watch:
                wall, host = run_frames(calls, args.frames)
        except Exception as e:  # a peer missing on this machine must not sink the run
            print(f"[w2] {name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        p50, p99 = float(np.percentile(host, 50)), float(np.percentile(host, 99))
        table.add(name, wall, p50, p99, err)
        out["rows"].append({"contestant": name, "wall_us_per_frame": wall, "host_p50_us": p50,
                            "host_p99_us": p99, "host_max_us": float(host.max()), "max_abs_err": err,
                            **watch.as_dict()})
    print(table)
    walls = {r["contestant"]: r["wall_us_per_frame"] for r in out["rows"]}
    base = walls.get("lazycv compose tensor, [g] (one call a frame)")
    for form in list(COMPOSE_FORMS)[1:]:
        name = f"lazycv compose {form} (one call a frame)"
        if base and name in walls:
            print(f"compose {form} / compose tensor, [g]: {walls[name] / base:.2f}x (issue #22: <= 1.3x)")
    print(f"wrote {common.write_json('w2.json', out)}")


if __name__ == "__main__":
    main()
