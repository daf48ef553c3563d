"""resize's reliability cases (issue #20): inf/NaN in float LINEAR, CPU OpenCV's area path for
8U halving, and sizes that cannot be allocated, each against CPU OpenCV."""
import cv2
import numpy as np
import pytest

import lazycv

from .conftest import assert_close, rand_image, upload

INF_IMAGE = np.array([[1.5, np.inf, 2], [3, 4, 5]], np.float32)


@pytest.mark.sim
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_keeps_inf_out_of_zero_weights(dtype):
    """A neighbour of weight 0 does not enter the sum (inf * 0 is NaN): a resize to the same
    size copies, as CPU OpenCV does, whether dsize or fx, fy give that size."""
    a = INF_IMAGE.astype(dtype)
    ref = cv2.resize(a, (3, 2))
    assert np.isinf(ref[0, 1]) and ref[0, 0] == 1.5
    assert_close(cv2.cuda.resize(upload(a), (3, 2)).download(), ref)
    assert_close(cv2.cuda.resize(upload(a), (0, 0), fx=1.0, fy=1.0).download(), ref)
    # the taps of weight 0 at exact positions: a NaN beside them stays out as well
    b = np.array([[np.nan, 7, 8, np.nan], [1, 2, 3, 4]], dtype)
    got = cv2.cuda.resize(upload(b), (4, 2)).download()
    assert_close(got, b)


@pytest.mark.sim
@pytest.mark.parametrize("cn", [1, 3])
def test_8u_linear_halving_is_cpu_area_path(rng, cn):
    """CPU OpenCV resizes 8U by exactly 2 both ways through INTER_AREA's fast path even for
    INTER_LINEAR ((sum + 2) >> 2 per 2x2 block; the partial blocks of an odd size average what
    exists): bit-exact, fused (no fallback)."""
    for h, w in [(7, 9), (3, 3), (6, 8), (5, 2), (2, 3)]:
        src = rand_image(rng, h, w, cn, np.uint8)
        for interp in (cv2.INTER_LINEAR, cv2.INTER_AREA):
            ref = cv2.resize(src, (0, 0), fx=0.5, fy=0.5, interpolation=interp)
            got = cv2.cuda.resize(upload(src), (0, 0), fx=0.5, fy=0.5, interpolation=interp).download()
            assert_close(got, ref, 0, what=f"{h}x{w} interp {interp}")
    src = rand_image(rng, 6, 8, cn, np.uint8)
    assert_close(cv2.cuda.resize(upload(src), (4, 3)).download(), cv2.resize(src, (4, 3)), 0)
    assert lazycv.stats()["fallbacks"] == 0


def test_linear_halving_of_other_depths_stays_linear(rng):
    """Only 8U takes the area path; 16U at scale 2 interpolates (checked to 1, as SPEC §3)."""
    src = rand_image(rng, 7, 9, 1, np.uint16)
    got = cv2.cuda.resize(upload(src), (0, 0), fx=0.5, fy=0.5).download()
    assert_close(got, cv2.resize(src, (0, 0), fx=0.5, fy=0.5), 1)


def test_sizes_past_int_raise_at_the_call():
    g = upload(np.zeros((2, 3), np.uint8))
    with pytest.raises(cv2.error):
        cv2.resize(np.zeros((2, 3), np.uint8), (2 ** 31, 2))          # OpenCV's own binding
    with pytest.raises(cv2.error):
        cv2.cuda.resize(g, (2 ** 31, 2))
    with pytest.raises(cv2.error):
        cv2.cuda.resize(g, (0, 0), fx=2.0 ** 31, fy=1.0)


def test_output_past_available_memory_raises_at_the_call():
    """An output the device cannot hold is a cv2.error at the call (not a MemoryError, nor a
    process killed at a later flush)."""
    g = upload(np.zeros((2, 3, 3), np.uint8))
    with pytest.raises(cv2.error, match="GiB"):
        cv2.cuda.resize(g, (2 ** 31 - 1, 2 ** 20))
    free = lazycv.runtime.memory_info()[0]
    side = int((free * 1.5 / 3) ** 0.5) + 1           # more than what is free, less than int
    with pytest.raises(cv2.error, match="GiB"):
        cv2.cuda.resize(g, (side, side))
    assert_close(cv2.cuda.resize(g, (4, 3)).download(), cv2.resize(g.download(), (4, 3)), 0)
