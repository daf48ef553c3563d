"""Pointwise ops (threshold, compare, inRange, bitwise, shifts, math, polar, LUT, gamma, alphaComp,
blendLinear, swapChannels) against CPU OpenCV, fused == eager, one kernel for a chain, errors."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv.ops.pointwise import ALPHA_OPS, alpha_scale, gamma_table

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

SIZES = [(1, 1), (3, 5), (7, 13)] if not SIM else [(1, 1), (2, 3)]
INT_DEPTHS = {cv2.CV_8U: np.uint8, cv2.CV_8S: np.int8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16,
              cv2.CV_32S: np.int32}
FLOAT_DEPTHS = {cv2.CV_32F: np.float32, cv2.CV_64F: np.float64}
THRESH_TYPES = [cv2.THRESH_BINARY, cv2.THRESH_BINARY_INV, cv2.THRESH_TRUNC, cv2.THRESH_TOZERO,
                cv2.THRESH_TOZERO_INV]


def _images(rng, dtype, cn, sizes=SIZES):
    return [rand_image(rng, h, w, cn, dtype) for h, w in sizes]


# ----------------------------------------------------------------------------------- threshold

@pytest.mark.sim
@pytest.mark.parametrize("ttype", THRESH_TYPES)
def test_threshold_8u_32f(rng, ttype):
    for dtype, cn in ((np.uint8, 1), (np.float32, 3)):
        for src in _images(rng, dtype, cn):
            for thresh, maxval in ((100.7, 200.6), (-3.0, 17.5), (300.0, 255.0)) if dtype == np.uint8 else \
                    ((0.25, 1.5), (0.7, -2.0)):
                retval, got = cv2.cuda.threshold(upload(src), thresh, maxval, ttype)
                ref_ret, ref = cv2.threshold(src, thresh, maxval, ttype)
                assert retval == ref_ret
                assert_close(got.download(), ref, 0, what=f"{src.dtype} t={thresh}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.float64])
def test_threshold_other_depths(rng, dtype):
    for ttype in THRESH_TYPES:
        for src in _images(rng, dtype, 1):
            thresh = 0.3 if dtype == np.float64 else -40000.5 if dtype == np.int16 else 1234.5
            retval, got = cv2.cuda.threshold(upload(src), thresh, 999.4, ttype)
            ref_ret, ref = cv2.threshold(src, thresh, 999.4, ttype)
            assert retval == ref_ret
            assert_close(got.download(), ref, 0)


def test_threshold_8s_32s_follow_the_integer_rule(rng):
    """OpenCV's CUDA module takes 8S and 32S (CPU OpenCV does not): floored threshold, rounded maxval."""
    for dtype in (np.int8, np.int32):
        src = rand_image(rng, 4, 9, 1, dtype)
        retval, got = cv2.cuda.threshold(upload(src), -0.5, 7.6, cv2.THRESH_BINARY)
        assert retval == -1.0
        np.testing.assert_array_equal(got.download(), np.where(src > -1, 8, 0).astype(dtype))


def test_threshold_otsu_falls_back(rng):
    src = rand_image(rng, 9, 11, 1, np.uint8)
    retval, got = cv2.cuda.threshold(upload(src), 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    ref_ret, ref = cv2.threshold(src, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    assert retval == ref_ret
    np.testing.assert_array_equal(got.download(), ref)
    assert lazycv.stats()["fallbacks"] == 1


def test_threshold_forms(rng):
    src = rand_image(rng, 3, 4, 1, np.uint8)
    dst = cv2.cuda_GpuMat()
    retval, out = cv2.cuda.threshold(upload(src), 128, 255, cv2.THRESH_BINARY, dst, cv2.cuda.Stream())
    assert out is dst and retval == 128
    _, out2 = cv2.cuda.threshold(src=upload(src), thresh=128, maxval=255, type=cv2.THRESH_BINARY)
    np.testing.assert_array_equal(out2.download(), dst.download())


# ------------------------------------------------------------------------------------- compare

_NP_CMP = {cv2.CMP_EQ: np.equal, cv2.CMP_GT: np.greater, cv2.CMP_GE: np.greater_equal, cv2.CMP_LT: np.less,
           cv2.CMP_LE: np.less_equal, cv2.CMP_NE: np.not_equal}

@pytest.mark.sim
@pytest.mark.parametrize("cmpop", [cv2.CMP_EQ, cv2.CMP_GT, cv2.CMP_GE, cv2.CMP_LT, cv2.CMP_LE, cv2.CMP_NE])
def test_compare_images_and_scalars(rng, cmpop):
    for dtype, cn in ((np.uint8, 1), (np.float32, 3)):
        for a, b in zip(_images(rng, dtype, cn), _images(rng, dtype, cn)):
            b.flat[::2] = a.flat[::2]                   # ties
            got = cv2.cuda.compare(upload(a), upload(b), cmpop).download()
            assert_close(got, cv2.compare(a, b, cmpop), 0)
            s = 100.5 if dtype == np.uint8 else 0.25
            got = cv2.cuda.compare(upload(a), s, cmpop).download()
            # (CPU compare refuses a number beside some multi-channel shapes: numpy's operator)
            assert_close(got, (_NP_CMP[cmpop](a, s) * 255).astype(np.uint8), 0, what=f"scalar {s}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int16, np.int32, np.float64])
def test_compare_other_depths(rng, dtype):
    a, b = rand_image(rng, 5, 7, 1, dtype), rand_image(rng, 5, 7, 1, dtype)
    for cmpop in _NP_CMP:
        for s in (7, 7.5, -3.5, 1e12):
            assert_close(cv2.cuda.compare(upload(a), s, cmpop).download(), cv2.compare(a, s, cmpop), 0,
                         what=f"{cmpop} {s}")
    if dtype == np.int32:
        for cmpop in _NP_CMP:
            assert_close(cv2.cuda.compare(upload(a), upload(b), cmpop).download(), cv2.compare(a, b, cmpop), 0)


def test_compare_with_scalar_is_per_channel(rng):
    a = rand_image(rng, 4, 6, 3, np.uint8)
    got = cv2.cuda.compareWithScalar(upload(a), (50, 100.5, 200), cv2.CMP_GT).download()
    ref = (a > np.array([50, 100.5, 200])).astype(np.uint8) * 255
    np.testing.assert_array_equal(got, ref)
    got = cv2.cuda.compareWithScalar(upload(a), 100, cv2.CMP_LE).download()       # (100, 0, 0, 0)
    np.testing.assert_array_equal(got, (a <= np.array([100, 0, 0])).astype(np.uint8) * 255)
    got = cv2.cuda.compare(5.5, upload(a), cv2.CMP_LT).download()                # scalar first
    np.testing.assert_array_equal(got, (5.5 < a).astype(np.uint8) * 255)


# ------------------------------------------------------------------------------------- inRange

@pytest.mark.sim
def test_in_range(rng):
    for dtype, cn, lo, hi in ((np.uint8, 3, (4.5, 20, 30), (200, 220.5, 255)), (np.float32, 1, 0.0, 1.0),
                              (np.int16, 4, (-1000, -2000, 0, 5), (1000, 3000, 30000, 20000))):
        for src in _images(rng, dtype, cn):
            got = cv2.cuda.inRange(upload(src), lo, hi).download()
            assert_close(got, cv2.inRange(src, lo, hi), 0, what=str(dtype))


# ------------------------------------------------------------------------------------- bitwise

@pytest.mark.sim
@pytest.mark.parametrize("name", ["and", "or", "xor"])
def test_bitwise(rng, name):
    cuda_fn, cpu_fn = getattr(cv2.cuda, f"bitwise_{name}"), getattr(cv2, f"bitwise_{name}")
    for dtype, cn in ((np.uint8, 3), (np.int16, 1)):
        for a, b in zip(_images(rng, dtype, cn), _images(rng, dtype, cn)):
            assert_close(cuda_fn(upload(a), upload(b)).download(), cpu_fn(a, b), 0)
            s = (12, 200, 77) if cn == 3 else -1234
            np_fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]
            assert_close(cuda_fn(upload(a), s).download(), np_fn(a, np.array(s, dtype)), 0)
    assert lazycv.stats()["fallbacks"] == 0


def test_bitwise_not_mask_and_depths(rng):
    for dtype in (np.uint8, np.int8, np.uint16, np.int16, np.int32):
        a = rand_image(rng, 5, 6, 1, dtype)
        assert_close(cv2.cuda.bitwise_not(upload(a)).download(), cv2.bitwise_not(a), 0, what=str(dtype))
    a, b = rand_image(rng, 5, 6, 3, np.uint8), rand_image(rng, 5, 6, 3, np.uint8)
    mask = (rand_image(rng, 5, 6, 1, np.uint8) > 128).astype(np.uint8)
    got = cv2.cuda.bitwise_and(upload(a), upload(b), mask=upload(mask)).download()
    np.testing.assert_array_equal(got, cv2.bitwise_and(a, b, mask=mask))
    got = cv2.cuda.bitwise_xor_with_scalar(upload(a), (3, 5, 7), None, upload(mask)).download()
    np.testing.assert_array_equal(got, np.where(mask[..., None] != 0, a ^ np.array([3, 5, 7], np.uint8), 0))
    got = cv2.cuda.bitwise_or_with_scalar(upload(a), 9).download()           # (9, 0, 0, 0)
    np.testing.assert_array_equal(got, a | np.array([9, 0, 0], np.uint8))
    assert lazycv.stats()["fallbacks"] == 0


def test_bitwise_float_falls_back(rng):
    a, b = rand_image(rng, 3, 4, 1, np.float32), rand_image(rng, 3, 4, 1, np.float32)
    got = cv2.cuda.bitwise_and(upload(a), upload(b)).download()
    np.testing.assert_array_equal(got.view(np.uint32), cv2.bitwise_and(a, b).view(np.uint32))
    assert lazycv.stats()["fallbacks"] == 1


# -------------------------------------------------------------------------------------- shifts

@pytest.mark.sim
def test_shifts(rng):
    for dtype, cn in ((np.uint8, 3), (np.int16, 1), (np.int32, 4)):
        shifts = [1, 3, 7, 0][:cn]
        for src in _images(rng, dtype, cn):
            got = cv2.cuda.rshift(upload(src), shifts).download()
            np.testing.assert_array_equal(got, src >> np.array(shifts, dtype))
            if dtype != np.int16:
                got = cv2.cuda.lshift(upload(src), shifts).download()
                np.testing.assert_array_equal(got, src << np.array(shifts, dtype))


# --------------------------------------------------------------------------------------- math

@pytest.mark.sim
@pytest.mark.parametrize("fn", ["sqrt", "exp", "log"])
def test_math_float(rng, fn):
    for dtype, cn in ((np.float32, 1),) + (((np.float64, 3),) if fn == "exp" else ()):
        for src in _images(rng, dtype, cn):
            src = np.abs(src) + (0.01 if fn == "log" else 0)
            got = getattr(cv2.cuda, fn)(upload(src)).download()
            assert_close(got, getattr(cv2, fn)(src), 1e-6, rel=1e-5, what=str(dtype))


def test_math_ieee_edges():
    src = np.array([[-1.0, 0.0, 1.0, 100.0]], np.float32)
    for fn in ("sqrt", "log", "exp"):
        np.testing.assert_allclose(getattr(cv2.cuda, fn)(upload(src)).download(), getattr(cv2, fn)(src),
                                   rtol=1e-5, atol=1e-6, err_msg=fn)


def test_math_integer_depths():
    """OpenCV's CUDA module only: computed in float32, rounded and saturated (NaN gives 0)."""
    src = np.array([[0, 1, 2, 3, 200, 255]], np.uint8)
    np.testing.assert_array_equal(cv2.cuda.sqrt(upload(src)).download(),
                                  np.rint(np.sqrt(src.astype(np.float32))).astype(np.uint8))
    s16 = np.array([[-4, 0, 4, 30000]], np.int16)
    np.testing.assert_array_equal(cv2.cuda.sqrt(upload(s16)).download(), np.array([[0, 0, 2, 173]], np.int16))


@pytest.mark.parametrize("power", [2, 3, -1, -2, 0.5, 2.5])
def test_pow(rng, power):
    f = rand_image(rng, 5, 7, 1, np.float32)
    assert_close(cv2.cuda.pow(upload(f), power).download(), cv2.pow(f, power), 1e-6, rel=1e-5)
    if power == int(power):
        # CPU OpenCV's integer pow (fractional powers of integers crash it: not compared)
        s = np.array([[-3, -2, -1, 0, 1, 2, 3, 17, 200]], np.int16)
        assert_close(cv2.cuda.pow(upload(s), power).download(), cv2.pow(s, power), 0, what=f"16S ^ {power}")


@pytest.mark.sim
def test_abs_sqr(rng):
    for dtype, cn in ((np.int8, 1), (np.float32, 3)):
        for src in _images(rng, dtype, cn):
            assert_close(cv2.cuda.abs(upload(src)).download(), cv2.absdiff(src, np.zeros_like(src)), 0)
            assert_close(cv2.cuda.sqr(upload(src)).download(), cv2.multiply(src, src), 0, rel=1e-6)


@pytest.mark.sim
def test_add_weighted(rng):
    for dtype, cn in ((np.uint8, 3), (np.float32, 1)):
        for a, b in zip(_images(rng, dtype, cn), _images(rng, dtype, cn)):
            got = cv2.cuda.addWeighted(upload(a), 0.3, upload(b), 0.7, 2.25).download()
            ref = cv2.addWeighted(a, 0.3, b, 0.7, 2.25)
            assert_close(got, ref, 1 if dtype == np.uint8 else 1e-6, rel=1e-5)
    a, b = rand_image(rng, 4, 5, 1, np.uint8), rand_image(rng, 4, 5, 1, np.int16)
    got = cv2.cuda.addWeighted(upload(a), 1.5, upload(b), -0.5, 1.0, dtype=cv2.CV_32F).download()
    assert_close(got, cv2.addWeighted(a, 1.5, b, -0.5, 1.0, dtype=cv2.CV_32F), 1e-5, rel=1e-5)


# -------------------------------------------------------------------------------------- polar

@pytest.mark.sim
@pytest.mark.parametrize("degrees", [False, True])
def test_polar(rng, degrees):
    for dtype in (np.float32, np.float64):
        for x, y in zip(_images(rng, dtype, 1), _images(rng, dtype, 1)):
            gx, gy = upload(x), upload(y)
            tol = 1e-2 if degrees else 1e-3                     # OpenCV's CUDA tests (CPU's atan)
            if dtype == np.float32:
                _check_magnitude_and_phase(x, y, gx, gy, degrees, tol)
            mag, ang = cv2.cuda.cartToPolar(gx, gy, angleInDegrees=degrees)
            ref_mag, ref_ang = cv2.cartToPolar(x, y, angleInDegrees=degrees)
            assert_close(mag.download(), ref_mag, 1e-6, rel=1e-5)
            assert_close(ang.download(), ref_ang, tol)
            px, py = cv2.cuda.polarToCart(gx, gy, angleInDegrees=degrees)
            ref_x, ref_y = cv2.polarToCart(x, y, angleInDegrees=degrees)
            assert_close(px.download(), ref_x, 1e-5, rel=1e-5)
            assert_close(py.download(), ref_y, 1e-5, rel=1e-5)


def _check_magnitude_and_phase(x, y, gx, gy, degrees, tol):
    assert_close(cv2.cuda.magnitude(gx, gy).download(), cv2.magnitude(x, y), 1e-6, rel=1e-5)
    assert_close(cv2.cuda.magnitudeSqr(gx, gy).download(), x * x + y * y, 1e-6, rel=1e-5)
    assert_close(cv2.cuda.phase(gx, gy, angleInDegrees=degrees).download(),
                 cv2.phase(x, y, angleInDegrees=degrees), tol)


def test_magnitude_of_interleaved(rng):
    xy = rand_image(rng, 4, 6, 2, np.float32)
    got = cv2.cuda.magnitude(upload(xy)).download()
    assert_close(got, cv2.magnitude(xy[..., 0].copy(), xy[..., 1].copy()), 1e-6, rel=1e-5)


def test_cart_to_polar_is_one_kernel(rng):
    x, y = rand_image(rng, 6, 8, 1, np.float32), rand_image(rng, 6, 8, 1, np.float32)
    gx, gy = upload(x), upload(y)
    lazycv.reset_stats()
    mag, ang = cv2.cuda.cartToPolar(gx, gy)
    lazycv.materialize(mag, ang)
    assert lazycv.stats()["kernels_launched"] == 1


# ---------------------------------------------------------------------------- LUT, gamma, etc.

@pytest.mark.sim
def test_lookup_table(rng):
    lut1 = rng.integers(0, 256, 256).astype(np.uint8)
    lut3 = rng.integers(0, 256, (1, 256, 3)).astype(np.uint8)
    for src in _images(rng, np.uint8, 3):
        got = cv2.cuda.createLookUpTable(lut1).transform(upload(src)).download()
        np.testing.assert_array_equal(got, cv2.LUT(src, lut1))
        got = cv2.cuda.createLookUpTable(upload(lut3)).transform(upload(src)).download()
        np.testing.assert_array_equal(got, cv2.LUT(src, lut3))


def test_lookup_table_new_values_do_not_recompile(rng):
    src = rand_image(rng, 5, 6, 1, np.uint8)
    g = upload(src)
    for k in range(3):
        lut = np.roll(np.arange(256, dtype=np.uint8), 17 * k)
        np.testing.assert_array_equal(cv2.cuda.createLookUpTable(lut).transform(g).download(), cv2.LUT(src, lut))
        if k == 0:
            compiles = lazycv.stats()["compiles"]
    assert lazycv.stats()["compiles"] == compiles


def test_gamma_correction(rng):
    for cn in (3, 4):
        src = rand_image(rng, 5, 7, cn, np.uint8)
        for forward in (True, False):
            got = cv2.cuda.gammaCorrection(upload(src), forward=forward).download()
            ref = src.copy()
            ref[..., :3] = gamma_table(forward)[src[..., :3]]
            np.testing.assert_array_equal(got, ref)
    t = gamma_table(True)
    assert t[0] == 0 and t[255] == 255 and t[128] > 128       # forward brightens mid-tones


def _alpha_comp_reference(a, b, op):
    """NPP's Porter-Duff alpha composition with numpy, in double."""
    s = alpha_scale({np.uint8: cv2.CV_8U, np.uint16: cv2.CV_16U, np.float32: cv2.CV_32F}[a.dtype.type])
    p, q = a.astype(np.float64), b.astype(np.float64)
    a1, a2 = p[..., 3:] / s, q[..., 3:] / s
    if op == ALPHA_OPS["ALPHA_PREMUL"]:
        out = np.concatenate([p[..., :3] * a1, p[..., 3:]], axis=2)
    else:
        f1, f2 = {0: (1, 1 - a1), 1: (a2, 0), 2: (1 - a2, 0), 3: (a2, 1 - a1), 4: (1 - a2, 1 - a1),
                  5: (1, 1)}[op % 6]
        w1, w2 = (f1, f2) if op >= 6 else (a1 * f1, a2 * f2)
        out = np.concatenate([p[..., :3] * w1 + q[..., :3] * w2, (a1 * f1 + a2 * f2) * s], axis=2)
    if a.dtype.kind == "f":
        return out.astype(a.dtype)
    return np.clip(np.rint(out), 0, np.iinfo(a.dtype).max).astype(a.dtype)


def test_alpha_comp(rng):
    for dtype in (np.uint8, np.uint16, np.float32):
        a, b = rand_image(rng, 4, 5, 4, dtype), rand_image(rng, 4, 5, 4, dtype)
        if dtype == np.float32:
            a, b = np.abs(a) / 2, np.abs(b) / 2
        for op in range(13):
            got = cv2.cuda.alphaComp(upload(a), upload(b), op).download()
            assert_close(got, _alpha_comp_reference(a, b, op), 1 if dtype != np.float32 else 1e-5, rel=1e-5,
                         what=f"{dtype} op {op}")


@pytest.mark.sim
def test_blend_linear(rng):
    for dtype, cn in ((np.uint8, 3), (np.float32, 1)):
        for a, b in zip(_images(rng, dtype, cn), _images(rng, dtype, cn)):
            w1 = rng.random(a.shape[:2]).astype(np.float32)
            w2 = rng.random(a.shape[:2]).astype(np.float32)
            got = cv2.cuda.blendLinear(upload(a), upload(b), upload(w1), upload(w2)).download()
            assert_close(got, cv2.blendLinear(a, b, w1, w2), 1 if dtype == np.uint8 else 1e-5, rel=1e-5)


def test_swap_channels_in_place(rng):
    src = rand_image(rng, 3, 5, 4, np.uint8)
    g = upload(src)
    assert cv2.cuda.swapChannels(g, (2, 1, 0, 3)) is None
    np.testing.assert_array_equal(g.download(), src[..., [2, 1, 0, 3]])


# ------------------------------------------------------------------------------------ fusion

def _chain(src):
    g = cv2.cuda.resize(upload(src), (9, 7))
    gray = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY)
    _, t = cv2.cuda.threshold(gray, 90.5, 255, cv2.THRESH_BINARY)
    c = cv2.cuda.compare(gray, 180, cv2.CMP_LT)
    m = cv2.cuda.bitwise_and(t, c)
    inr = cv2.cuda.inRange(g, (10, 20, 30), (250, 240, 230))
    f = cv2.cuda.addWeighted(m, 0.5, inr, 0.25, 3.0, dtype=cv2.CV_32F)
    s = cv2.cuda.sqrt(cv2.cuda.pow(f, 1.5))
    return [m.download(), s.download()]


@pytest.mark.sim
def test_chain_fused_equals_eager_and_cpu(rng):
    src = rand_image(rng, 12, 17, 3, np.uint8)
    fused, eager = run_both(lambda: _chain(src))
    assert_fused_equals_eager(fused, eager)
    r = cv2.resize(src, (9, 7))
    gray = cv2.cvtColor(r, cv2.COLOR_BGR2GRAY)
    m = cv2.bitwise_and(cv2.threshold(gray, 90.5, 255, cv2.THRESH_BINARY)[1], cv2.compare(gray, 180, cv2.CMP_LT))
    np.testing.assert_array_equal(fused[0], m)


def test_chain_after_resize_is_one_kernel(rng):
    src = rand_image(rng, 20, 30, 3, np.uint8)
    g = upload(src)
    lazycv.reset_stats()
    r = cv2.cuda.resize(g, (15, 10))
    gray = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY)
    _, t = cv2.cuda.threshold(gray, 100, 255, cv2.THRESH_BINARY)
    mask = cv2.cuda.bitwise_and(t, cv2.cuda.compare(gray, 200, cv2.CMP_LE))
    lut = cv2.cuda.createLookUpTable(np.arange(256, dtype=np.uint8)[::-1].copy())
    out = cv2.cuda.bitwise_not(lut.transform(cv2.cuda.rshift(mask, 1)))
    host = out.download()
    assert lazycv.stats()["kernels_launched"] == 1
    assert lazycv.stats()["fallbacks"] == 0
    ref_gray = cv2.cvtColor(cv2.resize(src, (15, 10)), cv2.COLOR_BGR2GRAY)
    ref = ~(255 - ((((ref_gray > 100) & (ref_gray <= 200)) * 255).astype(np.uint8) >> 1))
    np.testing.assert_array_equal(host, ref)


# ------------------------------------------------------------------------------------ errors

def test_errors(rng):
    a8 = upload(rand_image(rng, 4, 5, 1, np.uint8))
    other = upload(rand_image(rng, 5, 5, 1, np.uint8))
    f32 = upload(rand_image(rng, 4, 5, 1, np.float32))
    bad = [
        lambda: cv2.cuda.threshold(a8, 1, 2, 7),                             # bad threshold type
        lambda: cv2.cuda.threshold(a8, 1, 2, cv2.THRESH_TRIANGLE),
        lambda: cv2.cuda.threshold(np.zeros((3, 3), np.uint8), 1, 2, 0),     # not a GpuMat
        lambda: cv2.cuda.compare(a8, other, cv2.CMP_EQ),                     # sizes differ
        lambda: cv2.cuda.compare(a8, f32, cv2.CMP_EQ),                       # types differ
        lambda: cv2.cuda.compare(a8, a8, 9),                                 # bad cmpop
        lambda: cv2.cuda.compareWithScalar(a8, a8, cv2.CMP_EQ),             # not a scalar
        lambda: cv2.cuda.bitwise_and(a8, other),
        lambda: cv2.cuda.lshift(upload(rand_image(rng, 2, 2, 1, np.int8)), 1),      # 8S lshift
        lambda: cv2.cuda.rshift(f32, 1),
        lambda: cv2.cuda.rshift(upload(rand_image(rng, 2, 2, 2, np.uint8)), (1, 1)),  # 2 channels
        lambda: cv2.cuda.rshift(a8, -1),
        lambda: cv2.cuda.magnitude(a8, a8),                                  # integer polar
        lambda: cv2.cuda.phase(f32, upload(rand_image(rng, 5, 5, 1, np.float32))),
        lambda: cv2.cuda.addWeighted(a8, 1, other, 1, 0),
        lambda: cv2.cuda.createLookUpTable(np.arange(100, dtype=np.uint8)),
        lambda: cv2.cuda.createLookUpTable(np.arange(256, dtype=np.uint8)).transform(f32),
        lambda: cv2.cuda.gammaCorrection(a8),                                # 8UC1
        lambda: cv2.cuda.alphaComp(a8, a8, 0),
        lambda: cv2.cuda.alphaComp(upload(rand_image(rng, 2, 2, 4, np.uint8)),
                                   upload(rand_image(rng, 2, 2, 4, np.uint8)), 13),
        lambda: cv2.cuda.swapChannels(upload(rand_image(rng, 2, 2, 3, np.uint8)), (0, 1, 2, 3)),
        lambda: cv2.cuda.swapChannels(upload(rand_image(rng, 2, 2, 4, np.uint8)), (0, 1, 5, 3)),
        lambda: cv2.cuda.blendLinear(a8, a8, a8, a8),
    ]
    for i, call in enumerate(bad):
        with pytest.raises(cv2.error):
            call()
            pytest.fail(f"call {i} did not raise")
    # the graph stays usable
    np.testing.assert_array_equal(cv2.cuda.bitwise_not(a8).download(), ~a8.download())
