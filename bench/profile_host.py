"""Where host time goes: cProfile of the demo pipeline (fused), W4 and W3, on whatever backend
is active. Prints the top functions by internal time.

    python bench/profile_host.py
"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    import cv2
    import lazycv
    from lazycv.__main__ import STD, pipeline
    import w34
    lazycv.enable()
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    gpu = cv2.cuda_GpuMat()
    gpu.upload(frame)
    std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
    std.setTo(STD)
    rect = (240, 60, 1440, 960)
    for _ in range(3):
        pipeline(cv2, gpu, rect, std)
    t0 = time.perf_counter()
    for _ in range(10):
        pipeline(cv2, gpu, rect, std)
    print(f"demo fused: {(time.perf_counter() - t0) * 100:.2f} ms/frame on {lazycv.backend()}")
    cProfile.runctx("for _ in range(10): pipeline(cv2, gpu, rect, std)", globals(), locals(), "/tmp/demo.prof")
    pstats.Stats("/tmp/demo.prof").sort_stats("tottime").print_stats(12)
    f1080 = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    fn4 = w34.w4_lazycv(f1080, True)
    fn4()
    fn4()
    cProfile.runctx("for _ in range(20): fn4()", globals(), locals(), "/tmp/w4.prof")
    print("W4 fused, 20 frames:")
    pstats.Stats("/tmp/w4.prof").sort_stats("tottime").print_stats(14)
    f4k = rng.integers(0, 256, (2160, 3840, 3), dtype=np.uint8)
    fn = w34.w3_lazycv(f4k, w34.rois_for(50, 2160, 3840), True)
    fn()
    fn()
    cProfile.runctx("for _ in range(5): fn()", globals(), locals(), "/tmp/w3.prof")
    pstats.Stats("/tmp/w3.prof").sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
