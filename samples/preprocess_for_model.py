"""A typical cv2.cuda preprocessing script, unchanged except for the two lazycv lines.

    python samples/preprocess_for_model.py [image]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()          # the only change: everything below is ordinary OpenCV CUDA code

if cv2.cuda.getCudaEnabledDeviceCount() == 0:
    sys.exit("no CUDA device")

frame = cv2.imread(sys.argv[1]) if len(sys.argv) > 1 else \
    np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)

gpu = cv2.cuda_GpuMat()
gpu.upload(frame)
h, w = frame.shape[:2]
side = min(h, w)
roi = cv2.cuda_GpuMat(gpu, ((w - side) // 2, (h - side) // 2, side, side))   # centre crop
r = cv2.cuda.resize(roi, (224, 224), interpolation=cv2.INTER_LINEAR)
rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
f = cv2.cuda.subtract(f, (0.485, 0.456, 0.406))
f = cv2.cuda.divide(f, (0.229, 0.224, 0.225))
chw = np.stack([p.download() for p in cv2.cuda.split(f)])

stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check ----
crop = frame[(h - side) // 2:(h - side) // 2 + side, (w - side) // 2:(w - side) // 2 + side]
ref = cv2.cvtColor(cv2.resize(crop, (224, 224), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
ref = (ref.astype(np.float32) * np.float32(1 / 255) - np.float32([0.485, 0.456, 0.406])) / np.float32([0.229, 0.224, 0.225])
np.testing.assert_allclose(chw, ref.transpose(2, 0, 1), rtol=1e-5, atol=1e-5, err_msg="differs from CPU OpenCV")

print("input", chw.shape, chw.dtype, "mean %.4f" % chw.mean(), "- equal to CPU OpenCV")
print(stats)
