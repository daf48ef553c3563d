"""Each fused op against CPU OpenCV, over depths, channel counts and awkward sizes (SPEC §3)."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv._types import DEPTH_DTYPE
from lazycv.ops import convert as convert_ops

from .conftest import DEPTHS, SIM, assert_close, rand_image, upload

SIZES = [(1, 1), (1, 7), (7, 1), (5, 13), (17, 33)] if not SIM else [(1, 1), (3, 5), (6, 11)]
DEPTH_LIST = list(DEPTHS)


def _tol_resize(depth, interp):
    if interp == cv2.INTER_NEAREST:
        return 0
    return 1 if depth != cv2.CV_32F else 1e-2


@pytest.mark.sim
@pytest.mark.parametrize("interp", [cv2.INTER_NEAREST, cv2.INTER_LINEAR])
@pytest.mark.parametrize("depth", DEPTH_LIST)
@pytest.mark.parametrize("cn", [1, 3, 4])
def test_resize_matches_cpu(rng, interp, depth, cn):
    for (h, w), (dh, dw) in [((9, 14), (5, 7)), ((6, 5), (11, 13)), ((1, 1), (3, 2)), ((8, 8), (1, 1))]:
        src = rand_image(rng, h, w, cn, DEPTHS[depth])
        got = cv2.cuda.resize(upload(src), (dw, dh), interpolation=interp).download()
        ref = cv2.resize(src, (dw, dh), interpolation=interp)
        assert_close(got, ref, _tol_resize(depth, interp), what=f"{h}x{w}->{dh}x{dw}")


def test_resize_w1_shape_is_bit_exact(rng):
    src = rand_image(rng, 108, 192, 3, np.uint8)
    got = cv2.cuda.resize(upload(src), (64, 64)).download()
    assert_close(got, cv2.resize(src, (64, 64)), 0)


@pytest.mark.sim
def test_resize_fx_fy(rng):
    src = rand_image(rng, 7, 10, 3, np.uint8)
    got = cv2.cuda.resize(upload(src), (0, 0), fx=0.5, fy=1.5).download()
    ref = cv2.resize(src, (0, 0), fx=0.5, fy=1.5)
    assert_close(got, ref, 1)


def test_resize_opencv_cuda_mapping(rng):
    """src = dst * scale with no half-pixel shift, as OpenCV's CUDA module computes it."""
    src = rand_image(rng, 10, 12, 1, np.float32)
    with lazycv.enabled(resize_mapping="opencv-cuda"):
        got = cv2.cuda.resize(upload(src), (6, 5)).download()
    sy, sx = 10 / 5, 12 / 6
    ref = np.empty((5, 6), np.float32)
    for y in range(5):
        for x in range(6):
            fy, fx = y * sy, x * sx
            y0, x0 = int(np.floor(fy)), int(np.floor(fx))
            ay, ax = fy - y0, fx - x0
            y1, x1 = min(y0 + 1, 9), min(x0 + 1, 11)
            ref[y, x] = (src[y0, x0] * (1 - ax) + src[y0, x1] * ax) * (1 - ay) + \
                        (src[y1, x0] * (1 - ax) + src[y1, x1] * ax) * ay
    assert_close(got, ref, 1e-5)


def test_resize_fallback_interpolations(rng):
    """LANCZOS4 still runs on CPU OpenCV (AREA and CUBIC are fused: tests/test_resize_area_cubic.py)."""
    src = rand_image(rng, 20, 30, 3, np.uint8)
    for interp in (cv2.INTER_LANCZOS4,):
        lazycv.reset_stats()
        got = cv2.cuda.resize(upload(src), (13, 9), interpolation=interp).download()
        assert_close(got, cv2.resize(src, (13, 9), interpolation=interp), 0)
        assert lazycv.stats()["fallbacks"] == 1


CVT = [(cv2.COLOR_BGR2RGB, 3), (cv2.COLOR_RGB2BGR, 3), (cv2.COLOR_BGR2BGRA, 3), (cv2.COLOR_BGRA2BGR, 4),
       (cv2.COLOR_BGR2RGBA, 3), (cv2.COLOR_RGBA2BGR, 4), (cv2.COLOR_BGRA2RGBA, 4), (cv2.COLOR_RGB2RGBA, 3),
       (cv2.COLOR_BGR2GRAY, 3), (cv2.COLOR_RGB2GRAY, 3), (cv2.COLOR_BGRA2GRAY, 4), (cv2.COLOR_RGBA2GRAY, 4),
       (cv2.COLOR_GRAY2BGR, 1), (cv2.COLOR_GRAY2BGRA, 1), (cv2.COLOR_GRAY2RGBA, 1)]


@pytest.mark.sim
@pytest.mark.parametrize("code,scn", CVT)
@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16U, cv2.CV_32F])
def test_cvtcolor_matches_cpu(rng, code, scn, depth):
    for h, w in SIZES:
        src = rand_image(rng, h, w, scn, DEPTHS[depth])
        got = cv2.cuda.cvtColor(upload(src), code).download()
        ref = cv2.cvtColor(src, code)
        assert_close(got, ref, 1e-5 if depth == cv2.CV_32F else 0, rel=1e-5, what=f"{h}x{w}")
    assert lazycv.stats()["fallbacks"] == 0


def test_cvtcolor_other_codes_fall_back(rng):
    src = rand_image(rng, 9, 11, 1, np.uint8)
    got = cv2.cuda.cvtColor(upload(src), cv2.COLOR_BayerBG2BGR_VNG).download()
    assert_close(got, cv2.cvtColor(src, cv2.COLOR_BayerBG2BGR_VNG), 0)
    assert lazycv.stats()["fallbacks"] == 1


@pytest.mark.sim
@pytest.mark.parametrize("sdepth", DEPTH_LIST)
@pytest.mark.parametrize("ddepth", DEPTH_LIST + [cv2.CV_64F, cv2.CV_32S])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1 / 255, 0.0), (2.5, -3.25), (-1.0, 0.5)])
def test_convert_to(rng, sdepth, ddepth, alpha, beta):
    src = rand_image(rng, 5, 9, 3, DEPTHS[sdepth])
    got = upload(src).convertTo(ddepth, alpha=alpha, beta=beta).download()
    ref = convert_ops.reference(src, ddepth, alpha, beta)
    # the reference is OpenCV's rule; rounding of a float product sitting on .5 may differ by 1
    assert_close(got, ref, 1 if ref.dtype.kind != "f" else 1e-6, rel=1e-6)


def test_convert_to_positional_forms(rng):
    src = rand_image(rng, 4, 6, 1, np.uint8)
    g = upload(src)
    a = g.convertTo(cv2.CV_32F, 2.0, 1.0).download()
    dst = cv2.cuda_GpuMat()
    b = g.convertTo(cv2.CV_32F, 2.0, 1.0, cv2.cuda.Stream.Null(), dst)
    assert b is dst
    np.testing.assert_array_equal(a, src.astype(np.float32) * 2 + 1)
    np.testing.assert_array_equal(dst.download(), a)


ARITH = ["add", "subtract", "multiply", "divide", "absdiff", "min", "max"]


def _ref(name, a, b, **kw):
    return getattr(cv2, name)(a, b, **kw)


@pytest.mark.sim
@pytest.mark.parametrize("name", ARITH)
@pytest.mark.parametrize("depth", DEPTH_LIST)
@pytest.mark.parametrize("cn", [1, 3])
def test_arith_two_images(rng, name, depth, cn):
    a = rand_image(rng, 4, 7, cn, DEPTHS[depth])
    b = rand_image(rng, 4, 7, cn, DEPTHS[depth])
    if name == "divide" and depth != cv2.CV_32F:
        b.flat[::3] = 0                          # integer division by zero gives 0
    got = getattr(cv2.cuda, name)(upload(a), upload(b)).download()
    ref = _ref(name, a, b)
    assert_close(got, ref, 0 if depth != cv2.CV_32F else 1e-6, rel=1e-5)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
@pytest.mark.parametrize("depth", DEPTH_LIST)
@pytest.mark.parametrize("scalar", [(1.5, -2.5, 7.25, 0.0), 3, (0.485, 0.456, 0.406)])
def test_arith_with_scalar(rng, name, depth, scalar):
    a = rand_image(rng, 3, 5, 3, DEPTHS[depth])
    got = getattr(cv2.cuda, name)(upload(a), scalar).download()
    s = tuple(scalar) + (0,) * (4 - len(scalar)) if isinstance(scalar, tuple) else scalar
    ref = _ref(name, a, s)
    assert_close(got, ref, 0 if depth != cv2.CV_32F else 1e-6, rel=1e-5)


_SPECIAL = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 3e38, 1e-38, 1e-44, 7.5], np.float32)


@pytest.mark.sim
@pytest.mark.parametrize("divisor", [(0.229, 0.224, 0.225), (3.0, -7.0, 0.1), (0.0, -0.0, np.inf),
                                     (1e-40, 3e38, np.nan)])
@pytest.mark.parametrize("by", ["scalar", "constant image", "constant image, scaled"])
def test_float_division_by_a_constant_is_opencvs(rng, divisor, by):
    """A float32 image divided by a scalar or by a constant image (a std GpuMat made with setTo):
    OpenCV's quotient value for value, with its inf, NaN and signed zeros (what a kernel that
    works the division out another way — bench/RESULTS.md run 39 — must keep)."""
    row = np.concatenate([_SPECIAL, rand_image(rng, 1, 21, 1, np.float32).ravel()])
    a = np.repeat(np.dstack([row, row[::-1], row])[:1], 2, axis=0)       # (2, 32, 3)
    s = tuple(float(np.float32(v)) for v in divisor)
    if by == "scalar":
        got = cv2.cuda.divide(upload(a), s).download()
        ref = cv2.divide(a, s + (0.0,))
    else:
        scale = 0.37 if by.endswith("scaled") else 1.0
        c = cv2.cuda_GpuMat(a.shape[0], a.shape[1], cv2.CV_32FC3)
        c.setTo(s)
        got = cv2.cuda.divide(upload(a), c, scale=scale).download()
        ref = cv2.divide(a, np.broadcast_to(np.float32(s), a.shape).copy(), scale=scale)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["multiply", "divide"])
@pytest.mark.parametrize("depth,dtype", [(cv2.CV_32F, -1), (cv2.CV_8U, cv2.CV_32F), (cv2.CV_8U, -1)])
def test_scaled_scalar_product_and_quotient(rng, name, depth, dtype):
    """A scalar and a scale: a float32 result may round as OpenCV's CUDA module does (float
    math, within SPEC's 1e-5 of CPU OpenCV's double); an integer result is CPU's exactly."""
    a = rand_image(rng, 3, 6, 3, DEPTHS[depth])
    s = (0.229, 0.224, 0.225)
    got = getattr(cv2.cuda, name)(upload(a), s, scale=0.37, dtype=dtype).download()
    ref = _ref(name, a, s + (0.0,), scale=0.37, dtype=dtype)
    assert_close(got, ref, 0 if dtype == -1 and depth != cv2.CV_32F else 1e-6, rel=1e-5)


@pytest.mark.sim
@pytest.mark.parametrize("name,value,scalar,scale,depth,first", [
    ("multiply", 1e-5, 1e39, 1.0, cv2.CV_32F, False),       # a scalar float32 cannot hold
    ("multiply", 1e30, 1e-10, 1e10, cv2.CV_32F, False),     # scale * value alone overflows
    ("multiply", 1e-30, 1e20, 1e-20, cv2.CV_32F, False),    # ... or underflows
    ("multiply", 1e5, 1e-42, 1.0, cv2.CV_32F, False),       # a subnormal scalar: fewer digits
    ("divide", 1e30, 1e39, 1.0, cv2.CV_32F, False),
    ("divide", 1e30, 1e10, 1e10, cv2.CV_32F, False),
    ("divide", 1e30, 1e39, 1.0, cv2.CV_32F, True),          # scalar / image
    ("divide", 200, 1e39, 1e10, cv2.CV_8U, False),          # 8U in, CV_32F out
    ("divide", 200, 1e20, 1e20, cv2.CV_8U, True),
    ("divide", 3.0, 0.229, 0.0, cv2.CV_32F, False),         # a zero scale
])
def test_float_scalar_math_stays_within_cpu_opencvs_range(name, value, scalar, scale, depth, first):
    """A float32 result scaled by a scalar computes in float only where float32 holds the
    scalar with the scale folded in; elsewhere in double, as CPU OpenCV: no inf or 0 where CPU
    OpenCV gives a finite result."""
    a = np.full((2, 3), value, DEPTHS[depth])
    if first:
        got = cv2.cuda.divide((scalar,), upload(a), scale=scale, dtype=cv2.CV_32F).download()
        ref = cv2.divide((scalar, 0, 0, 0), a, scale=scale, dtype=cv2.CV_32F)
    else:
        got = getattr(cv2.cuda, name)(upload(a), (scalar,), scale=scale, dtype=cv2.CV_32F).download()
        ref = getattr(cv2, name)(a, (scalar, 0, 0, 0), scale=scale, dtype=cv2.CV_32F)
    assert np.isfinite(ref).all()
    assert_close(got, ref, 0, rel=1e-5)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["add", "subtract"])
@pytest.mark.parametrize("src_depth,other,dtype", [
    (cv2.CV_32F, (7,), cv2.CV_8U),           # a scalar of whole numbers: an integer operand
    (cv2.CV_32F, (7.5,), cv2.CV_16S),        # a fractional scalar: float math
    (cv2.CV_64F, (-3, 2, 1), cv2.CV_16S),
    (cv2.CV_32F, cv2.CV_8U, cv2.CV_8U),      # a float image and an integer one
    (cv2.CV_32F, cv2.CV_16S, cv2.CV_32S),
    (cv2.CV_32S, cv2.CV_32S, cv2.CV_32S),    # int32 sums past its range wrap
])
def test_integer_results_of_mixed_operands_round_the_float_one_first(rng, name, src_depth, other, dtype):
    """CPU OpenCV adds into an integer type in int32 whenever an operand is an integer: a float
    image rounds to int32 first (21.5 - 7 into 8U is 15, not round(14.5) = 14), and int32 wraps."""
    a = np.array([21.5, -3.5, 7.5, 300.7, -1e12, 0.5, 2.5, -2.5, 1e9], np.float64)
    a = np.stack([a, a[::-1], a * 3], -1).reshape(3, 3, 3)
    if src_depth == cv2.CV_32S:
        a = np.array([2 ** 31 - 1, -2 ** 31, 5, -7, 2 ** 30, 3, 0, 1, -1], np.int64)
        a = np.stack([a, a[::-1], a], -1).reshape(3, 3, 3)
    a = a.astype(DEPTH_DTYPE[src_depth])
    if isinstance(other, tuple):
        b, gb, ref_b = other, other, tuple(other) + (0,) * (4 - len(other))
    else:
        b = rand_image(rng, 3, 3, 3, DEPTH_DTYPE[other])
        if other == cv2.CV_32S:
            b = a[::-1].copy()
        gb, ref_b = upload(b), b
    got = getattr(cv2.cuda, name)(upload(a), gb, dtype=dtype).download()
    assert_close(got, getattr(cv2, name)(a, ref_b, dtype=dtype), 0)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["min", "max"])
@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("scalar", [5, 5.0, (5,), (5, 6), (5, 6, 7), (2.5, 7.5, 1, 12), "np1"])
def test_min_max_read_a_scalar_as_cv2_min_max(rng, name, cn, scalar):
    """cv2.min/max take an array: a bare number is (v, 0, 0, 0), a one-value tuple applies to
    every channel, a tuple of cn or 4 values is per channel, other lengths are an error."""
    scalar = np.array([5.0]) if scalar == "np1" else scalar
    a = rand_image(rng, 3, 4, cn, np.uint8)
    try:
        ref = getattr(cv2, name)(a, scalar)
    except cv2.error:
        with pytest.raises(cv2.error):
            getattr(cv2.cuda, name)(upload(a), scalar)
        return
    got = getattr(cv2.cuda, name)(upload(a), scalar).download()
    assert_close(got, ref.reshape(got.shape), 0)
    got = getattr(cv2.cuda, name)(scalar, upload(a)).download()      # the scalar first
    assert_close(got, getattr(cv2, name)(scalar, a).reshape(got.shape), 0)


@pytest.mark.parametrize("dtype", [np.int8, np.int32])
@pytest.mark.parametrize("interp", [cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA,
                                    cv2.INTER_LANCZOS4, cv2.INTER_LINEAR_EXACT, cv2.INTER_NEAREST_EXACT])
def test_resize_of_8s_and_32s_interpolates_where_opencv_does(rng, dtype, interp):
    """OpenCV resizes 8S and 32S images only by nearest neighbour: the others raise at the call."""
    a = rng.integers(-100, 100, (8, 10, 3)).astype(dtype)
    try:
        ref = cv2.resize(a, (5, 4), interpolation=interp)
    except cv2.error:
        with pytest.raises(cv2.error, match="resize"):
            cv2.cuda.resize(upload(a), (5, 4), interpolation=interp)
        return
    assert_close(cv2.cuda.resize(upload(a), (5, 4), interpolation=interp).download(), ref, 0)


@pytest.mark.sim
@pytest.mark.parametrize("a_depth,other,dtype", [
    (cv2.CV_32F, (0.1,), cv2.CV_32S),        # float32 math, then rounded into int32
    (cv2.CV_32F, cv2.CV_32F, cv2.CV_32S),
    (cv2.CV_32S, cv2.CV_32S, cv2.CV_32F),    # int32 operands added in float32, not double
    (cv2.CV_32S, (0.5,), cv2.CV_32F),
    (cv2.CV_32S, (2 ** 31,), cv2.CV_32F),
    (cv2.CV_32S, (0.5,), cv2.CV_64F),        # double where 64F is involved
])
@pytest.mark.parametrize("name", ["add", "subtract"])
def test_add_subtract_work_in_float32_unless_64f_is_involved(name, a_depth, other, dtype):
    a = np.array([[0.4, -2147483648.0, 2147483520.0, 2147483000.0, -2147483000, 7.5]])
    a = np.clip(a, -2 ** 31, 2 ** 31 - 1).astype(DEPTH_DTYPE[a_depth])
    if isinstance(other, tuple):
        gb, ref_b = other, other + (0.0,) * (4 - len(other))
    else:
        b = np.array([[0.1, 3.0, 2.5, -2147483000, 2147483646, -1.5]])
        b = np.clip(b, -2 ** 31, 2 ** 31 - 1).astype(DEPTH_DTYPE[other])
        gb, ref_b = upload(b), b
    got = getattr(cv2.cuda, name)(upload(a), gb, dtype=dtype).download()
    assert_close(got, getattr(cv2, name)(a, ref_b, dtype=dtype), 0)


@pytest.mark.sim
def test_absdiff_of_int32_wraps_as_opencvs():
    """OpenCV's int32 absdiff is |a - b| of the wrapped difference (|INT_MIN| stays INT_MIN)."""
    a = np.array([[2 ** 31 - 1, -2 ** 31, -2 ** 31, 5, -7, 0, 2 ** 30, 1] * 2], np.int32)
    b = np.array([[-2, 2, 0, -5, 7, -2 ** 31, -2 ** 30, 1] * 2], np.int32)
    assert_close(cv2.cuda.absdiff(upload(a), upload(b)).download(), cv2.absdiff(a, b), 0)
    assert_close(cv2.cuda.absdiff(upload(a), (2,)).download(), cv2.absdiff(a, (2, 0, 0, 0)), 0)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_with_nan_and_signed_zeros_as_opencvs_simd(name):
    """x86 OpenCV's min/max (minps/maxps, every pixel of a row 8 or more wide): a NaN or a tie
    of zeros gives the second operand; the image counts as the first also when the scalar is."""
    a = np.ones((2, 16), np.float32)
    a[0, 0], a[0, 2], a[1, 3] = np.nan, 0.0, -0.0
    b = np.full((2, 16), 3.0, np.float32)
    b[0, 1], b[0, 2], b[1, 3] = np.nan, -0.0, 0.0
    for got, ref in [(getattr(cv2.cuda, name)(upload(a), upload(b)), getattr(cv2, name)(a, b)),
                     (getattr(cv2.cuda, name)(upload(a), (2.0,)), getattr(cv2, name)(a, (2.0,))),
                     (getattr(cv2.cuda, name)((2.0,), upload(a)), getattr(cv2, name)((2.0,), a)),
                     (getattr(cv2.cuda, name)(upload(b), (np.nan,)), getattr(cv2, name)(b, (np.nan,)))]:
        got = got.download()
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


@pytest.mark.parametrize("name", ["addWithScalar", "minWithScalar", "maxWithScalar", "absdiffWithScalar"])
def test_with_scalar_forms_read_a_bare_number_as_a_cv_scalar(rng, name):
    """``*WithScalar(src, Scalar)``: a bare number is cv::Scalar(v) = (v, 0, 0, 0) for every op."""
    a = rand_image(rng, 3, 5, 3, np.uint8)
    ref = getattr(cv2, name[:-len("WithScalar")])(a, (7.0, 0.0, 0.0, 0.0))
    assert_close(getattr(cv2.cuda, name)(upload(a), 7).download(), ref, 0)
    assert_close(getattr(cv2.cuda, name)(upload(a), (7,)).download(), ref, 0)


@pytest.mark.parametrize("order", [(0.0, -0.0, 0), (-0.0, 0.0, 0), (0, -0.0, 0.0)])
def test_zero_scalars_keep_their_sign_whatever_came_before(order):
    """0.0 == -0.0: a scalar remembered for one must not answer for the other."""
    a = np.array([[1.0, -2.0, 3.0]], np.float32)
    for z in order:
        got = cv2.cuda.divide(upload(a), (z,)).download()
        np.testing.assert_array_equal(got, cv2.divide(a, (z, 0, 0, 0)))


@pytest.mark.parametrize("name", ["multiply", "divide"])
def test_scale_and_dtype(rng, name):
    a = rand_image(rng, 6, 8, 1, np.uint8)
    b = rand_image(rng, 6, 8, 1, np.uint8) | 1
    got = getattr(cv2.cuda, name)(upload(a), upload(b), scale=0.37).download()
    assert_close(got, _ref(name, a, b, scale=0.37), 0)
    got = getattr(cv2.cuda, name)(upload(a), upload(b), scale=2.0, dtype=cv2.CV_32F).download()
    assert_close(got, _ref(name, a, b, scale=2.0, dtype=cv2.CV_32F), 0, rel=1e-6)


def test_add_with_mask_and_dst(rng):
    a = rand_image(rng, 6, 8, 3, np.uint8)
    b = rand_image(rng, 6, 8, 3, np.uint8)
    mask = (rng.random((6, 8)) > 0.5).astype(np.uint8)
    got = cv2.cuda.add(upload(a), upload(b), mask=upload(mask)).download()
    assert_close(got, cv2.add(a, b, mask=mask), 0)
    d0 = rand_image(rng, 6, 8, 3, np.uint8)
    dst = upload(d0)
    out = cv2.cuda.subtract(upload(a), upload(b), dst, upload(mask))
    assert out is dst
    assert_close(dst.download(), cv2.subtract(a, b, d0.copy(), mask=mask), 0)


def test_arith_scalar_first_operand(rng):
    a = rand_image(rng, 3, 4, 1, np.float32)
    got = cv2.cuda.subtract(1.0, upload(a)).download()
    assert_close(got, (np.float32(1) - a), 0)


@pytest.mark.sim
@pytest.mark.parametrize("depth", DEPTH_LIST)
@pytest.mark.parametrize("cn", [2, 3, 4])
def test_split_merge(rng, depth, cn):
    a = rand_image(rng, 5, 6, cn, DEPTHS[depth])
    planes = cv2.cuda.split(upload(a))
    assert len(planes) == cn
    for c, p in enumerate(planes):
        np.testing.assert_array_equal(p.download(), a[..., c])
    merged = cv2.cuda.merge(planes, cv2.cuda_GpuMat())
    assert isinstance(merged, cv2.cuda_GpuMat)
    np.testing.assert_array_equal(merged.download(), a)


@pytest.mark.sim
def test_merge_without_dst_returns_the_host_array_as_opencv_does(rng):
    """OpenCV's binding answers merge(list) with its host-array overload (opencv#17910): the
    merged image downloaded. OpenCV's own test relies on it:
    ``np.allclose(cv.cuda.merge(cv.cuda.split(cuMat)), npMat)``."""
    a = rand_image(rng, 5, 6, 3, np.float32)
    got = cv2.cuda.merge(cv2.cuda.split(upload(a)))
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, a)
    got = cv2.cuda.merge(cv2.cuda.split(upload(a)), stream=cv2.cuda.Stream())
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, a)


def test_merge_mixed_channel_counts(rng):
    a = rand_image(rng, 5, 6, 2, np.uint8)
    b = rand_image(rng, 5, 6, 1, np.uint8)
    got = cv2.cuda.merge([upload(a), upload(b)])
    np.testing.assert_array_equal(got, cv2.merge([a, b]))


@pytest.mark.sim
def test_roi_views_on_the_borders(rng):
    frame = rand_image(rng, 9, 12, 3, np.uint8)
    g = upload(frame)
    for x, y, w, h in [(0, 0, 1, 1), (11, 8, 1, 1), (0, 0, 12, 9), (3, 0, 9, 9), (0, 4, 12, 5), (5, 2, 4, 3)]:
        roi = cv2.cuda_GpuMat(g, (x, y, w, h))
        assert roi.size() == (w, h)
        np.testing.assert_array_equal(roi.download(), frame[y:y + h, x:x + w])
        got = cv2.cuda.cvtColor(roi, cv2.COLOR_BGR2GRAY).download()
        np.testing.assert_array_equal(got, cv2.cvtColor(np.ascontiguousarray(frame[y:y + h, x:x + w]),
                                                        cv2.COLOR_BGR2GRAY))


def test_roi_ranges_and_rows(rng):
    frame = rand_image(rng, 9, 12, 1, np.float32)
    g = upload(frame)
    np.testing.assert_array_equal(cv2.cuda_GpuMat(g, (2, 5), (3, 7)).download(), frame[2:5, 3:7])
    np.testing.assert_array_equal(g.rowRange(1, 4).download(), frame[1:4])
    np.testing.assert_array_equal(g.colRange(2, 3).download(), frame[:, 2:3])
    np.testing.assert_array_equal(g.row(8).download(), frame[8:9])
    np.testing.assert_array_equal(g.col(0).download(), frame[:, 0:1])


def test_set_to_and_copy_to(rng):
    g = cv2.cuda_GpuMat(4, 5, cv2.CV_8UC3)
    g.setTo((1.5, 300, -4))
    np.testing.assert_array_equal(g.download(), np.broadcast_to(np.array([2, 255, 0], np.uint8), (4, 5, 3)))
    mask = np.zeros((4, 5), np.uint8)
    mask[1:3, 2:] = 1
    g.setTo((9, 9, 9), upload(mask))
    exp = np.broadcast_to(np.array([2, 255, 0], np.uint8), (4, 5, 3)).copy()
    exp[1:3, 2:] = 9
    np.testing.assert_array_equal(g.download(), exp)
    dst = cv2.cuda_GpuMat()
    g.copyTo(dst)
    np.testing.assert_array_equal(dst.download(), exp)
    dst2 = upload(np.zeros((4, 5, 3), np.uint8))
    g.copyTo(upload(1 - mask), dst2)
    np.testing.assert_array_equal(dst2.download(), np.where((1 - mask)[..., None] != 0, exp, 0))


def test_copy_to_takes_opencvs_overloads_in_their_order(rng):
    """copyTo([dst]), copyTo(stream[, dst]), copyTo(mask[, dst]), copyTo(mask, stream[, dst]):
    one GpuMat beside a stream is the mask (OpenCV's binding tries the overloads in this order),
    and the mask stays as it was."""
    a = rand_image(rng, 4, 5, 3, np.uint8)
    m = np.zeros((4, 5), np.uint8)
    m[1:3, 1:4] = 1
    src, mask, s = upload(a), upload(m), cv2.cuda.Stream()
    want = np.where(m[..., None] != 0, a, 0)
    for got in (src.copyTo(mask, s), src.copyTo(mask, stream=s), src.copyTo(mask=mask, stream=s),
                src.copyTo(mask, dst=cv2.cuda_GpuMat()), src.copyTo(mask, s, cv2.cuda_GpuMat())):
        np.testing.assert_array_equal(got.download(), want)
    np.testing.assert_array_equal(mask.download(), m)
    for copy in (lambda d: src.copyTo(s, d), lambda d: src.copyTo(stream=s, dst=d), lambda d: src.copyTo(d)):
        d = cv2.cuda_GpuMat()
        assert copy(d) is d
        np.testing.assert_array_equal(d.download(), a)
    with pytest.raises(cv2.error, match="copyTo"):
        src.copyTo(s, mask, s)
    with pytest.raises(cv2.error, match="copyTo"):
        src.copyTo(mask, dst=cv2.cuda_GpuMat(), mask=mask)


def test_none_is_an_optional_arguments_default(rng):
    """OpenCV's binding reads None for an optional number as its default."""
    a = rand_image(rng, 6, 8, 3, np.uint8)
    b = rand_image(rng, 6, 8, 3, np.uint8)
    g, h = upload(a), upload(b)
    np.testing.assert_array_equal(cv2.cuda.resize(g, (4, 3), interpolation=None).download(),
                                  cv2.resize(a, (4, 3), interpolation=cv2.INTER_LINEAR))
    np.testing.assert_array_equal(cv2.cuda.multiply(g, h, scale=None).download(), cv2.multiply(a, b))
    np.testing.assert_array_equal(cv2.cuda.divide(g, h, None, None, None).download(), cv2.divide(a, b))
    with pytest.raises(cv2.error, match="scale"):
        cv2.cuda.multiply(g, h, scale="2")


def test_download_into_an_h_w_1_array_fills_it(rng):
    """A (rows, cols, 1) array is a 1-channel image to OpenCV: download writes into it."""
    a = rand_image(rng, 3, 4, 1, np.uint16)
    buf = np.zeros((3, 4, 1), np.uint16)
    assert upload(a).download(buf) is buf
    np.testing.assert_array_equal(buf[..., 0], a)
    wide = np.zeros((3, 8, 1), np.uint16)
    upload(a).download(wide[:, 2:6])
    np.testing.assert_array_equal(wide[:, 2:6, 0], a)
    assert not wide[:, :2].any() and not wide[:, 6:].any()


def test_constructors():
    assert cv2.cuda_GpuMat is cv2.cuda.GpuMat
    assert cv2.cuda.GpuMat().empty()
    g = cv2.cuda_GpuMat(3, 4, cv2.CV_32FC3)
    assert g.size() == (4, 3) and g.type() == cv2.CV_32FC3 and g.channels() == 3
    assert g.depth() == cv2.CV_32F and g.step == 4 * 3 * 4 and g.elemSize() == 12
    g = cv2.cuda_GpuMat((4, 3), cv2.CV_8UC1)
    assert g.size() == (4, 3)
    g = cv2.cuda_GpuMat(2, 2, cv2.CV_16UC1, (7,))
    np.testing.assert_array_equal(g.download(), np.full((2, 2), 7, np.uint16))
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    g = cv2.cuda_GpuMat(a)
    np.testing.assert_array_equal(g.download(), a)
    h = cv2.cuda_GpuMat(g)                 # shares memory
    h.setTo(1)
    np.testing.assert_array_equal(g.download(), np.ones((3, 4), np.uint8))


def test_release_and_empty():
    g = upload(np.ones((2, 3), np.uint8))
    assert not g.empty()
    g.release()
    assert g.empty() and g.size() == (0, 0)


@pytest.mark.sim
@pytest.mark.parametrize("code", ["BGR2RGB", "BGR2BGRA", "BGRA2BGR", "BGRA2RGBA", "RGB2BGRA", "GRAY2BGR",
                                  "GRAY2BGRA", "BGR2GRAY", "RGBA2GRAY"])
@pytest.mark.parametrize("cn", [1, 3, 4])
@pytest.mark.parametrize("dcn", [0, 3, 4])
def test_cvtcolor_takes_what_cpu_opencv_takes(rng, code, cn, dcn):
    """CPU OpenCV 5 is lenient: colour codes take 1 (as grey), 3 or 4 channels, alpha copied
    when both sides have one; dcn picks 3 or 4 output channels; grey codes ignore dcn."""
    a = rand_image(rng, 3, 4, cn, np.uint8)
    c = getattr(cv2, "COLOR_" + code)
    try:
        ref = cv2.cvtColor(a, c, dstCn=dcn)
    except cv2.error:
        with pytest.raises(cv2.error, match="cvtColor"):
            cv2.cuda.cvtColor(upload(a), c, dcn=dcn)
        return
    assert_close(cv2.cuda.cvtColor(upload(a), c, dcn=dcn).download(), ref, 0)


@pytest.mark.parametrize("depth, divisor", [(np.int16, 0.0), (np.int8, (0.0, 2.0, 0.0)), (np.uint8, 0.0)])
def test_division_by_a_zero_scalar_saturates_inf_and_nan(rng, depth, divisor):
    """A scalar divides in floating point: inf and NaN saturate to the output's minimum (0 for
    unsigned), as on the CPU; two integer images divide as integers (zero divisor: 0)."""
    a = rand_image(rng, 2, 3, 3 if isinstance(divisor, tuple) else 1, depth)
    s = divisor + (0.0,) if isinstance(divisor, tuple) else divisor
    assert_close(cv2.cuda.divide(upload(a), divisor).download(), cv2.divide(a, s), 0)
    z = np.zeros_like(a)
    assert_close(cv2.cuda.divide(upload(a), upload(z)).download(), cv2.divide(a, z), 0)
    f = rand_image(rng, 2, 3, 1, np.float32)
    assert_close(cv2.cuda.divide(upload(f), upload(np.zeros_like(f)), dtype=cv2.CV_16S).download(),
                 cv2.divide(f, np.zeros_like(f), dtype=cv2.CV_16S), 0)


@pytest.mark.parametrize("interpolation", [cv2.INTER_CUBIC, cv2.INTER_AREA, cv2.INTER_LANCZOS4])
@pytest.mark.parametrize("fx, fy", [(0.5, 0.5), (2.0, 1.5), (0.3, 0.7)])
def test_resize_by_scale_factors_uses_them(rng, interpolation, fx, fy):
    """dsize (0, 0) and fx, fy: OpenCV maps with 1/fx, not with the rounded output size."""
    a = rand_image(rng, 6, 9, 3, np.uint8)
    got = cv2.cuda.resize(upload(a), (0, 0), fx=fx, fy=fy, interpolation=interpolation).download()
    assert_close(got, cv2.resize(a, (0, 0), fx=fx, fy=fy, interpolation=interpolation), 0)


@pytest.mark.sim
def test_convertto_rounds_once_as_opencv(rng):
    """OpenCV's convertTo computes src * alpha + beta with one rounding (a fused multiply-add):
    the CPU reference is cv2.normalize(NORM_MINMAX), which is convertTo with alpha and beta
    worked out from the range; half-way results (8.5 here, 8.500008 rounded once) decide."""
    a = np.array([[0, 221, 255, 17, 100, 254]], np.uint8)
    for lo, hi in ((-285.3, 53.7), (3.25, 200.75), (-10.0, 10.0)):
        ref = cv2.normalize(a, None, lo, hi, cv2.NORM_MINMAX, dtype=cv2.CV_8U)
        alpha = (hi - lo) * (1.0 / 255.0)
        got = upload(a).convertTo(cv2.CV_8U, alpha=alpha, beta=lo).download()
        assert_close(got, ref, 0, what=f"range {lo}..{hi}")


@pytest.mark.parametrize("name", ["addWithScalar", "subtractWithScalar", "multiplyWithScalar",
                                  "divideWithScalar", "absdiffWithScalar", "minWithScalar", "maxWithScalar"])
def test_every_with_scalar_form(rng, name):
    a = rand_image(rng, 3, 5, 3, np.uint8)
    s = (10.0, 200.0, 3.0)
    ref = getattr(cv2, name[:-len("WithScalar")])(a, s + (0.0,))
    assert_close(getattr(cv2.cuda, name)(upload(a), s).download(), ref, 0)
    with pytest.raises(cv2.error, match=name):
        getattr(cv2.cuda, name)(upload(a), upload(a))


@pytest.mark.sim
@pytest.mark.parametrize("interpolation", [cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.float32])
def test_resize_to_the_same_size_copies_as_opencv(rng, interpolation, dtype):
    """cv::resize (CPU and CUDA) copies when the output size equals the input's — also when
    fx/fy round back to it (0.8 of 2 pixels), and for 8S/32S in every mode (found by a chain
    probe: lazycv resampled by 1/0.8)."""
    a = rand_image(rng, 2, 2, 3, dtype)
    g = upload(a)
    np.testing.assert_array_equal(
        cv2.cuda.resize(g, (0, 0), fx=0.8, fy=0.8, interpolation=interpolation).download(),
        cv2.resize(a, (0, 0), fx=0.8, fy=0.8, interpolation=interpolation))
    np.testing.assert_array_equal(cv2.cuda.resize(g, (2, 2), interpolation=interpolation).download(), a)


@pytest.mark.sim
def test_resize_8u_linear_is_bit_exact_up_and_down_and_by_fx_fy(rng):
    """OpenCV's row table keeps both weights past the top and bottom rows (it clamps only the
    row index), and its 8U vertical pass rounds each term apart: lazycv does the same, so
    upscales and fx/fy downscales match bit for bit too (they were 1 off at the border rows;
    found by a chain probe: fx=fy=0.8 of 6x6, last row)."""
    cases = 6 if SIM else 60
    for _ in range(cases):
        h, w = (int(v) for v in rng.integers(2, 9 if SIM else 40, 2))
        img = rand_image(rng, h, w, int(rng.choice([1, 3, 4])), np.uint8)
        g = upload(img)
        if rng.random() < 0.5:
            dsize = tuple(int(v) for v in rng.integers(1, 12 if SIM else 90, 2))
            got, ref = cv2.cuda.resize(g, dsize).download(), cv2.resize(img, dsize)
        else:
            fx, fy = (float(v) for v in rng.uniform(0.5, 2.5, 2))
            got = cv2.cuda.resize(g, (0, 0), fx=fx, fy=fy).download()
            ref = cv2.resize(img, (0, 0), fx=fx, fy=fy)
        assert_close(got, ref, tol=0, what=f"{w}x{h}")
