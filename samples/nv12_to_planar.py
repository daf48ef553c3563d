"""Decoder output to a model's input: frames arrive as NV12 (a video decoder's format: the Y
plane, then interleaved U and V at half resolution), and the model wants planar RGB float32.
cvtColor(COLOR_YUV2RGB_NV12), the scaling and the split are one fused kernel per frame, and
frames recorded before the first download share a launch.

    python samples/nv12_to_planar.py [--frames 4]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()

n_frames = int(sys.argv[sys.argv.index("--frames") + 1]) if "--frames" in sys.argv else 4
H, W = 360, 640


def decoded_frames(n):
    """What a decoder hands over: (H * 3 / 2, W) uint8 NV12 frames (here made from BGR frames)."""
    rng = np.random.default_rng(0)
    for _ in range(n):
        bgr = cv2.GaussianBlur(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), (0, 0), 1.5)
        i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
        u = i420[H:H + H // 4].reshape(H // 2, W // 2)
        v = i420[H + H // 4:].reshape(H // 2, W // 2)
        nv12 = np.empty((H * 3 // 2, W), np.uint8)
        nv12[:H] = i420[:H]
        nv12[H:] = np.stack([u, v], axis=-1).reshape(H // 2, W)
        yield nv12


# ---- the usual cv2.cuda code ----
frames = list(decoded_frames(n_frames))
lazycv.reset_stats()
planar = []
for nv12 in frames:
    g = cv2.cuda_GpuMat()
    g.upload(nv12)
    rgb = cv2.cuda.cvtColor(g, cv2.COLOR_YUV2RGB_NV12)              # (H, W, 3) uint8
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    planar.append(cv2.cuda.split(f))                                # 3 planes of (H, W) float32
batch = np.stack([np.stack([p.download() for p in planes]) for planes in planar])   # (N, 3, H, W)
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check (the 8-bit conversion is bit-exact) ----
for nv12, got in zip(frames, batch):
    ref = cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12).astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_allclose(got, ref.transpose(2, 0, 1), atol=1e-6, err_msg="differs from CPU OpenCV")

print(f"{n_frames} NV12 frames {W}x{H} -> planar RGB {batch.shape} {batch.dtype}, equal to CPU OpenCV; "
      f"{stats['kernels_launched']} launch(es)")
print(stats)
