"""Detector crops: every box a detector found in a frame becomes a classifier input — crop,
resize to 64x64, BGR -> RGB, float32 / 255 — written as the plain cv2.cuda loop a user writes.
lazycv records the whole loop and runs it as one launch for all the crops.

    python samples/detector_crops.py [image] [--boxes 24]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()

args = [a for a in sys.argv[1:] if not a.startswith("--")]
n_boxes = int(sys.argv[sys.argv.index("--boxes") + 1]) if "--boxes" in sys.argv else 24
if n_boxes in args:
    args.remove(str(n_boxes))
frame = cv2.imread(args[0]) if args else \
    np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)
h, w = frame.shape[:2]

# what a detector hands over: boxes (x, y, width, height) of every size, inside the frame
rng = np.random.default_rng(1)
boxes = []
for _ in range(n_boxes):
    bw, bh = int(rng.integers(16, w // 3)), int(rng.integers(16, h // 3))
    boxes.append((int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh)), bw, bh))

# ---- the usual cv2.cuda code ----
gpu = cv2.cuda_GpuMat()
gpu.upload(frame)
lazycv.reset_stats()
crops = []
for x, y, bw, bh in boxes:
    roi = cv2.cuda_GpuMat(gpu, (x, y, bw, bh))                       # a view, no copy
    r = cv2.cuda.resize(roi, (64, 64), interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    crops.append(rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255))
batch = np.stack([c.download() for c in crops])                      # (N, 64, 64, 3) float32
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check ----
for (x, y, bw, bh), got in zip(boxes, batch):
    ref = cv2.cvtColor(cv2.resize(frame[y:y + bh, x:x + bw], (64, 64), interpolation=cv2.INTER_LINEAR),
                       cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_allclose(got, ref, atol=1e-6, err_msg=f"crop {(x, y, bw, bh)} differs from CPU OpenCV")

print(f"{len(boxes)} crops -> batch {batch.shape} {batch.dtype}, equal to CPU OpenCV; "
      f"{stats['kernels_launched']} launch(es) for all of them")
print(stats)
