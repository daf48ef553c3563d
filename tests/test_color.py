"""cvtColor's colour spaces and layouts, and demosaicing, against CPU OpenCV (SPEC §3 tolerances)."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv.ops import color_layouts, color_spaces
from .conftest import DEPTHS, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

U8, U16, F32 = cv2.CV_8U, cv2.CV_16U, cv2.CV_32F
SIZES = [(1, 1), (5, 7), (16, 17)]


def grid_8u():
    """A 64^3 subsample of the 8-bit colour cube (every 4th level per channel, 255 included)."""
    levels = np.append(np.arange(0, 256, 4)[:-1], 255)
    cube = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), -1)
    return np.ascontiguousarray(cube.reshape(64, -1, 3).astype(np.uint8))


def inverse_input(rng, space, shape, depth):
    """Values in the space's own range (32F); any byte for 8U; any value for 16U."""
    if depth != F32:
        return rand_image(rng, *shape, 3, DEPTHS[depth])
    u = rng.random(shape + (3,))
    lo, hi = {"HSV": ((0, 0, 0), (360, 1, 1)), "HLS": ((0, 0, 0), (360, 1, 1)),
              "Lab": ((0, -127, -127), (100, 127, 127)), "Luv": ((0, -134, -140), (100, 220, 122))
              }.get(space, ((0, 0, 0), (1, 1, 1)))
    return (np.array(lo) + u * (np.array(hi) - np.array(lo))).astype(np.float32)


# (space, tolerance for 8U/16U, tolerance for 32F (absolute, relative)) — SPEC §3; 8U/16U YCrCb,
# YUV, XYZ and 8U HSV are bit-exact with OpenCV's fixed point
TOL = {"YCrCb": (0, (1e-5, 1e-5)), "YUV": (0, (1e-5, 1e-5)), "XYZ": (0, (1e-5, 1e-5)),
       "HSV": (1, (1e-2, 0)), "HSV_FULL": (1, (1e-2, 0)), "HLS": (1, (1e-2, 0)), "HLS_FULL": (1, (1e-2, 0)),
       "Lab": (2, (1e-2, 1e-3)), "Luv": (2, (1e-3, 1e-3))}
INVERSE_LAB_32F = (5e-3, 0)         # Lab -> BGR (SPEC §3); Lab's forward tolerance is not in SPEC


def _cases():
    """(code name, space, forward, depth): every BGR code at each depth CPU OpenCV takes; the RGB
    forms of three spaces and the linear forms at 8U (they differ only in channel order or the
    gamma; fewer cases keep the file's Numba compiles within the test budget)."""
    out = []
    for space, depths in (("YCrCb", (U8, U16, F32)), ("YUV", (U8, U16, F32)), ("XYZ", (U8, U16, F32)),
                          ("HSV", (U8, F32)), ("HSV_FULL", (U8, F32)), ("HLS", (U8, F32)),
                          ("HLS_FULL", (U8, F32)), ("Lab", (U8, F32)), ("Luv", (U8, F32))):
        base, _, full = space.partition("_")
        suffix = "_FULL" if full else ""
        for d in depths:
            out.append((f"BGR2{base}{suffix}", space, True, d))
            out.append((f"{base}2BGR{suffix}", space, False, d))
        if space in ("YCrCb", "HSV", "Luv"):
            out.append((f"RGB2{base}{suffix}", space, True, U8))
            out.append((f"{base}2RGB{suffix}", space, False, U8))
    for space in ("Lab", "Luv"):
        for d in (U8, F32):
            out += [(f"LBGR2{space}", space, True, d), (f"{space}2LBGR", space, False, d)]
    return out


@pytest.mark.parametrize("name,space,forward,depth", _cases())
def test_colour_space_matches_cpu(rng, name, space, forward, depth):
    code = getattr(cv2, "COLOR_" + name)
    tol_int, (tol_f, rel) = TOL[space]
    if space == "Lab" and not forward:
        tol_f, rel = INVERSE_LAB_32F
    images = [rand_image(rng, h, w, 3, DEPTHS[depth]) if forward else inverse_input(rng, space, (h, w), depth)
              for h, w in SIZES]
    if depth == F32 and forward:
        images = [np.clip(a, 0, 1) for a in images]
    if depth == U8:
        images.append(grid_8u())
    for src in images:
        got = cv2.cuda.cvtColor(upload(src), code).download()
        ref = cv2.cvtColor(src, code)
        assert_close(got, ref, tol_f if depth == F32 else tol_int, rel=rel, what=f"{name} {src.shape}")
    fused = (code, depth) not in color_spaces.NOT_FUSED
    assert lazycv.stats()["fallbacks"] == (0 if fused else len(images))


@pytest.mark.sim
@pytest.mark.parametrize("name,depth,tol", [("BGR2HSV", U8, 0), ("HSV2BGR", F32, 1e-2), ("BGR2YCrCb", U16, 0),
                                            ("YUV2RGB", U8, 0), ("XYZ2BGR", F32, 1e-5), ("LBGR2Luv", F32, 1e-3),
                                            ("Lab2LBGR", U8, 2), ("BGR2HLS_FULL", U8, 1)])
def test_colour_space_small(rng, name, depth, tol):
    code = getattr(cv2, "COLOR_" + name)
    src = rand_image(rng, 2, 3, 3, DEPTHS[depth])
    if depth == F32:
        src = np.clip(src, 0, 1)
    got = cv2.cuda.cvtColor(upload(src), code).download()
    assert_close(got, cv2.cvtColor(src, code), tol, rel=tol if depth == F32 else None, what=name)
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("name,cn,dcn", [("BGR2HSV", 4, 0), ("RGB2YCrCb", 4, 0), ("BGRA2BGR", 4, 0),
                                         ("HLS2BGR", 3, 4), ("XYZ2RGB", 3, 4), ("Luv2LRGB", 3, 4)])
def test_alpha_in_and_out(rng, name, cn, dcn):
    """Codes to a colour space ignore an input alpha; codes back add an opaque one with dcn=4."""
    code = getattr(cv2, "COLOR_" + name)
    src = rand_image(rng, 4, 5, cn, np.float32) if "Luv" in name else rand_image(rng, 4, 5, cn, np.uint8)
    ref = cv2.cvtColor(src, code, dstCn=dcn)
    got = cv2.cuda.cvtColor(upload(src), code, dcn=dcn).download()
    assert_close(got, ref, 1e-3 if src.dtype == np.float32 else 1, rel=1e-3 if src.dtype == np.float32 else None)


@pytest.mark.parametrize("name,depth,cn", [("BGR2HSV", U16, 3), ("HSV2BGR", U8, 4), ("BGR2Luv", U16, 3),
                                           ("YCrCb2BGR", U8, 1), ("BGR2XYZ", cv2.CV_16S, 3)])
def test_what_cpu_refuses_raises(rng, name, depth, cn):
    code = getattr(cv2, "COLOR_" + name)
    src = rand_image(rng, 3, 4, cn, DEPTHS[depth])
    with pytest.raises(cv2.error):
        cv2.cvtColor(src, code)
    with pytest.raises(cv2.error, match="cvtColor"):
        cv2.cuda.cvtColor(upload(src), code)


def _yuv420_cases():
    out = [(f"YUV2BGR_{fmt}", 0) for fmt in ("NV12", "NV21", "I420", "IYUV", "YV12")]
    return out + [("YUV2RGB_NV12", 0), ("YUV2RGBA_YV12", 0), ("YUV2GRAY_420", 0), ("YUV2BGR_NV21", 4)]


@pytest.mark.parametrize("name,dcn", _yuv420_cases())
def test_yuv420_matches_cpu_bit_exactly(rng, name, dcn):
    code = getattr(cv2, "COLOR_" + name)
    for h, w in [(2, 2), (4, 6), (18, 10), (34, 30)]:
        src = rand_image(rng, h * 3 // 2, w, 1, np.uint8)
        ref = cv2.cvtColor(src, code, dstCn=dcn)
        got = cv2.cuda.cvtColor(upload(src), code, dcn=dcn).download()
        assert_close(got, ref, 0, what=f"{name} {h}x{w}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.sim
def test_nv12_to_planar_float_is_one_kernel(rng):
    """A decoded NV12 frame -> BGR -> float -> planes: one launch, no fallback."""
    frame = rand_image(rng, 6, 4, 1, np.uint8)

    def chain():
        bgr = cv2.cuda.cvtColor(upload(frame), cv2.COLOR_YUV2BGR_NV12)
        planes = cv2.cuda.split(bgr.convertTo(cv2.CV_32F, alpha=1 / 255))
        return [p.download() for p in planes]

    lazycv.reset_stats()
    fused, eager = run_both(chain)
    ref = cv2.cvtColor(frame, cv2.COLOR_YUV2BGR_NV12).astype(np.float32) * np.float32(1 / 255)
    for k in range(3):
        assert_close(fused[k], ref[..., k], 1e-6)
    assert_fused_equals_eager(fused, eager)
    lazycv.reset_stats()
    bgr = cv2.cuda.cvtColor(upload(frame), cv2.COLOR_YUV2BGR_NV12)
    planes = cv2.cuda.split(bgr.convertTo(cv2.CV_32F, alpha=1 / 255))
    lazycv.materialize(*planes)
    assert lazycv.stats()["kernels_launched"] == 1
    assert lazycv.stats()["fallbacks"] == 0


def test_yuv420_of_a_wrong_shape_raises(rng):
    with pytest.raises(cv2.error, match="cvtColor"):
        cv2.cuda.cvtColor(upload(rand_image(rng, 6, 5, 1, np.uint8)), cv2.COLOR_YUV2BGR_NV12)
    with pytest.raises(cv2.error, match="cvtColor"):
        cv2.cuda.cvtColor(upload(rand_image(rng, 6, 4, 3, np.uint8)), cv2.COLOR_YUV2BGR_NV12)


def _bayer_cases():
    out = [(f"Bayer{p}2BGR", U8) for p in ("BG", "GB", "RG", "GR")]
    return out + [("BayerGB2BGR", U16), ("BayerGR2RGB", U8), ("BayerBG2BGRA", U16)]


@pytest.mark.parametrize("name,depth", _bayer_cases())
def test_bayer_matches_cpu_bit_exactly(rng, name, depth):
    """Bilinear demosaicing, border rows and columns included (CPU copies the inner ones)."""
    code = getattr(cv2, "COLOR_" + name)
    for h, w in [(3, 3), (4, 5), (9, 8), (17, 20)]:
        src = rand_image(rng, h, w, 1, DEPTHS[depth])
        assert_close(cv2.cuda.cvtColor(upload(src), code).download(), cv2.cvtColor(src, code), 0,
                     what=f"{name} {h}x{w}")
        assert_close(cv2.cuda.demosaicing(upload(src), code).download(), cv2.demosaicing(src, code), 0,
                     what=f"demosaicing {name} {h}x{w}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.sim
def test_bayer_small(rng):
    src = rand_image(rng, 3, 4, 1, np.uint8)
    got = cv2.cuda.demosaicing(upload(src), cv2.COLOR_BayerBG2BGR).download()
    assert_close(got, cv2.demosaicing(src, cv2.COLOR_BayerBG2BGR), 0)
    assert lazycv.stats()["fallbacks"] == 0


def test_demosaicing_other_bayer_codes_fall_back_and_bad_mht_raises(rng):
    src = rand_image(rng, 6, 7, 1, np.uint8)
    for code in (cv2.COLOR_BayerGB2GRAY, cv2.COLOR_BayerBG2BGR_VNG):
        assert_close(cv2.cuda.demosaicing(upload(src), code).download(), cv2.demosaicing(src, code), 0)
    assert lazycv.stats()["fallbacks"] == 2
    with pytest.raises(cv2.error, match="demosaicing"):
        cv2.cuda.demosaicing(upload(src.astype(np.uint16)), 256)          # COLOR_BayerBG2BGR_MHT: 8U only
    with pytest.raises(cv2.error, match="demosaicing"):
        cv2.cuda.demosaicing(upload(src), cv2.COLOR_BGR2HSV)


@pytest.mark.sim
def test_resize_hsv_range_chain_fused_equals_eager(rng):
    """resize -> HSV -> clamped to a hue/saturation/value window (max, min): the same bytes
    fused as running each call alone."""
    src = rand_image(rng, 5, 6, 3, np.uint8)

    def chain():
        small = cv2.cuda.resize(upload(src), (3, 2))
        hsv = cv2.cuda.cvtColor(small, cv2.COLOR_BGR2HSV)
        inside = cv2.cuda.min(cv2.cuda.max(hsv, (20, 50, 50, 0)), (90, 255, 200, 0))   # clamp to a window
        return hsv.download(), inside.download()

    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)
    small = cv2.resize(src, (3, 2))
    assert_close(fused[0], cv2.cvtColor(small, cv2.COLOR_BGR2HSV), 0)
    assert lazycv.stats()["fallbacks"] == 0


def mht_reference(src, code, dcn=3):
    """OpenCV CUDA's MHCdemosaic (debayer.cu) in numpy float32, statement by statement: the
    interior only (the outer ring stays 0), taps clamped to the image (its texture reads)."""
    f = np.float32
    kAx, kAy, kAz = f(-1 / 8), f(-1.5 / 8), f(0.5 / 8)
    kBx, kBw, kCx, kCy, kCz = f(2 / 8), f(4 / 8), f(4 / 8), f(6 / 8), f(5 / 8)
    kDy, kDz, kEx, kEy, kEw, kFx, kFz = f(2 / 8), f(-1 / 8), f(-1 / 8), f(-1.5 / 8), f(0.5 / 8), f(2 / 8), f(4 / 8)
    pattern = {256: "BG", 257: "GB", 258: "RG", 259: "GR"}.get(code)          # GRAY codes: none
    first_red = (0 if pattern in ("RG", "GB") else 1, 0 if pattern in ("RG", "GR") else 1)
    rows, cols = src.shape
    out = np.zeros((rows, cols, 3), np.uint8)

    def s(yy, xx):
        return f(src[min(max(yy, 0), rows - 1), min(max(xx, 0), cols - 1)])

    def sat(v):
        return np.uint8(min(max(np.rint(v), 0), 255))
    for y in range(1, rows - 1):
        for x in range(1, cols - 1):
            C = s(y, x)
            D = s(y - 1, x - 1) + s(y + 1, x - 1) + s(y - 1, x + 1) + s(y + 1, x + 1)
            A, B = s(y - 2, x) + s(y + 2, x), s(y - 1, x) + s(y + 1, x)
            E, F = s(y, x - 2) + s(y, x + 2), s(y, x - 1) + s(y, x + 1)
            px, py, pz = kCx * C, kCy * C, kCz * C
            pw = pz
            py, pz, pw = py + kDy * D, pz + kDz * D, pw + kDz * D
            px, py, pz, pw = px + kAx * A, py + kAy * A, pz + kAz * A, pw + kAx * A
            px, py, pz, pw = px + kEx * E, py + kEy * E, pz + kEx * E, pw + kEw * E
            px, pw = px + kBx * B, pw + kBw * B
            px, pz = px + kFx * F, pz + kFz * F
            ax, ay = (x + first_red[0]) % 2, (y + first_red[1]) % 2
            bgr = ((py, px, C) if ax == 0 else (pw, C, pz)) if ay == 0 else ((pz, C, pw) if ax == 0 else (C, px, py))
            out[y, x] = [sat(v) for v in bgr]
    if dcn == 1:
        b, g, r = (out[..., k].astype(np.int64) for k in range(3))
        return ((b * 1868 + g * 9617 + r * 4899 + 8192) >> 14).astype(np.uint8)
    if dcn == 4:
        alpha = np.zeros((rows, cols, 1), np.uint8)
        alpha[1:-1, 1:-1] = 255
        return np.concatenate([out, alpha], axis=2)
    return out


# cv2.cuda.COLOR_BayerGR2BGR_MHT, COLOR_BayerBG2BGR_MHT, COLOR_BayerRG2GRAY_MHT (cv2.cuda exists
# only once lazycv is enabled)
@pytest.mark.parametrize("code,dcn", [(259, 3), (256, 4), (262, 1)])
def test_demosaicing_mht_is_opencv_cudas_kernel(rng, code, dcn):
    """Every site of the 2x2 pattern, the clamped taps next to the border and the zero ring:
    bit-exact with the kernel's formula, fused, on sizes down to 1x1."""
    for rows, cols in [(9, 12), (5, 4), (3, 3), (2, 5), (1, 1)]:
        src = rand_image(rng, rows, cols, 1, np.uint8)
        got = cv2.cuda.demosaicing(upload(src), code, dcn=dcn if dcn == 4 else -1).download()
        assert_close(got, mht_reference(src, code, dcn), 0, what=f"{rows}x{cols}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.sim
def test_demosaicing_mht_fuses_with_its_consumer(rng):
    """demosaicing MHT -> convertTo -> split in one kernel, fused == eager, every pattern."""
    src = rand_image(rng, 6, 5, 1, np.uint8)
    for code in (cv2.cuda.COLOR_BayerGB2BGR_MHT, cv2.cuda.COLOR_BayerRG2BGR_MHT):
        def chain():
            bgr = cv2.cuda.demosaicing(upload(src), code)
            return [p.download() for p in cv2.cuda.split(bgr.convertTo(cv2.CV_32FC3, alpha=0.5))]
        fused, eager = run_both(chain)
        assert_fused_equals_eager(fused, eager)
        ref = mht_reference(src, code).astype(np.float32) * 0.5
        assert_close(np.stack(fused, axis=2), ref, 0)
    with pytest.raises(cv2.error, match="demosaicing"):
        cv2.cuda.demosaicing(upload(src), cv2.cuda.COLOR_BayerGR2BGR_MHT, dcn=2)
