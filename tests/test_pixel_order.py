"""Every way a generated CUDA thread can walk its pixels (backends/cuda.py: PIXEL_ORDER and
PIXELS_PER_THREAD) computes the same pixels as CPU OpenCV — including the last pixels of rows
whose width is not a multiple of a block's span, which the interleaved form computes at a
clamped column and does not store. Simulator and GPU runs only (the CPU backend has its own
loops)."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv import runtime
from lazycv.backends import cuda as cuda_backend
from lazycv.plancache import PlanCache

from .conftest import BACKEND, assert_close, rand_image, upload

pytestmark = pytest.mark.sim
if not BACKEND.startswith("cuda"):
    pytest.skip("the CUDA code generator's thread layouts (simulator and GPU runs)", allow_module_level=True)


@pytest.fixture
def pixel_order(request, monkeypatch):
    """Generate kernels with the given (order, pixels per thread), from empty caches."""
    order, px = request.param
    monkeypatch.setattr(cuda_backend, "PIXEL_ORDER", order)
    monkeypatch.setattr(cuda_backend, "PIXELS_PER_THREAD", px)
    runtime.STATE.caches.clear()
    runtime.STATE.plans = PlanCache()
    yield order, px
    runtime.STATE.caches.clear()          # kernels of this layout must not serve later tests
    runtime.STATE.plans = PlanCache()


LAYOUTS = [("loop", 4), ("unrolled", 4), ("interleaved", 4), ("interleaved", 3), ("interleaved", 2),
           ("loop", 1), ("loop", 8)]


@pytest.mark.parametrize("pixel_order", LAYOUTS, indirect=True, ids=lambda p: f"{p[0]}-{p[1]}px")
def test_w1_chain_matches_opencv_at_row_ends(rng, pixel_order):
    src = rand_image(rng, 9, 23, 3, np.uint8)
    g = upload(src)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    for w, h in ((5, 6), (13, 5), (17, 9)):  # 17 px: a thread of 4 px at 32 apart has one in range
        r = cv2.cuda.cvtColor(cv2.cuda.resize(g, (w, h)), cv2.COLOR_BGR2RGB)
        f = cv2.cuda.divide(cv2.cuda.subtract(r.convertTo(cv2.CV_32FC3, alpha=1 / 255), mean), std)
        got = np.dstack([p.download() for p in cv2.cuda.split(f)])
        ref = cv2.cvtColor(cv2.resize(src, (w, h)), cv2.COLOR_BGR2RGB).astype(np.float32) / 255
        ref = ((ref - np.float32(mean)) / np.float32(std)).astype(np.float32)
        assert_close(got, ref, tol=1e-5, what=f"W1 to {w}x{h}")


@pytest.mark.parametrize("pixel_order", LAYOUTS, indirect=True, ids=lambda p: f"{p[0]}-{p[1]}px")
def test_roi_batch_and_in_place_write_match_opencv(rng, pixel_order):
    """A batched launch over crops of several widths, and an op writing into its own input."""
    src = rand_image(rng, 12, 40, 3, np.uint8)
    g = upload(src)
    rois = [(0, 0, 40, 12), (3, 2, 1, 1), (5, 1, 33, 7), (39, 11, 1, 1)]
    outs = [cv2.cuda.cvtColor(cv2.cuda_GpuMat(g, (x, y, w, h)), cv2.COLOR_BGR2GRAY) for x, y, w, h in rois]
    lazycv.materialize(*outs)
    for (x, y, w, h), o in zip(rois, outs):
        assert_close(o.download(), cv2.cvtColor(np.ascontiguousarray(src[y:y + h, x:x + w]), cv2.COLOR_BGR2GRAY),
                     tol=1, what=f"roi {(x, y, w, h)}")
    a = upload(rand_image(rng, 5, 37, 1, np.float32))
    before = a.download()
    cv2.cuda.multiply(a, 2.0, dst=a)
    assert_close(a.download(), before * np.float32(2.0), tol=0, what="in place")
