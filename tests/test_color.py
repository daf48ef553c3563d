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


def test_demosaicing_other_bayer_codes_fall_back_and_mht_raises(rng):
    src = rand_image(rng, 6, 7, 1, np.uint8)
    for code in (cv2.COLOR_BayerGB2GRAY, cv2.COLOR_BayerBG2BGR_VNG):
        assert_close(cv2.cuda.demosaicing(upload(src), code).download(), cv2.demosaicing(src, code), 0)
    assert lazycv.stats()["fallbacks"] == 2
    with pytest.raises(cv2.error, match="demosaicing"):
        cv2.cuda.demosaicing(upload(src), 256)          # COLOR_BayerBG2BGR_MHT
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
