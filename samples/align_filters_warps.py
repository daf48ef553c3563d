"""Filters and warps for alignment: a camera shook between two frames by a known rotation and
shift (what a feature matcher would estimate). Both frames are smoothed on the device with a
Gaussian filter object, the second is warped back onto the first (warpAffine with the inverse
transform), and their difference shows what really moved — plain cv2.cuda code, checked
against CPU OpenCV.

    python samples/align_filters_warps.py [image]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()

if len(sys.argv) > 1:
    reference = cv2.imread(sys.argv[1], cv2.IMREAD_GRAYSCALE)
else:                                                  # a textured scene
    rng = np.random.default_rng(0)
    reference = cv2.GaussianBlur(rng.integers(0, 256, (240, 320), dtype=np.uint8), (0, 0), 2)
h, w = reference.shape
shake = cv2.getRotationMatrix2D((w / 2, h / 2), 1.5, 1.0)   # the camera turned 1.5 degrees ...
shake[:, 2] += (3.0, -2.0)                                 # ... and moved 3 pixels right, 2 up
moved = cv2.warpAffine(reference, shake, (w, h))
moved[60:100, 200:260] = 255                               # and something appeared in the scene
undo = cv2.invertAffineTransform(shake)

# ---- the usual cv2.cuda code ----
smooth = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, cv2.CV_8UC1, (5, 5), 1.2)
ref_gpu, moved_gpu = cv2.cuda_GpuMat(), cv2.cuda_GpuMat()
ref_gpu.upload(reference)
moved_gpu.upload(moved)
lazycv.reset_stats()
ref_smooth = smooth.apply(ref_gpu)
aligned = cv2.cuda.warpAffine(smooth.apply(moved_gpu), undo, (w, h), flags=cv2.INTER_LINEAR)
change = cv2.cuda.absdiff(ref_smooth, aligned)
_, mask = cv2.cuda.threshold(change, 60, 255, cv2.THRESH_BINARY)
mask_host, aligned_host = mask.download(), aligned.download()
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check ----
ref_cpu = cv2.GaussianBlur(reference, (5, 5), 1.2)
aligned_cpu = cv2.warpAffine(cv2.GaussianBlur(moved, (5, 5), 1.2), undo, (w, h), flags=cv2.INTER_LINEAR)
mask_cpu = cv2.threshold(cv2.absdiff(ref_cpu, aligned_cpu), 60, 255, cv2.THRESH_BINARY)[1]
assert int(np.abs(aligned_host.astype(int) - aligned_cpu).max()) <= 1, "the aligned frame differs from CPU OpenCV"
assert np.mean(mask_host != mask_cpu) < 1e-3, "the change mask differs from CPU OpenCV"
ys, xs = np.nonzero(mask_host[10:-10, 10:-10])          # (the frame's edges moved out of view)
assert len(ys) and 45 <= ys.min() + 10 and ys.max() + 10 <= 115 and 185 <= xs.min() + 10 and xs.max() + 10 <= 275, \
    "the change found is not where the object appeared"

print(f"aligned a frame turned 1.5 degrees and shifted (3, -2); the change is at rows "
      f"{ys.min() + 10}-{ys.max() + 10}, columns {xs.min() + 10}-{xs.max() + 10}; equal to CPU OpenCV")
print(stats)
