"""Layer 3: your own per-pixel and gather ops, written in Python, fused with the built-ins.

    python samples/layer3_custom_op.py

docs/layer3-ops.md explains the rules (arguments, types, saturation, footprints, errors).
"""
import math

import cv2
import numpy as np

import lazycv

lazycv.enable()


@lazycv.op(per_channel=True, out_depth=cv2.CV_8U, param_types=(float, float))
def contrast(v, gain, pivot):
    """Each channel: stretch around a pivot; the float result is rounded and saturated to 8U."""
    return (v - pivot) * gain + pivot


@lazycv.op(out_depth=cv2.CV_32F)
def hue_ish(b, g, r):
    """Three channels in, two out: a chroma pair, as float."""
    return np.float32(r) - np.float32(g), np.float32(b) - np.float32(0.5) * (np.float32(r) + np.float32(g))


@lazycv.op
def bgr2rgb(b, g, r):
    """The built-in cvtColor(COLOR_BGR2RGB) through the public mechanism."""
    return r, g, b


@lazycv.gather_op(param_types=(float, float))
def swirl(y, x, h, w, strength, radius):
    """A custom warp: rotate each pixel about the centre by an angle that fades with distance."""
    cy, cx = h / 2.0, w / 2.0
    dy, dx = y - cy, x - cx
    d = math.sqrt(dy * dy + dx * dx)
    a = strength * max(0.0, 1.0 - d / radius)
    sy = cy + dy * math.cos(a) - dx * math.sin(a)
    sx = cx + dy * math.sin(a) + dx * math.cos(a)
    return sy, sx                                      # floats: floored; clamped to the image


frame = np.random.default_rng(0).integers(0, 256, (360, 480, 3), dtype=np.uint8)
gpu = cv2.cuda_GpuMat()
gpu.upload(frame)

# built-in resize -> custom warp -> custom contrast -> built-in convert, all in one kernel
small = cv2.cuda.resize(gpu, (240, 180))
out = contrast(swirl(small, 2.0, 90.0), 1.5, 128.0).convertTo(cv2.CV_32F, alpha=1 / 255)
print(lazycv.explain(out))
lazycv.reset_stats()
img = out.download()
print("swirl+contrast", img.shape, img.dtype, "kernels", lazycv.stats()["kernels_launched"])
assert lazycv.stats()["kernels_launched"] == 1

chroma = hue_ish(small).download()
print("chroma", chroma.shape, chroma.dtype)

# a built-in, re-defined through the public mechanism, is bit-exact
same = np.array_equal(bgr2rgb(gpu).download(), cv2.cuda.cvtColor(gpu, cv2.COLOR_BGR2RGB).download())
print("bgr2rgb op == cv2.cuda.cvtColor:", same)
assert same

# the user op in a layer-2 pipeline
p = lazycv.compose(lazycv.resize((120, 90)), bgr2rgb, contrast.step(1.2, 100.0), lazycv.write())
print(p, p(frame).shape)

# a bad call names the op
try:
    contrast(gpu, 1.5)                                 # the pivot is missing
except cv2.error as e:
    print("error:", str(e).strip())
print(lazycv.stats())
