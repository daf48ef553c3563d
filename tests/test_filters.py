"""cv2.cuda filters (cudafilters' create*Filter objects, bilateralFilter) against CPU OpenCV.

References run CPU OpenCV on an image padded by copyMakeBorder with the filter's border mode
(wider than the kernel), then crop: that is what every border mode means, also for images
narrower than the kernel, and it gives BORDER_CONSTANT its value. Each distinct tap layout,
border mode and type compiles a kernel, so each test loops over sizes inside (sizes and weights
are kernel arguments) and the modes rotate over the filters instead of multiplying them.
"""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv._types import split_type

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

SIZES = [(1, 1), (2, 3), (5, 13), (17, 9)] if not SIM else [(1, 1), (3, 5)]
DT = {cv2.CV_8U: np.uint8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16, cv2.CV_32S: np.int32,
      cv2.CV_32F: np.float32}
R101, REPL, REFL, WRAP, CONST = (cv2.BORDER_REFLECT_101, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT,
                                 cv2.BORDER_WRAP, cv2.BORDER_CONSTANT)


def padded(fn, src, mode, value=0, reach=40, row_mode=None):
    """``fn`` on ``src`` padded by ``reach`` pixels (x by ``row_mode`` if given), cropped back."""
    h, w = src.shape[:2]
    p = cv2.copyMakeBorder(src, reach, reach, 0, 0, mode, value=value)
    p = cv2.copyMakeBorder(p, 0, 0, reach, reach, mode if row_mode is None else row_mode, value=value)
    return fn(p)[reach:reach + h, reach:reach + w]


def image(rng, h, w, depth, cn):
    a = rand_image(rng, h, w, cn, DT[depth])
    if depth == cv2.CV_32S:           # keep float32 sums of a 32S image exact enough to compare
        a = (a >> 12).astype(np.int32)
    return a


def tol(depth, ints, floats=1e-5):
    return ints if depth != cv2.CV_32F else floats


# --------------------------------------------------------------------------------------------
# box, sums


BOX = [(cv2.CV_8UC4, (4, 2), (0, 1), CONST, (9, 200, 0, 300)),
       (cv2.CV_32FC1, (5, 3), (4, 0), WRAP, 0), (cv2.CV_8UC1, (17, 17), (-1, -1), REPL, 0)]


@pytest.mark.parametrize("t, ksize, anchor, mode, value", BOX)
def test_box_filter(rng, t, ksize, anchor, mode, value):
    depth, cn = split_type(t)
    f = cv2.cuda.createBoxFilter(t, -1, ksize, anchor, mode, value)
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        got = f.apply(upload(src)).download()
        ref = padded(lambda p: cv2.blur(p, ksize, anchor=anchor), src, mode, value)
        assert_close(got, ref, tol(depth, 0), what=f"{h}x{w}")


@pytest.mark.sim
def test_box_filter_default_border(rng):
    f = cv2.cuda.createBoxFilter(cv2.CV_8UC1, -1, (3, 3))
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.blur(src, (3, 3)), 0)


@pytest.mark.parametrize("axis", ["row", "column"])
def test_sum_filters(rng, axis):
    make = cv2.cuda.createRowSumFilter if axis == "row" else cv2.cuda.createColumnSumFilter
    f = make(cv2.CV_8UC1, cv2.CV_32FC1, 5, 1, REFL)
    ks = (5, 1) if axis == "row" else (1, 5)
    anchor = (1, 0) if axis == "row" else (0, 1)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        ref = padded(lambda p: cv2.boxFilter(p, cv2.CV_32F, ks, anchor=anchor, normalize=False), src, REFL)
        assert_close(f.apply(upload(src)).download(), ref, 0)


# --------------------------------------------------------------------------------------------
# linear


LINEAR = [(cv2.CV_8U, 4, (3, 3), (0, 0), REPL), (cv2.CV_16U, 1, (5, 4), (-1, -1), R101),
          (cv2.CV_32F, 1, (3, 3), (2, 1), CONST)]


@pytest.mark.parametrize("depth, cn, ksize, anchor, mode", LINEAR)
def test_linear_filter(rng, depth, cn, ksize, anchor, mode):
    kernel = rng.random((ksize[1], ksize[0])).astype(np.float32) - 0.3
    f = cv2.cuda.createLinearFilter(cv2.CV_MAKETYPE(depth, cn), -1, kernel, anchor, mode)
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        got = f.apply(upload(src)).download()
        ref = padded(lambda p: cv2.filter2D(p, -1, kernel, anchor=anchor), src, mode)
        assert_close(got, ref, tol(depth, 1), rel=1e-5, what=f"{h}x{w}")


def test_laplacian(rng):
    """Both apertures share one compiled kernel (the weights are arguments); integers exact."""
    for ksize in (1, 3):
        f = cv2.cuda.createLaplacianFilter(cv2.CV_8UC1, -1, ksize)
        for h, w in SIZES:
            src = image(rng, h, w, cv2.CV_8U, 1)
            assert_close(f.apply(upload(src)).download(), cv2.Laplacian(src, -1, ksize=ksize), 0)
    assert lazycv.stats()["compiles"] <= 1


SEPARABLE = [(cv2.CV_16S, 3, cv2.CV_16S, 7, 3, (2, 1), REFL, REPL), (cv2.CV_8U, 1, cv2.CV_32F, 4, 1, (-1, -1), WRAP, -1),
             (cv2.CV_32S, 4, cv2.CV_32S, 3, 5, (0, 4), CONST, R101)]


@pytest.mark.parametrize("depth, cn, ddepth, kx, ky, anchor, row_mode, col_mode", SEPARABLE)
def test_separable_filter(rng, depth, cn, ddepth, kx, ky, anchor, row_mode, col_mode):
    rk = rng.random(kx).astype(np.float32)
    ck = rng.random(ky).astype(np.float32)
    f = cv2.cuda.createSeparableLinearFilter(cv2.CV_MAKETYPE(depth, cn), ddepth, rk, ck, anchor, row_mode, col_mode)
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        got = f.apply(upload(src)).download()
        if depth == cv2.CV_32S:        # (CPU OpenCV filters 32S in float64 only)
            ref = np.rint(padded(lambda p: cv2.sepFilter2D(p, cv2.CV_64F, rk, ck, anchor=anchor),
                                 src.astype(np.float64), col_mode, row_mode=row_mode)).astype(np.int32)
        else:
            ref = padded(lambda p: cv2.sepFilter2D(p, ddepth, rk, ck, anchor=anchor), src,
                         row_mode if col_mode < 0 else col_mode, row_mode=row_mode)
        assert_close(got, ref, tol(ddepth, 1), rel=1e-5, what=f"{h}x{w}")


GAUSS = [(cv2.CV_8U, 1, (5, 5), 1.1, R101), (cv2.CV_16U, 3, (7, 3), 0, REPL), (cv2.CV_32F, 4, (0, 0), 0.6, CONST)]


@pytest.mark.parametrize("depth, cn, ksize, sigma, mode", GAUSS)
def test_gaussian(rng, depth, cn, ksize, sigma, mode):
    f = cv2.cuda.createGaussianFilter(cv2.CV_MAKETYPE(depth, cn), -1, ksize, sigma, 0, mode)
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        ref = padded(lambda p: cv2.GaussianBlur(p, ksize, sigma), src, mode)
        assert_close(f.apply(upload(src)).download(), ref, tol(depth, 1), rel=1e-5, what=f"{h}x{w}")


def test_gaussian_new_sigma_does_not_compile(rng):
    src = upload(image(rng, 6, 7, cv2.CV_8U, 1))
    cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (5, 5), 1.0).apply(src).download()
    compiles = lazycv.stats()["compiles"]
    got = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (5, 5), 2.5).apply(src).download()
    assert lazycv.stats()["compiles"] == compiles
    assert_close(got, cv2.GaussianBlur(src.download(), (5, 5), 2.5), 1)


@pytest.mark.sim
def test_gaussian_sim(rng):
    f = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (3, 3), 0.8)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.GaussianBlur(src, (3, 3), 0.8), 1)


@pytest.mark.parametrize("depth, ddepth, ksize, mode", [(cv2.CV_8U, cv2.CV_16S, 3, REFL), (cv2.CV_32F, cv2.CV_32F, 5, R101)])
def test_sobel_scharr(rng, depth, ddepth, ksize, mode):
    """dx/dy swap the weights, not the tap layout; Scharr is Sobel's 3x3 layout."""
    for dx, dy in ((1, 0), (0, 1), (1, 1)):
        f = cv2.cuda.createSobelFilter(cv2.CV_MAKETYPE(depth, 1), ddepth, dx, dy, ksize, 0.5, mode)
        for h, w in SIZES:
            src = image(rng, h, w, depth, 1)
            ref = cv2.Sobel(src, ddepth, dx, dy, ksize=ksize, scale=0.5, borderType=mode)
            assert_close(f.apply(upload(src)).download(), ref, tol(ddepth, 0, 1e-4), rel=1e-5, what=f"{dx}{dy} {h}x{w}")
    if ksize == 3:
        src = image(rng, 9, 8, depth, 1)
        f = cv2.cuda.createScharrFilter(cv2.CV_MAKETYPE(depth, 1), ddepth, 0, 1, 1, mode)
        assert_close(f.apply(upload(src)).download(), cv2.Scharr(src, ddepth, 0, 1, borderType=mode), 0)
        f = cv2.cuda.createDerivFilter(cv2.CV_MAKETYPE(depth, 1), ddepth, 1, 0, 3, True, 1, mode)
        kx, ky = cv2.getDerivKernels(1, 0, 3, normalize=True)
        assert_close(f.apply(upload(src)).download(), cv2.sepFilter2D(src, ddepth, kx, ky, borderType=mode), 1)


@pytest.mark.sim
def test_sobel_sim(rng):
    f = cv2.cuda.createSobelFilter(cv2.CV_8UC1, cv2.CV_16S, 1, 0)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.Sobel(src, cv2.CV_16S, 1, 0), 0)


# --------------------------------------------------------------------------------------------
# morphology, rank


@pytest.mark.parametrize("op, t, kernel, anchor, iterations", [
    (cv2.MORPH_ERODE, cv2.CV_8UC1, np.ones((3, 3), np.uint8), (-1, -1), 2),
    (cv2.MORPH_DILATE, cv2.CV_32FC4, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 5)), (0, 3), 1)])
def test_erode_dilate(rng, op, t, kernel, anchor, iterations):
    depth, cn = split_type(t)
    f = cv2.cuda.createMorphologyFilter(op, t, kernel, anchor, iterations)
    cpu = cv2.erode if op == cv2.MORPH_ERODE else cv2.dilate
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        ref = cpu(src, kernel, anchor=anchor, iterations=iterations)
        assert_close(f.apply(upload(src)).download(), ref, 0, what=f"{h}x{w}")


@pytest.mark.parametrize("op", [cv2.MORPH_OPEN, cv2.MORPH_CLOSE, cv2.MORPH_GRADIENT, cv2.MORPH_TOPHAT,
                                cv2.MORPH_BLACKHAT])
def test_morphology_ex(rng, op):
    kernel = np.ones((3, 3), np.uint8)
    f = cv2.cuda.createMorphologyFilter(op, cv2.CV_8UC1, kernel)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.morphologyEx(src, op, kernel), 0, what=f"{h}x{w}")


def test_morphology_zero_iterations_copies(rng):
    src = image(rng, 5, 6, cv2.CV_8U, 1)
    for op in (cv2.MORPH_DILATE, cv2.MORPH_CLOSE, cv2.MORPH_TOPHAT):
        f = cv2.cuda.createMorphologyFilter(op, cv2.CV_8UC1, np.ones((3, 3), np.uint8), iterations=0)
        ref = cv2.morphologyEx(src, op, np.ones((3, 3), np.uint8), iterations=0)
        assert_close(f.apply(upload(src)).download(), ref, 0)


@pytest.mark.sim
def test_erode_sim(rng):
    f = cv2.cuda.createMorphologyFilter(cv2.MORPH_ERODE, cv2.CV_8UC1, None)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.erode(src, None), 0)


@pytest.mark.parametrize("kind, t, mode, value", [("max", cv2.CV_8UC1, CONST, 7), ("min", cv2.CV_8UC4, REFL, 0)])
def test_box_max_min(rng, kind, t, mode, value):
    make = cv2.cuda.createBoxMaxFilter if kind == "max" else cv2.cuda.createBoxMinFilter
    cpu = cv2.dilate if kind == "max" else cv2.erode
    f = make(t, (4, 3), (1, 2), mode, value)
    rect = np.ones((3, 4), np.uint8)
    for h, w in SIZES:
        src = image(rng, h, w, cv2.CV_8U, 1 if t == cv2.CV_8UC1 else 4)
        ref = padded(lambda p: cpu(p, rect, anchor=(1, 2)), src, mode, value)
        assert_close(f.apply(upload(src)).download(), ref, 0, what=f"{h}x{w}")


@pytest.mark.sim
@pytest.mark.parametrize("window", [3] if SIM else [3, 5])
def test_median(rng, window):
    f = cv2.cuda.createMedianFilter(cv2.CV_8UC1, window)
    for h, w in [(3, 3), (4, 7)] if SIM else [(3, 3), (4, 7), (19, 23)]:
        src = image(rng, h, w, cv2.CV_8U, 1)
        assert_close(f.apply(upload(src)).download(), cv2.medianBlur(src, window), 0, what=f"{h}x{w}")


# --------------------------------------------------------------------------------------------
# bilateral


@pytest.mark.sim
@pytest.mark.parametrize("depth, cn, ksize, mode", [(cv2.CV_8U, 1, 5, R101), (cv2.CV_8U, 3, 3, REPL),
                                                     (cv2.CV_32F, 1, 3, CONST)])
def test_bilateral(rng, depth, cn, ksize, mode):
    for h, w in SIZES:
        src = image(rng, h, w, depth, cn)
        sc = 30.0 if depth == cv2.CV_8U else 0.4
        got = cv2.cuda.bilateralFilter(upload(src), ksize, sc, 2.0, borderMode=mode).download()
        ref = cv2.bilateralFilter(src, ksize, sc, 2.0, borderType=mode)
        assert_close(got, ref, tol(depth, 1, 1e-3), what=f"{h}x{w}")


# --------------------------------------------------------------------------------------------
# the object API, fusion, errors


def test_apply_into_dst_on_stream(rng):
    src = image(rng, 8, 11, cv2.CV_8U, 4)
    f = cv2.cuda.createBoxFilter(cv2.CV_8UC4, -1, (3, 3), (-1, -1), R101)
    dst = cv2.cuda_GpuMat(8, 11, cv2.CV_8UC4)
    stream = cv2.cuda.Stream()
    out = f.apply(upload(src), dst, stream)
    assert out is dst
    stream.waitForCompletion()
    assert_close(dst.download(), cv2.blur(src, (3, 3)), 0)
    out = f.apply(upload(src), dst=dst, stream=stream)
    assert out is dst
    assert isinstance(f, cv2.cuda_Filter) and isinstance(f, cv2.cuda.Filter)


def test_roi_is_filtered_as_an_isolated_image(rng):
    whole = image(rng, 12, 14, cv2.CV_8U, 1)
    roi = cv2.cuda_GpuMat(upload(whole), (3, 2, 7, 6))
    got = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (5, 5), 1.1).apply(roi).download()
    assert_close(got, cv2.GaussianBlur(whole[2:8, 3:10].copy(), (5, 5), 1.1), 1)


def test_fused_chain_equals_eager_and_cpu(rng):
    src = image(rng, 13, 17, cv2.CV_8U, 1)

    def chain():
        f = upload(src).convertTo(cv2.CV_32FC1, alpha=1 / 255)
        g = cv2.cuda.createGaussianFilter(cv2.CV_32FC1, -1, (5, 5), 1.2).apply(f)
        s = cv2.cuda.createSobelFilter(cv2.CV_32FC1, -1, 1, 0).apply(g)
        return cv2.cuda.abs(s).download()
    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)
    ref = np.abs(cv2.Sobel(cv2.GaussianBlur(src.astype(np.float32) / 255, (5, 5), 1.2), -1, 1, 0))
    assert_close(fused, ref, 1e-5, rel=1e-5)


def test_filter_kernels_are_cut_where_taps_meet():
    """Row pass -> column pass: the planner writes the row pass (both read many taps)."""
    src = upload(np.zeros((6, 9), np.uint8))
    out = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (3, 3), 1).apply(src)
    assert lazycv.explain(out).count("\nkernel ") == 2


@pytest.mark.parametrize("call", [
    lambda: cv2.cuda.createBoxFilter(cv2.CV_16UC1, -1, (3, 3)),
    lambda: cv2.cuda.createBoxFilter(cv2.CV_8UC1, -1, (3, 3), (3, 0)),
    lambda: cv2.cuda.createBoxFilter(cv2.CV_8UC1, -1, (3, 3), (-1, -1), cv2.BORDER_TRANSPARENT),
    lambda: cv2.cuda.createLinearFilter(cv2.CV_8UC3, -1, np.ones((3, 3))),
    lambda: cv2.cuda.createLinearFilter(cv2.CV_8UC1, cv2.CV_32F, np.ones((3, 3))),
    lambda: cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (4, 4), 1),
    lambda: cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (0, 0), 0),
    lambda: cv2.cuda.createGaussianFilter(cv2.CV_8UC1, -1, (33, 33), 5),
    lambda: cv2.cuda.createGaussianFilter(cv2.CV_64FC1, -1, (3, 3), 1),
    lambda: cv2.cuda.createSobelFilter(cv2.CV_8UC1, -1, 1, 0, 4),
    lambda: cv2.cuda.createSobelFilter(cv2.CV_8UC2, -1, 1, 0),
    lambda: cv2.cuda.createLaplacianFilter(cv2.CV_8UC1, -1, 5),
    lambda: cv2.cuda.createSeparableLinearFilter(cv2.CV_8UC1, -1, np.ones(33), np.ones(3)),
    lambda: cv2.cuda.createMorphologyFilter(99, cv2.CV_8UC1, np.ones((3, 3))),
    lambda: cv2.cuda.createMorphologyFilter(cv2.MORPH_ERODE, cv2.CV_16UC1, np.ones((3, 3))),
    lambda: cv2.cuda.createBoxMaxFilter(cv2.CV_32FC1, (3, 3)),
    lambda: cv2.cuda.createMedianFilter(cv2.CV_8UC3, 3),
    lambda: cv2.cuda.createMedianFilter(cv2.CV_8UC1, 1),
    lambda: cv2.cuda.createRowSumFilter(cv2.CV_8UC1, cv2.CV_8UC1, 3),
    lambda: cv2.cuda.bilateralFilter(upload(np.zeros((4, 4), np.int32)), 3, 1, 1),
    lambda: cv2.cuda.bilateralFilter(upload(np.zeros((4, 4, 2), np.uint8)), 3, 1, 1),
    lambda: cv2.cuda.bilateralFilter(upload(np.zeros((4, 4), np.uint8)), 3, 1, 1, borderMode=99),
    lambda: cv2.cuda.createBoxFilter(cv2.CV_8UC1, -1, (3, 3)).apply(upload(np.zeros((4, 4), np.float32))),
    lambda: cv2.cuda.createMedianFilter(cv2.CV_8UC1, 7).apply(upload(np.zeros((2, 9), np.uint8))),
])
def test_bad_arguments_raise_cv_error(call):
    with pytest.raises(cv2.error):
        call()
