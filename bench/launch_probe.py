"""Is _hotpath.launch in use on this GPU, is it right, and what does a launch cost through it
against the Python path (slots.write + cuda.bindings' cuLaunchKernel)? CUDA only (run 105).
    python bench/launch_probe.py
"""
import time

import cv2
import numpy as np

import lazycv

lazycv.enable()
from lazycv.backends import cuda as cb
from lazycv.runtime import STATE
g = cv2.cuda_GpuMat()
a = np.random.default_rng(0).integers(0, 256, (90, 120, 3), np.uint8)
def frame(alpha):
    g.upload(a)
    return cv2.cuda.split(cv2.cuda.subtract(cv2.cuda.resize(g, (64, 48)).convertTo(cv2.CV_32FC3, alpha=alpha), (1.0, 2.0, 3.0)))
for i in range(3):
    [x.download() for x in frame(0.5)]
print("HOT_LAUNCH:", cb.HOT_LAUNCH, "driver address:", hex(cb._driver_launch_address()))
calls, declined = [], []
real = cb.HOT_LAUNCH
def counting(*args):
    r = real(*args)
    (calls if r is not None else declined).append(1)
    return r
cb.HOT_LAUNCH = counting
errs = []
for i, alpha in enumerate([0.5, 0.25, 1.5, 0.5, -0.0, 2.0]):
    got = [x.download() for x in frame(alpha)]
    ref = cv2.split(cv2.subtract(cv2.resize(a, (64, 48)).astype(np.float32) * np.float32(alpha), (1.0, 2.0, 3.0, 0)))
    errs.append(max(float(np.abs(x - y).max()) for x, y in zip(got, ref)))
cb.HOT_LAUNCH = real
print("C launches:", len(calls), "declined:", len(declined), "max err per frame:", errs)
# launch cost: the W2-shaped kernel on a 1-block grid, C path vs Python path, alternated
be = STATE.backend
got = {}
orig = type(be)._launch
def spy(self, fn, grid, args, stream):
    got["a"] = (fn, grid, args, stream)
    return orig(self, fn, grid, args, stream)
type(be)._launch = spy
[x.download() for x in frame(0.5)]
type(be)._launch = orig
fn, grid, args, stream = got["a"]
direct = be._direct[fn]
print("direct mode:", direct.mode, "cufunc address:", direct.cufunc_address, "args:", len(args))
n = 3000
for rnd in range(3):
    for name, hot in (("python", None), ("C", real)):
        cb.HOT_LAUNCH = hot
        be.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            direct.launch((1, 1, 1), args, None)
        t = (time.perf_counter() - t0) / n * 1e6
        be.synchronize()
        print(f"round {rnd}: {name} launch of a 1-block grid: {t:.2f} us")
cb.HOT_LAUNCH = real
