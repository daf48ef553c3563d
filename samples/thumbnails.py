"""Thumbnails: one uploaded image, several outputs — three sizes for a gallery and a small
grey preview — computed together: lazycv plans them in one flush and reads the image once.

    python samples/thumbnails.py [image]
"""
import sys

import cv2
import numpy as np

import lazycv

lazycv.enable()

frame = cv2.imread(sys.argv[1]) if len(sys.argv) > 1 else \
    np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
# (size, interpolation): area averaging for the half size (each pixel the mean of a 2x2 block),
# bilinear for the others
SIZES = [((640, 360), cv2.INTER_AREA), ((320, 180), cv2.INTER_LINEAR), ((200, 112), cv2.INTER_LINEAR)]

# ---- the usual cv2.cuda code ----
gpu = cv2.cuda_GpuMat()
gpu.upload(frame)
lazycv.reset_stats()
thumbs = [cv2.cuda.resize(gpu, size, interpolation=interp) for size, interp in SIZES]
preview = cv2.cuda.cvtColor(cv2.cuda.resize(gpu, (96, 54)), cv2.COLOR_BGR2GRAY)
print(lazycv.explain(*thumbs, preview))
lazycv.materialize(*thumbs, preview)                 # one flush for all four outputs
outs = [t.download() for t in thumbs] + [preview.download()]
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check (8-bit resizes are bit-exact) ----
refs = [cv2.resize(frame, size, interpolation=interp) for size, interp in SIZES]
refs.append(cv2.cvtColor(cv2.resize(frame, (96, 54)), cv2.COLOR_BGR2GRAY))
for got, ref in zip(outs, refs):
    diff = int(np.abs(got.astype(int) - ref).max())
    assert got.shape == ref.shape and diff <= 1, f"a {ref.shape} thumbnail differs from CPU OpenCV by {diff}"

print(f"{len(outs)} outputs from one image in {stats['flushes']} flush, {stats['kernels_launched']} launch(es); "
      "equal to CPU OpenCV")
print(stats)
