"""Histogram and threshold analysis of a grey frame, on the device: its histogram, the mean and
spread, a binary mask from a threshold picked from the histogram, and a contrast-stretched copy
(normalize) — plain cv2.cuda calls, checked against CPU OpenCV.

    python samples/histogram_threshold.py [image]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()

if len(sys.argv) > 1:
    gray_host = cv2.imread(sys.argv[1], cv2.IMREAD_GRAYSCALE)
else:                                                  # a dim scene with a brighter object
    rng = np.random.default_rng(0)
    gray_host = rng.normal(70, 12, (360, 480)).clip(0, 255).astype(np.uint8)
    gray_host[100:220, 150:330] = rng.normal(170, 15, (120, 180)).clip(0, 255).astype(np.uint8)

# ---- the usual cv2.cuda code ----
gray = cv2.cuda_GpuMat()
gray.upload(gray_host)
hist = cv2.cuda.calcHist(gray).download().ravel()           # 256 bins, int32
mean, std = cv2.cuda.meanStdDev(gray)
# a threshold between the two modes of the histogram: the emptiest bin between the peaks
dark, bright = int(np.argmax(hist[:128])), 128 + int(np.argmax(hist[128:]))
t = dark + int(np.argmin(hist[dark:bright + 1]))
_, mask = cv2.cuda.threshold(gray, t, 255, cv2.THRESH_BINARY)
stretched = cv2.cuda.normalize(gray, 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
equalized = cv2.cuda.equalizeHist(gray)
mask_host, stretched_host, equalized_host = mask.download(), stretched.download(), equalized.download()
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check ----
ref_hist = cv2.calcHist([gray_host], [0], None, [256], [0, 256]).ravel()
assert (hist == ref_hist).all(), "calcHist differs from CPU OpenCV"
ref_mean, ref_std = cv2.meanStdDev(gray_host)
assert abs(float(np.ravel(mean)[0]) - ref_mean[0, 0]) < 1e-6 and abs(float(np.ravel(std)[0]) - ref_std[0, 0]) < 1e-6
assert (mask_host == cv2.threshold(gray_host, t, 255, cv2.THRESH_BINARY)[1]).all(), "threshold differs"
ref_stretched = cv2.normalize(gray_host, None, 0, 255, cv2.NORM_MINMAX, cv2.CV_8U)
assert int(np.abs(stretched_host.astype(int) - ref_stretched).max()) <= 1, "normalize differs"
assert (equalized_host == cv2.equalizeHist(gray_host)).all(), "equalizeHist differs"

print(f"threshold {t} between the histogram's modes at {dark} and {bright}: "
      f"{int(mask_host.astype(bool).sum())} of {mask_host.size} pixels bright; equal to CPU OpenCV")
print(stats)
