"""Geometry gathers (warpAffine, warpPerspective, remap, rotate, buildWarp*Maps, flip, transpose,
copyMakeBorder, pyrDown, pyrUp) against CPU OpenCV, fused in one kernel with their neighbours.

Each combination below is one compiled kernel (~1-3 s on the CPU backend), so the lists cover
every depth, interpolation and border mode once rather than their product."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv.ops.base import op
from lazycv.ops.warp import reference_rotate

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

U8, U16, S16, F32 = np.uint8, np.uint16, np.int16, np.float32
C, REP, REF, WRAP, R101 = (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_WRAP,
                           cv2.BORDER_REFLECT_101)
NN, LIN, CUB = cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC
SIZES = [(1, 1), (5, 7), (13, 17)] if not SIM else [(1, 1), (4, 5)]
OUT = (15, 11) if not SIM else (5, 4)
BVAL = (5, 60, 70, 80)


def _tol(dtype):
    """Integers: CPU OpenCV's float interpolation rounds the same way (bit-exact here, 1 allowed
    for an FMA's last bit); float32: its SIMD FMAs against ours."""
    return (1, None) if np.dtype(dtype).kind != "f" else (1e-3, 1e-5)


def _affine(rng):
    return np.float64([[0.9, 0.2, 1.3], [-0.15, 1.1, -0.7]]) + rng.normal(0, 0.05, (2, 3))


def _sizes(mode):
    """CPU OpenCV's warps loop forever on a 1x1 source with BORDER_REFLECT_101 (its reference
    hangs), so that pair is left out."""
    return [hw for hw in SIZES if not (hw == (1, 1) and mode == R101)]


def _check(got, ref, dtype, what):
    tol, rel = _tol(dtype)
    assert_close(got, ref, tol, rel, what=what)


AFFINE = [(U8, 3, LIN, C), (U8, 1, NN, REF), (U16, 1, CUB, REP), (S16, 1, LIN, WRAP), (S16, 1, NN, R101),
          (F32, 1, CUB, R101)]


@pytest.mark.parametrize("dtype,cn,interp,mode", [pytest.param(*a, marks=pytest.mark.sim) if i < 2 else a
                                                  for i, a in enumerate(AFFINE)])
def test_warp_affine_matches_cpu(rng, dtype, cn, interp, mode):
    for h, w in _sizes(mode):
        src = rand_image(rng, h, w, cn, dtype)
        M = _affine(rng)
        for inverse in (0, cv2.WARP_INVERSE_MAP):
            flags = interp | inverse
            ref = cv2.warpAffine(src, M, OUT, flags=flags, borderMode=mode, borderValue=BVAL)
            got = cv2.cuda.warpAffine(upload(src), M, OUT, flags=flags, borderMode=mode, borderValue=BVAL)
            _check(got.download(), ref, dtype, f"{h}x{w} flags={flags}")
    assert lazycv.stats()["fallbacks"] == 0


@pytest.mark.parametrize("dtype,cn,interp,mode", [(U8, 1, LIN, C), (S16, 1, LIN, REP)])
def test_warp_perspective_matches_cpu(rng, dtype, cn, interp, mode):
    for h, w in _sizes(mode):
        src = rand_image(rng, h, w, cn, dtype)
        M = np.vstack([_affine(rng), [0.002, -0.003, 1.0]])
        for inverse in (0, cv2.WARP_INVERSE_MAP):
            ref = cv2.warpPerspective(src, M, OUT, flags=interp | inverse, borderMode=mode, borderValue=BVAL)
            got = cv2.cuda.warpPerspective(upload(src), M, OUT, None, interp | inverse, mode, BVAL)
            _check(got.download(), ref, dtype, f"{h}x{w}")


@pytest.mark.parametrize("dtype,cn,interp,mode", [pytest.param(U8, 3, LIN, C, marks=pytest.mark.sim),
                                                  (S16, 1, LIN, R101), (F32, 1, CUB, REP)])
def test_remap_matches_cpu(rng, dtype, cn, interp, mode):
    oh, ow = OUT[1], OUT[0]
    for h, w in _sizes(mode):
        src = rand_image(rng, h, w, cn, dtype)
        mx = (rng.random((oh, ow)) * (w + 6) - 3).astype(np.float32)
        my = (rng.random((oh, ow)) * (h + 6) - 3).astype(np.float32)
        mx[0, :3] = (-0.5, 0.5, 1.5)                # round half to even for NEAREST
        ref = cv2.remap(src, mx, my, interp, borderMode=mode, borderValue=BVAL)
        got = cv2.cuda.remap(upload(src), upload(mx), upload(my), interp, borderMode=mode, borderValue=BVAL)
        _check(got.download(), ref, dtype, f"{h}x{w}")


@pytest.mark.sim
def test_build_maps_then_remap_is_warp_in_one_kernel(rng):
    """The maps are the coordinates warpAffine reads, so remap(src, maps) equals it (bit-exact),
    and maps still pending fuse into the remap: one kernel, nothing written but the image."""
    src = rand_image(rng, 9, 8, 3, U8)
    M = _affine(rng)
    xmap, ymap = cv2.cuda.buildWarpAffineMaps(M, False, OUT)
    assert xmap.type() == ymap.type() == cv2.CV_32FC1 and xmap.size() == OUT
    lazycv.reset_stats()
    got = cv2.cuda.remap(upload(src), xmap, ymap, LIN, borderValue=BVAL).download()
    assert lazycv.stats()["kernels_launched"] == 1
    ref = cv2.warpAffine(src, M, OUT, flags=LIN, borderValue=BVAL)
    assert_close(got, ref, 1)
    assert_close(got, cv2.cuda.warpAffine(upload(src), M, OUT, borderValue=BVAL).download(), 0)


def test_build_maps_values(rng):
    """xmap/ymap hold M^-1 (x, y) (divided by w for a perspective), in float32."""
    M = np.vstack([_affine(rng), [0.002, -0.003, 1.0]])
    ys, xs = np.mgrid[0:OUT[1], 0:OUT[0]].astype(np.float64)
    for inverse in (True, False):
        Mi = M if inverse else np.linalg.inv(M)
        w = Mi[2, 0] * xs + Mi[2, 1] * ys + Mi[2, 2]
        ex = (Mi[0, 0] * xs + Mi[0, 1] * ys + Mi[0, 2]) / w
        ey = (Mi[1, 0] * xs + Mi[1, 1] * ys + Mi[1, 2]) / w
        xmap, ymap = cv2.cuda.buildWarpPerspectiveMaps(M, inverse, OUT)
        assert_close(xmap.download(), ex.astype(np.float32), 1e-4, 1e-5)
        assert_close(ymap.download(), ey.astype(np.float32), 1e-4, 1e-5)
        ax, ay = cv2.cuda.buildWarpAffineMaps(M[:2], inverse, OUT)
        Ai = M[:2] if inverse else cv2.invertAffineTransform(M[:2])
        assert_close(ax.download(), (Ai[0, 0] * xs + Ai[0, 1] * ys + Ai[0, 2]).astype(np.float32), 1e-4, 1e-5)
        assert_close(ay.download(), (Ai[1, 0] * xs + Ai[1, 1] * ys + Ai[1, 2]).astype(np.float32), 1e-4, 1e-5)


def test_rotate_is_opencv_cuda_rotation(rng):
    """NPP's rotation around the origin, then the shift (the matrix OpenCV's rotate test uses)."""
    src = rand_image(rng, 13, 17, 3, U8)
    for angle, xs, ys in ((30.0, 4.0, -2.0), (-90.0, 0.0, 16.0)):
        got = cv2.cuda.rotate(upload(src), OUT, angle, None, xs, ys, LIN).download()
        assert_close(got, reference_rotate(src, OUT, angle, xs, ys, LIN), 1)


def test_matrix_is_a_kernel_argument(rng):
    """A new matrix, border value or size reuses the compiled kernel."""
    src = rand_image(rng, 6, 7, 3, U8)
    cv2.cuda.warpAffine(upload(src), _affine(rng), OUT, borderValue=BVAL).download()
    compiles = lazycv.stats()["compiles"]
    for k in range(3):
        M = _affine(rng)
        got = cv2.cuda.warpAffine(upload(src), M, (9 + k, 4), borderValue=(k, 2, 3)).download()
        assert_close(got, cv2.warpAffine(src, M, (9 + k, 4), borderValue=(k, 2, 3)), 1)
    assert lazycv.stats()["compiles"] == compiles


@pytest.mark.parametrize("dtype,cn", [pytest.param(U8, 3, marks=pytest.mark.sim), (F32, 1)])
def test_flip_transpose_match_cpu(rng, dtype, cn):
    for h, w in SIZES:
        src = rand_image(rng, h, w, cn, dtype)
        for code in ((0, 1, -1) if dtype is U8 else (-1,)):
            assert_close(cv2.cuda.flip(upload(src), code).download(), cv2.flip(src, code), 0)
        assert_close(cv2.cuda.transpose(upload(src)).download(), cv2.transpose(src), 0)


@pytest.mark.parametrize("dtype,cn,modes", [pytest.param(U8, 1, (C, REP, REF, WRAP, R101), marks=pytest.mark.sim),
                                            (F32, 3, (C,))])
def test_copy_make_border_matches_cpu(rng, dtype, cn, modes):
    for h, w in SIZES:
        src = rand_image(rng, h, w, cn, dtype)
        for mode in modes:
            ref = cv2.copyMakeBorder(src, 2, 3, 4, 1, mode, value=BVAL)
            got = cv2.cuda.copyMakeBorder(upload(src), 2, 3, 4, 1, mode, value=BVAL).download()
            assert_close(got, ref, 0, what=f"{h}x{w} mode {mode}")


@pytest.mark.parametrize("dtype,cn", [pytest.param(U8, 3, marks=pytest.mark.sim), (S16, 1), (F32, 1)])
def test_pyramids_match_cpu(rng, dtype, cn):
    tol, rel = (0, None) if dtype is not F32 else (1e-5, 1e-6)
    for h, w in SIZES + [(6, 9), (2, 3)]:
        src = rand_image(rng, h, w, cn, dtype)
        assert_close(cv2.cuda.pyrDown(upload(src)).download(), cv2.pyrDown(src), tol, rel, what=f"down {h}x{w}")
        assert_close(cv2.cuda.pyrUp(upload(src)).download(), cv2.pyrUp(src), tol, rel, what=f"up {h}x{w}")


def test_tap_counts():
    """What the planner reads to decide where a multi-tap producer is written to memory."""
    g = upload(np.zeros((8, 8, 3), np.uint8))
    M = np.float64([[1, 0, 0], [0, 1, 0]])
    expect = {cv2.cuda.warpAffine(g, M, (4, 4), flags=NN): 1, cv2.cuda.warpAffine(g, M, (4, 4)): 4,
              cv2.cuda.warpAffine(g, M, (4, 4), flags=CUB): 16, cv2.cuda.pyrDown(g): 25, cv2.cuda.pyrUp(g): 9,
              cv2.cuda.flip(g, 1): 1, cv2.cuda.transpose(g): 1, cv2.cuda.copyMakeBorder(g, 1, 1, 1, 1, REP): 1}
    for mat, taps in expect.items():
        assert mat._node.op.tap_count(mat._node) == taps, mat._node.op.name
    assert op("warp") is not None


@pytest.mark.sim
def test_resize_flip_cvtcolor_convert_is_one_kernel(rng):
    src = rand_image(rng, 9, 12, 3, U8)
    lazycv.reset_stats()
    r = cv2.cuda.resize(upload(src), (5, 4))
    f = cv2.cuda.flip(r, 1)
    rgb = cv2.cuda.cvtColor(f, cv2.COLOR_BGR2RGB)
    out = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255).download()
    s = lazycv.stats()
    assert s["kernels_launched"] == 1 and s["fallbacks"] == 0
    ref = cv2.cvtColor(cv2.flip(cv2.resize(src, (5, 4)), 1), cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    assert_close(out, ref, 1 / 255 + 1e-6)


@pytest.mark.sim
def test_warp_chain_fused_equals_eager(rng):
    """warpAffine -> flip -> copyMakeBorder -> pyrDown: the pyramid after the warp (two multi-tap
    gathers) is a hard cut; fused and eager agree bit-exactly."""
    src = rand_image(rng, 7, 9, 3, U8)
    M = _affine(rng)

    def chain():
        w = cv2.cuda.warpAffine(upload(src), M, OUT, borderValue=BVAL)
        b = cv2.cuda.copyMakeBorder(cv2.cuda.flip(w, -1), 1, 2, 2, 1, R101)
        return [b.download(), cv2.cuda.pyrDown(b).download()]
    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)
    ref = cv2.copyMakeBorder(cv2.flip(cv2.warpAffine(src, M, OUT, borderValue=BVAL), -1), 1, 2, 2, 1, R101)
    assert_close(fused[0], ref, 1)


def test_bad_arguments_raise_cv_error(rng):
    g = upload(rand_image(rng, 5, 6, 3, U8))
    M = np.float64([[1, 0, 0], [0, 1, 0]])
    bad = [lambda: cv2.cuda.warpAffine(g, np.eye(3), (4, 4)),
           lambda: cv2.cuda.warpPerspective(g, M, (4, 4)),
           lambda: cv2.cuda.warpAffine(g, M, (0, 4)),
           lambda: cv2.cuda.warpAffine(g, M, (4, 4), flags=cv2.INTER_AREA),
           lambda: cv2.cuda.warpAffine(g, M, (4, 4), borderMode=cv2.BORDER_TRANSPARENT),
           lambda: cv2.cuda.warpAffine(upload(np.zeros((3, 3), np.float64)), M, (4, 4)),
           lambda: cv2.cuda.warpAffine(upload(np.zeros((3, 3, 2), np.uint8)), M, (4, 4)),
           lambda: cv2.cuda.remap(g, upload(np.zeros((3, 3), np.float64)), upload(np.zeros((3, 3), np.float32)), LIN),
           lambda: cv2.cuda.remap(g, upload(np.zeros((3, 3), np.float32)), upload(np.zeros((3, 4), np.float32)), LIN),
           lambda: cv2.cuda.rotate(upload(np.zeros((3, 3), np.int16)), (4, 4), 10.0),
           lambda: cv2.cuda.copyMakeBorder(g, -1, 0, 0, 0, C),
           lambda: cv2.cuda.copyMakeBorder(g, 1, 1, 1, 1, 7),
           lambda: cv2.cuda.pyrDown(upload(np.zeros((3, 3), np.int8))),
           lambda: cv2.cuda.flip(g, 0.5),
           lambda: cv2.cuda.buildWarpAffineMaps(np.eye(3), False, (4, 4))]
    for i, call in enumerate(bad):
        with pytest.raises(cv2.error):
            call()
    # the graph stays valid after the errors
    assert_close(cv2.cuda.flip(g, 1).download(), cv2.flip(g.download(), 1), 0)
