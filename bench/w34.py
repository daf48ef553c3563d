"""W3 (a Python loop over 50 ROIs of a 4K frame) and W4 (three products of one 1080p frame) on
the GPU: lazycv fused vs lazycv eager (one kernel per op, as OpenCV's CUDA module) vs torch, one
run. Wall-clock per frame, back to back, host included (recording + launch), median of repeats.

    python bench/w34.py [--repeats 20]

Prints a table, writes $OUT/w34.json (or bench/out/w34.json).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from w1 import sync, tensor_result, wall_time  # noqa: E402

MUL = (1 / 255, 1 / 255, 1 / 255)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def rois_for(n, h, w, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        cw, ch = int(rng.integers(32, 400)), int(rng.integers(64, 600))
        out.append((int(rng.integers(0, w - cw)), int(rng.integers(0, h - ch)), cw, ch))
    return out


def w3_calls(g, rois):
    """W3's loop as a user writes it: per ROI of the uploaded frame ``g``, seven cv2.cuda
    calls; each ROI's three pending planes."""
    import cv2
    outs = []
    for x, y, w, h in rois:
        c = cv2.cuda_GpuMat(g, (x, y, w, h))
        r = cv2.cuda.resize(c, (64, 128))
        f = r.convertTo(cv2.CV_32FC3)
        f = cv2.cuda.multiply(f, MUL)
        f = cv2.cuda.subtract(f, MEAN)
        f = cv2.cuda.divide(f, STD)
        outs.append(cv2.cuda.split(f))
    return outs


def w3_inputs(seed=3):
    """A 4K frame and W3's 50 crops of it (w3_spread.py and w3_instructions.py's inputs)."""
    frame = np.random.default_rng(seed).integers(0, 256, (2160, 3840, 3), np.uint8)
    return frame, rois_for(50, 2160, 3840)


def w3_lazycv(frame, rois, fuse):
    import cv2
    import lazycv
    lazycv.enable(fuse=fuse)
    g = cv2.cuda_GpuMat()
    g.upload(frame)

    def run():
        outs = w3_calls(g, rois)
        lazycv.materialize(*[p for o in outs for p in o])
        return outs
    return run


def w3_compose(frame, rois):
    """W3 as one ``lazycv.compose`` call over the crops (a list of GpuMat ROI views), the
    batch as one (50, 3, 128, 64) device tensor: from the second call on, a batch program."""
    import cv2
    import lazycv
    lazycv.enable(fuse=True)
    g = cv2.cuda_GpuMat()
    g.upload(frame)
    p = lazycv.compose(lazycv.resize((64, 128)), lazycv.convert(np.float32, 1 / 255),
                       lazycv.normalize(MEAN, STD), lazycv.to_planar(), lazycv.write(tensor=True))
    return lambda: p([cv2.cuda_GpuMat(g, r) for r in rois])


def w3_reference(frame, rois):
    import cv2
    out = []
    for x, y, w, h in rois:
        r = cv2.resize(np.ascontiguousarray(frame[y:y + h, x:x + w]), (64, 128)).astype(np.float32)
        r = (r * np.float32(1 / 255) - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
        out.append(r.transpose(2, 0, 1))
    return np.stack(out)


def w4_reference(frame):
    """W4's three products by CPU OpenCV (the normalised one in float32 numpy, as W1's)."""
    import cv2
    thumb = cv2.resize(frame, (320, 180))
    m = cv2.cvtColor(cv2.resize(frame, (640, 640)), cv2.COLOR_BGR2RGB).astype(np.float32)
    m = ((m * np.float32(1 / 255) - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).transpose(2, 0, 1)
    gray = cv2.cvtColor(cv2.resize(frame, (960, 540)), cv2.COLOR_BGR2GRAY)
    return thumb, m, gray


def w3_torch_loop(frame, rois):
    import torch
    import torch.nn.functional as F
    x = torch.from_numpy(frame).cuda().permute(2, 0, 1).float()
    mean = torch.tensor(MEAN, device="cuda").view(3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(3, 1, 1)

    def run():
        outs = []
        for cx, cy, w, h in rois:
            c = x[:, cy:cy + h, cx:cx + w][None]
            r = F.interpolate(c, size=(128, 64), mode="bilinear", align_corners=False)[0]
            outs.append((r / 255 - mean) / std)
        return torch.stack(outs)
    return run


def w3_roi_align(frame, rois):
    import torch
    from torchvision.ops import roi_align
    x = torch.from_numpy(frame).cuda().permute(2, 0, 1).float()[None]
    boxes = torch.tensor([[0, cx, cy, cx + w, cy + h] for cx, cy, w, h in rois], dtype=torch.float32, device="cuda")
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)

    def run():
        r = roi_align(x, boxes, output_size=(128, 64), spatial_scale=1.0, sampling_ratio=1, aligned=True)
        return (r / 255 - mean) / std
    return run


def w4_lazycv(frame, fuse):
    import cv2
    import lazycv
    lazycv.enable(fuse=fuse)
    g = cv2.cuda_GpuMat()
    g.upload(frame)

    def run():
        thumb = cv2.cuda.resize(g, (320, 180))
        f = cv2.cuda.cvtColor(cv2.cuda.resize(g, (640, 640)), cv2.COLOR_BGR2RGB)
        f = f.convertTo(cv2.CV_32FC3, alpha=1 / 255)
        planes = cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), STD))
        gray = cv2.cuda.cvtColor(cv2.cuda.resize(g, (960, 540)), cv2.COLOR_BGR2GRAY)
        lazycv.materialize(thumb, *planes, gray)
        return thumb, planes, gray
    return run


def w4_torch(frame):
    import torch
    import torch.nn.functional as F
    x = torch.from_numpy(frame).cuda().permute(2, 0, 1)[None].float()
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    wgray = torch.tensor([0.114, 0.587, 0.299], device="cuda").view(1, 3, 1, 1)

    def run():
        thumb = F.interpolate(x, size=(180, 320), mode="bilinear").round().clamp(0, 255).to(torch.uint8)
        m = F.interpolate(x, size=(640, 640), mode="bilinear").flip(1)
        m = (m / 255 - mean) / std
        gray = (F.interpolate(x, size=(540, 960), mode="bilinear") * wgray).sum(1).round().to(torch.uint8)
        return thumb, m, gray
    return run


def copy_bandwidth():
    import torch
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        b.copy_(a)
    torch.cuda.synchronize()
    return 2 * a.numel() * 20 / (time.perf_counter() - t0) / 1e12


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    import lazycv
    res = {"device": common.device_info(), "rows": []}
    try:
        res["copy_tb_s"] = copy_bandwidth()
    except Exception as e:
        print(f"[w34] copy bandwidth: {e}", file=sys.stderr)
        res["copy_tb_s"] = float("nan")
    table = common.Table(["workload", "contestant", "ms/frame", "p99 ms", "kernels", "vs eager", "TB/s", "max err"])
    rng = np.random.default_rng(3)
    f4k = rng.integers(0, 256, (2160, 3840, 3), dtype=np.uint8)
    rois = rois_for(50, 2160, 3840)
    ref3 = w3_reference(f4k, rois)
    w3_bytes = sum(w * h * 3 for _, _, w, h in rois) + 50 * 3 * 64 * 128 * 4
    f1080 = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    w4_bytes = 1080 * 1920 * 3 + 320 * 180 * 3 + 3 * 640 * 640 * 4 + 960 * 540

    def lazy_err3(outs):
        got = np.stack([np.stack([p.download() for p in o]) for o in outs])
        return float(np.abs(got - ref3).max())

    ref4 = w4_reference(f1080)

    def lazy_err4(outs):
        thumb, planes, gray = outs
        got = (thumb.download(), np.stack([p.download() for p in planes]), gray.download())
        return max(float(np.abs(g.astype(np.float64) - r.astype(np.float64)).max()) for g, r in zip(got, ref4))

    def torch_err3(out):
        return float(np.abs(out.cpu().numpy() - ref3).max())

    def tensor_err3(t):
        return float(np.abs(tensor_result(t) - ref3).max())

    entries = [("W3", "lazycv fused", lambda: w3_lazycv(f4k, rois, True), lazy_err3, w3_bytes),
               ("W3", "lazycv eager", lambda: w3_lazycv(f4k, rois, False), lazy_err3, w3_bytes),
               ("W3", "lazycv compose tensor", lambda: w3_compose(f4k, rois), tensor_err3, w3_bytes),
               ("W3", "torch loop", lambda: w3_torch_loop(f4k, rois), torch_err3, w3_bytes),
               ("W3", "torchvision roi_align", lambda: w3_roi_align(f4k, rois), torch_err3, w3_bytes),
               ("W4", "lazycv fused", lambda: w4_lazycv(f1080, True), lazy_err4, w4_bytes),
               ("W4", "lazycv eager", lambda: w4_lazycv(f1080, False), lazy_err4, w4_bytes),
               ("W4", "torch", lambda: w4_torch(f1080), None, w4_bytes)]
    eager_ms = {}
    for wl, name, setup, err_fn, nbytes in entries:
        try:
            fn = setup()
            out = fn()
            sync()
            err = err_fn(out) if err_fn else float("nan")
            kernels = ""
            if name.startswith("lazycv"):
                lazycv.reset_stats()
                fn()
                kernels = lazycv.stats()["kernels_launched"]
            with common.HostWatch() as watch:
                t = wall_time(fn, args.repeats, 5)
            if name.startswith("lazycv"):
                t.update(watch.as_dict())
                print(f"[w34] {wl} {name}: host during the timed runs: {watch.as_dict()}")
            if err_fn:                       # check a call made after the timed ones too
                out = fn()
                sync()
                err = max(err, err_fn(out))
        except Exception as e:
            print(f"[w34] {wl} {name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        if name == "lazycv eager":
            eager_ms[wl] = t["median_ms"]
        tbs = common.effective_bandwidth(nbytes, t["median_ms"]) / 1e3
        res["rows"].append({"workload": wl, "contestant": name, **t, "kernels": kernels, "tb_per_s": tbs,
                            "max_abs_err": err})
        table.add(wl, name, t["median_ms"], t["p99_ms"], kernels, "", tbs, err)
        if name.startswith("lazycv"):
            import w1
            ko = w1.kernel_only(fn, args.repeats)
            if ko is not None:
                ms, n = ko
                tbs = common.effective_bandwidth(nbytes, ms) / 1e3
                res["rows"].append({"workload": wl, "contestant": name + ", kernels only", "median_ms": ms,
                                    "kernels": n, "tb_per_s": tbs})
                table.add(wl, name + ", kernels only", ms, "", n, "", tbs, "")
    print(table)
    for wl in ("W3", "W4"):
        fused = [r for r in res["rows"] if r["workload"] == wl and r["contestant"] == "lazycv fused"]
        if fused and wl in eager_ms:
            print(f"{wl}: fused is {eager_ms[wl] / fused[0]['median_ms']:.1f}x the eager loop")
    print(f"device-to-device copy: {res['copy_tb_s']:.2f} TB/s")
    print(f"wrote {common.write_json('w34.json', res)}")


if __name__ == "__main__":
    main()
