"""C1's CPU kernel on a many-core host: lazycv's bands on Python worker threads against its bands
on native threads (backends/cpu_native.py, the default where lazycv/backends/_bands.c was built)
and against one numba ``prange`` call over the same bands, and CPU OpenCV's chain before and
right after each (spin-waiting threads would slow it). A diagnostic for the CPU backend's
scaling: on Python threads each worker needs the GIL to start its band, so band starts queue up
behind one another. Also the frame's upload copy: numpy's against native bands.

    python bench/c1_bands.py
"""
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402


def median_ms(fn, n=60):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts) * 1e3)


def main():
    import cv2
    import numba
    import lazycv
    from lazycv.runtime import STATE
    frame = peers.make_frames(1, seed=1)[0]
    lazycv.enable(backend="cpu")
    be = STATE.backend
    gpu = cv2.cuda_GpuMat()
    gpu.upload(frame)
    std = cv2.cuda_GpuMat(640, 640, cv2.CV_32FC3)
    std.setTo((0.229, 0.224, 0.225))

    def record():
        r = cv2.cuda.resize(gpu, (640, 640), interpolation=cv2.INTER_LINEAR)
        f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
        return cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, (0.485, 0.456, 0.406)), std))
    launches, real = [], be.launch
    be.launch = lambda compiled, H, W, args, stream=None: (launches.append((compiled, H, W, args)),
                                                           real(compiled, H, W, args, stream))
    for _ in range(3):
        lazycv.materialize(*record())
    be.launch = real
    compiled, H, W, args = launches[-1]
    params = re.search(r"def kernel\(Y0, Y1, ([^)]*)\):", compiled.source).group(1)
    path = os.path.join(tempfile.mkdtemp(), "c1_prange_bands.py")
    with open(path, "w") as f:
        f.write(f"from numba import njit, prange\n\n\n@njit(parallel=True, nogil=True)\n"
                f"def bands(NB, ROWS, {params}):\n    step = (ROWS + NB - 1) // NB\n"
                f"    for i in prange(NB):\n        kernel(i * step, min(i * step + step, ROWS), {params})\n")
    spec = importlib.util.spec_from_file_location("c1_prange_bands", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.kernel = compiled.fn
    t0 = time.perf_counter()
    mod.bands(16, H, H, W, *args)
    print(f"prange wrapper: compile + first call {time.perf_counter() - t0:.2f} s; numba threading layer "
          f"{numba.threading_layer()}, {numba.get_num_threads()} threads")
    chain = lambda: peers.cv2_cpu_chain(frame)  # noqa: E731
    print(f"cv2 chain at the start: {median_ms(chain):.3f} ms")
    native = be._native_bands
    for threads in sorted({1, 2, 4, 8, 16, os.cpu_count()}):
        be.threads, be._pool = threads, None
        be._native_bands = lambda *a: False
        on_pool = median_ms(lambda: be.launch(compiled, H, W, args))
        be._native_bands = native
        on_native = median_ms(lambda: be.launch(compiled, H, W, args))
        print(f"lazycv bands, {threads:2d} threads: Python pool {on_pool:.3f} ms, native {on_native:.3f} ms")
    for where, fn in (("Python pool", lambda *a: False), ("native", native)):
        be._native_bands = fn
        t = median_ms(lambda: be.launch(compiled, H, W, args))
        after = median_ms(lambda: (be.launch(compiled, H, W, args), chain())) - t
        print(f"lazycv bands, {be.threads} threads, {where}: {t:.3f} ms; the cv2 chain right after: {after:.3f} ms")
    be._native_bands = native
    host = frame.reshape(frame.shape[0], -1)
    dst = np.empty_like(host)
    print(f"the frame's upload copy ({host.nbytes >> 20} MiB): numpy {median_ms(lambda: np.copyto(dst, host)):.3f} ms, "
          f"native bands {median_ms(lambda: be._copy(dst, host)):.3f} ms")
    nb = os.cpu_count()
    pr = median_ms(lambda: mod.bands(nb, H, H, W, *args))
    after = median_ms(lambda: (mod.bands(nb, H, H, W, *args), chain())) - pr
    print(f"one prange call, {nb} bands: {pr:.3f} ms; the cv2 chain right after: {after:.3f} ms")
    print(f"cv2 chain at the end: {median_ms(chain):.3f} ms")


if __name__ == "__main__":
    main()
