"""resize INTER_CUBIC and INTER_AREA, fused, against CPU cv2.resize: CUBIC's 4x4 taps (A = -0.75),
AREA's block means (whole factors), cell weights (other factors) and area-coefficient LINEAR
(enlarging), over depths x channels x sizes (down, up, mixed, 1x1, odd, dsize and fx/fy)."""
import cv2
import numpy as np
import pytest

import lazycv

from .conftest import assert_close, assert_fused_equals_eager, rand_image, run_both, upload

# (source size, dsize or None, (fx, fy) or None)
SHRINK_AND_GROW = [((13, 17), (9, 7), None), ((13, 17), (31, 29), None), ((5, 6), (12, 3), None),
                   ((1, 1), (3, 4), None), ((40, 41), (17, 23), None), ((8, 11), None, (1 / 3, 0.4)),
                   ((2, 3), (1, 1), None)]


def _resize_both(src, size, scale, interp):
    """(lazycv's, CPU cv2's) for the same arguments."""
    if size is not None:
        got = cv2.cuda.resize(upload(src), size, interpolation=interp).download()
        return got, cv2.resize(src, size, interpolation=interp)
    fx, fy = scale
    got = cv2.cuda.resize(upload(src), (0, 0), fx=fx, fy=fy, interpolation=interp).download()
    return got, cv2.resize(src, (0, 0), fx=fx, fy=fy, interpolation=interp)


def _tolerance(dtype):
    """SPEC §3 for integers (CPU OpenCV sums 8U CUBIC through IPP here); tighter than its 1e-2
    for floats: values are in [-1, 2)."""
    return {np.float32: 1e-4, np.float64: 1e-9}.get(dtype, 1)


@pytest.mark.parametrize("dtype,cn", [(np.uint8, 1), (np.uint8, 3), (np.uint16, 4), (np.int16, 2),
                                      (np.float32, 3), (np.float64, 1)])
def test_cubic_matches_cpu(rng, dtype, cn):
    for src_size, size, scale in SHRINK_AND_GROW:
        src = rand_image(rng, *src_size, cn, dtype)
        got, ref = _resize_both(src, size, scale, cv2.INTER_CUBIC)
        assert_close(got, ref, _tolerance(dtype), what=f"{src_size} -> {size or scale}")
    assert lazycv.stats()["fallbacks"] == 0


# whole factors: (source size, dsize or None, (fx, fy) or None); fx of 1/3 on 8x11 leaves
# partial blocks at the bottom and right
WHOLE = [((12, 9), (3, 4), None), ((8, 11), None, (1 / 3, 1 / 3)), ((6, 6), (3, 3), None)]


@pytest.mark.parametrize("dtype,cn,factor", [(np.uint8, 2, 2), (np.uint16, 1, 3), (np.int16, 3, 2),
                                             (np.float32, 4, 3), (np.float64, 1, 2)])
def test_area_whole_factors_are_block_means(rng, dtype, cn, factor):
    """Integer 2x2 blocks of 1, 3, 4 channels round (sum + 2) >> 2, of 2 channels half to even;
    partial blocks average the pixels that exist: bit-exact for integers."""
    for rows, cols in [(4 * factor, 3 * factor), (4 * factor + 1, 3 * factor + factor - 1), (factor, factor)]:
        src = rand_image(rng, rows, cols, cn, dtype)
        got, ref = _resize_both(src, None, (1 / factor, 1 / factor), cv2.INTER_AREA)
        assert_close(got, ref, 0, rel=1e-6, what=f"{rows}x{cols} / {factor}")
    src = rand_image(rng, 5 * factor, 2 * factor, cn, dtype)
    got, ref = _resize_both(src, (2, 5), None, cv2.INTER_AREA)
    assert_close(got, ref, 0, rel=1e-6)
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("dtype,cn", [(np.uint8, 3), (np.uint16, 1), (np.float32, 1), (np.float64, 2)])
def test_area_fractional_shrink_is_cell_weighted(rng, dtype, cn):
    """Each output pixel the area-weighted sum of the cells it covers; a new scale under the same
    ceiling (2.5 and 2.2 both read at most 4 source pixels an axis) compiles nothing."""
    src = rand_image(rng, 25, 22, cn, dtype)
    got, ref = _resize_both(src, (10, 10), None, cv2.INTER_AREA)           # 2.2 x 2.5
    assert_close(got, ref, 0, rel=1e-6)
    compiles = lazycv.stats()["compiles"]
    for src_size, size, scale in [((23, 21), (9, 10), None), ((7, 10), (4, 3), None), ((30, 31), None, (0.4, 0.45))]:
        src = rand_image(rng, *src_size, cn, dtype)
        got, ref = _resize_both(src, size, scale, cv2.INTER_AREA)
        assert_close(got, ref, 0, rel=1e-6, what=f"{src_size} -> {size or scale}")
    assert lazycv.stats()["compiles"] == compiles
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("dtype,cn", [(np.uint8, 3), (np.uint16, 1), (np.float32, 4), (np.float64, 1)])
def test_area_enlarging_uses_area_coefficients(rng, dtype, cn):
    """Enlarging either way is LINEAR with OpenCV's area coefficients (a whole factor replicates
    pixels); a shrink on the other axis takes them too."""
    for src_size, size, scale in [((4, 5), (15, 8), None), ((7, 6), (9, 21), None), ((1, 1), (3, 2), None),
                                  ((9, 4), (2, 11), None), ((5, 7), None, (1.5, 2.0))]:
        src = rand_image(rng, *src_size, cn, dtype)
        got, ref = _resize_both(src, size, scale, cv2.INTER_AREA)
        assert_close(got, ref, 0, rel=1e-6, what=f"{src_size} -> {size or scale}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.sim
@pytest.mark.parametrize("interp,size,scale", [(cv2.INTER_CUBIC, (3, 4), None), (cv2.INTER_AREA, (2, 2), None),
                                               (cv2.INTER_AREA, None, (0.5, 0.5)), (cv2.INTER_AREA, (9, 7), None)])
def test_small_8u_every_backend(rng, interp, size, scale):
    """8UC2 on a 5x7 source: CUBIC; AREA by 3.5 x 2.5 (cells), by 2 with partial blocks, and
    enlarging: on every backend."""
    src = rand_image(rng, 5, 7, 2, np.uint8)
    got, ref = _resize_both(src, size, scale, interp)
    assert_close(got, ref, 1 if interp == cv2.INTER_CUBIC else 0)
    assert lazycv.stats()["fallbacks"] == 0


def test_fused_equals_eager(rng):
    """A CUBIC resize and an AREA shrink each fused with the conversion after them."""
    src = rand_image(rng, 17, 23, 3, np.uint8)
    g = upload(src)

    def chain():
        up = cv2.cuda.resize(g, (31, 29), interpolation=cv2.INTER_CUBIC).convertTo(cv2.CV_32FC3, alpha=1 / 255)
        down = cv2.cuda.resize(g, (10, 7), interpolation=cv2.INTER_AREA)
        return [up.download(), cv2.cuda.cvtColor(down, cv2.COLOR_BGR2GRAY).download()]
    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)
    ref = cv2.resize(src, (10, 7), interpolation=cv2.INTER_AREA)
    assert_close(fused[1], cv2.cvtColor(ref, cv2.COLOR_BGR2GRAY), 0)
    assert lazycv.stats()["fallbacks"] == 0


def test_area_past_the_tap_limit_falls_back(rng):
    """A cell of more than 400 source pixels runs CPU OpenCV (counted), with its result."""
    src = rand_image(rng, 50, 45, 1, np.uint8)
    got, ref = _resize_both(src, (2, 2), None, cv2.INTER_AREA)
    assert_close(got, ref, 0)
    assert lazycv.stats()["fallbacks"] == 1
