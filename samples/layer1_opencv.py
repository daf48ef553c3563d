"""Layer 1: ordinary cv2.cuda code, unchanged except for `import lazycv; lazycv.enable()`.
Recorded lazily, fused into one kernel, checked against CPU OpenCV.

    python samples/layer1_opencv.py [image] [--svg plan.svg]

docs/layer1-opencv.md explains what runs when.
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()                     # "cuda" when a GPU is usable, else the CPU backend

args = [a for a in sys.argv[1:] if not a.startswith("--")]
svg_path = sys.argv[sys.argv.index("--svg") + 1] if "--svg" in sys.argv else None
if svg_path in args:
    args.remove(svg_path)
frame = cv2.imread(args[0]) if args else \
    np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
h, w = frame.shape[:2]
side = min(h, w)
rect = ((w - side) // 2, (h - side) // 2, side, side)

# ---- the usual OpenCV CUDA preprocessing ----
gpu = cv2.cuda_GpuMat()
gpu.upload(frame)
roi = cv2.cuda_GpuMat(gpu, rect)                              # centre crop: a view
r = cv2.cuda.resize(roi, (224, 224), interpolation=cv2.INTER_LINEAR)
rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
f = cv2.cuda.subtract(f, MEAN)
f = cv2.cuda.divide(f, STD)
planes = cv2.cuda.split(f)

print(lazycv.explain(*planes))                                # planned, nothing ran yet
if svg_path:
    with open(svg_path, "w") as fh:
        fh.write(lazycv.explain(*planes, format="svg"))
    print("plan picture written to", svg_path)
chw = np.stack([p.download() for p in planes])               # runs the single fused kernel

x, y, s, _ = rect
ref = cv2.resize(np.ascontiguousarray(frame[y:y + s, x:x + s]), (224, 224), interpolation=cv2.INTER_LINEAR)
ref = (cv2.cvtColor(ref, cv2.COLOR_BGR2RGB).astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)
err = float(np.abs(chw - ref.transpose(2, 0, 1)).max())
print("backend", lazycv.backend(), "output", chw.shape, chw.dtype, "max error vs CPU OpenCV %.2e" % err)
print(lazycv.stats())
assert err < 1e-4
