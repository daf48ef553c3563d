"""W1 (and W2's per-frame latency) on the GPU: lazycv fused vs lazycv eager vs peers, one run.

W1: B frames 1080x1920 BGR u8 -> resize 640x640 LINEAR -> BGR2RGB -> 32F x 1/255 -> - mean
-> / std -> planar CHW. lazycv runs it exactly as a user writes it: the six cv2.cuda calls per
frame in a Python loop, one flush per batch (W1-loop). Every number is wall-clock per batch,
back to back, host included, synchronised at the end of the timed run (median of repeats).

    python bench/w1.py [--batches 1,8,64] [--repeats 20] [--peers torch_eager,...]

Prints a table, writes $OUT/w1.json (or bench/out/w1.json).
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

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def upload_all(frames):
    """One GpuMat per frame (untimed setup)."""
    import cv2
    gpus = []
    for f in frames:
        g = cv2.cuda_GpuMat()
        g.upload(f)
        gpus.append(g)
    return gpus


def frame_calls(g, std, normalise=None):
    """W1 on one frame as a user writes it: the six cv2.cuda calls; returns the three planes."""
    import cv2
    r = cv2.cuda.resize(g, (640, 640), interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.subtract(f, MEAN)
    f = (normalise or cv2.cuda.divide)(f, std)
    return cv2.cuda.split(f)


def compose_pipeline(tensor=False):
    """W1 as one lazycv.compose pipeline, results on the device (GpuMat planes or a tensor)."""
    import cv2
    import lazycv
    return lazycv.compose(lazycv.resize((640, 640)), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                          lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                          lazycv.to_planar(), lazycv.write(device=not tensor, tensor=tensor))


def lazycv_setup(frames, fuse, by_reciprocal=False):
    """Upload the frames (untimed); return a callable running W1 over the batch as user code.
    ``by_reciprocal``: multiply by 1/std instead of dividing by std (what the C++ peers do;
    kernel_variants.py measures what OpenCV's division costs)."""
    import cv2
    import lazycv
    lazycv.enable(fuse=fuse)
    gpus = upload_all(frames)
    std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
    std.setTo(tuple(1 / s for s in STD) if by_reciprocal else STD)
    normalise = cv2.cuda.multiply if by_reciprocal else cv2.cuda.divide

    def record():
        """The user code: the six calls per frame (recorded, not yet run)."""
        return [frame_calls(g, std, normalise) for g in gpus]

    def run():
        outs = record()
        lazycv.materialize(*[p for planes in outs for p in planes])
        return outs
    run.record = record
    return run


def lazycv_compose_setup(frames, tensor=False):
    """W1 as one ``lazycv.compose`` call for the batch (the compose layer: later batches of the
    same shape launch the first one's batch program), results left on the device: GpuMat
    planes, or with ``tensor`` one (B, 3, 640, 640) device array."""
    import lazycv
    lazycv.enable(fuse=True)
    gpus = upload_all(frames)
    p = compose_pipeline(tensor)
    return lambda: p(gpus)


def tensor_result(t):
    return t.copy_to_host() if hasattr(t, "copy_to_host") else np.asarray(t)


def set_launch_mode(mode):
    """Switch the CUDA backend's launch path (driver / packed / overload / dispatcher) for a
    contestant; kernels launched before go through the new path too."""
    import lazycv
    from lazycv.runtime import STATE
    lazycv.backend()
    if hasattr(STATE.backend, "launch_mode"):
        STATE.backend.launch_mode = mode
        STATE.backend._direct.clear()


def kernel_only(fn, repeats):
    """Device time of the kernels one call of ``fn`` launches: capture its launches, then replay
    them back to back (the host cost of a replay is one direct launch each)."""
    from lazycv.runtime import STATE
    be = STATE.backend
    if not hasattr(be, "_launch"):
        return None
    captured, orig = [], be._launch

    def spy(f, grid, args, stream):
        captured.append((f, grid, args, stream))
        return orig(f, grid, args, stream)
    be._launch = spy
    try:
        fn()
    finally:
        be._launch = orig
    sync()

    def replay():
        for f, grid, args, stream in captured:
            orig(f, grid, args, stream)
    return wall_time(replay, repeats, 20)["median_ms"], len(captured)


def lazycv_result(outs):
    return np.stack([np.stack([p.download() for p in planes]) for planes in outs])


def sync():
    try:
        from numba import cuda
        cuda.synchronize()
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception:
        pass


def wall_time(fn, repeats, inner, warm_s=0.05):
    """Median over ``repeats`` of (time for ``inner`` back-to-back calls + one sync) / inner,
    after ``warm_s`` seconds of calls (an idle GPU clocks down; a short timed run of small
    batches would otherwise start below full clocks)."""
    t_end = time.perf_counter() + warm_s
    while True:
        fn()
        sync()
        if time.perf_counter() >= t_end:
            break
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) * 1e3 / inner)
    return common.summarize(samples)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--peers", default="torch_eager,torch_compiled,cupy_rawkernel,cvcuda_fused2,cvcuda_ops")
    ap.add_argument("--no-eager", action="store_true", help="skip lazycv fuse=False")
    ap.add_argument("--compose", action="store_true", help="add W1 as one lazycv.compose call per batch")
    ap.add_argument("--inner", type=int, default=0,
                    help="back-to-back calls between syncs (default max(16, 256 // batch); runs "
                         "before 2026-12-01's run 43 used max(4, 64 // batch))")
    ap.add_argument("--launch-modes", default="driver",
                    help="CUDA launch paths to compare for lazycv fused: driver,packed,overload,dispatcher")
    args = ap.parse_args(argv)
    import lazycv
    results = {"device": common.device_info(), "lazycv_backend": None, "rows": []}
    table = common.Table(["batch", "contestant", "ms/batch", "p99 ms", "TB/s", "max err", "kernels"])
    for B in [int(b) for b in args.batches.split(",")]:
        frames = peers.make_frames(B, seed=B)
        ref = peers.reference_w1(frames)
        # back to back: a sync every `inner` calls; the first call's host time before the
        # device starts is paid once a sync, so few calls between syncs charge it to every call
        inner = args.inner or max(16, 256 // B)
        contestants = []
        for mode in [m for m in args.launch_modes.split(",") if m]:
            name = "lazycv fused" if mode == "driver" else f"lazycv fused ({mode})"
            contestants.append((name, lambda mode=mode: (set_launch_mode(mode), lazycv_setup(frames, True))[1],
                                lazycv_result))
        if args.compose:
            contestants.append(("lazycv compose", lambda: lazycv_compose_setup(frames), lazycv_result))
            contestants.append(("lazycv compose tensor", lambda: lazycv_compose_setup(frames, True),
                                tensor_result))
        if not args.no_eager:
            contestants.append(("lazycv eager", lambda: lazycv_setup(frames, False), lazycv_result))
        for name in [p for p in args.peers.split(",") if p]:
            peer = peers.PEERS[name]
            contestants.append((name, lambda peer=peer: peer.setup(frames), lambda o: o))
        for name, setup, to_host in contestants:
            try:
                t0 = time.perf_counter()
                fn = setup()
                out = fn()
                sync()
                first_ms = (time.perf_counter() - t0) * 1e3
                err = peers.check(to_host(out), ref)
                if name.startswith("lazycv"):
                    lazycv.reset_stats()
                    fn()
                    kernels = lazycv.stats()["kernels_launched"]
                    results["lazycv_backend"] = lazycv.backend()
                else:
                    kernels = ""
                with common.HostWatch() as watch:
                    t = wall_time(fn, args.repeats, inner)
                if name.startswith("lazycv"):
                    print(f"[w1] {name} B={B}: host during the timed runs: {watch.as_dict()}")
                    t.update(watch.as_dict())
                out = fn()                   # check a call made after the timed ones too
                sync()
                err = max(err, peers.check(to_host(out), ref))
            except Exception as e:  # a peer missing on this machine must not sink the run
                print(f"[w1] {name} B={B}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            tbs = common.effective_bandwidth(common.w1_bytes(B), t["median_ms"]) / 1e3
            table.add(B, name, t["median_ms"], t["p99_ms"], tbs, err, kernels)
            results["rows"].append({"batch": B, "contestant": name, **t, "tb_per_s": tbs,
                                    "max_abs_err": err, "kernels_per_batch": kernels,
                                    "first_call_ms": first_ms})
            if name in ("lazycv fused", "lazycv compose tensor"):
                # the loop divides by a std image, compose by std scalars: two kernels
                ko = kernel_only(fn, args.repeats)
                if ko is not None:
                    ms, n = ko
                    tbs = common.effective_bandwidth(common.w1_bytes(B), ms) / 1e3
                    label = "lazycv kernels only" + (" (compose)" if "compose" in name else "")
                    table.add(B, label, ms, "", tbs, "", n)
                    results["rows"].append({"batch": B, "contestant": label,
                                            "median_ms": ms, "tb_per_s": tbs, "kernels_per_batch": n})
    print(table)
    path = common.write_json("w1.json", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
