"""Reductions (ops/reduce.py, ops/hist.py) against CPU OpenCV, their device forms, and the device
scalar of arithmetic: statistics stay on the device until a host number is asked for."""
import cv2
import numpy as np
import pytest

import lazycv

from lazycv.ops.reduce import reference_normalize

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

ALL = {cv2.CV_8U: np.uint8, cv2.CV_8S: np.int8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16,
       cv2.CV_32S: np.int32, cv2.CV_32F: np.float32, cv2.CV_64F: np.float64}
SIZES = [(1, 1), (5, 13), (17, 33)] if not SIM else [(1, 1), (3, 5)]


def _mask(rng, h, w, empty=False):
    m = (rng.random((h, w)) < 0.5).astype(np.uint8) * 255
    if empty:
        m[:] = 0
    elif not m.any():
        m[0, 0] = 255
    return m


def _gpu_mask(m):
    return None if m is None else upload(m)


@pytest.mark.parametrize("depth", list(ALL))
@pytest.mark.parametrize("cn", [1, 3, 4])
def test_sums_match_cpu(rng, depth, cn):
    for h, w in SIZES:
        src = rand_image(rng, h, w, cn, ALL[depth])
        flat = src.reshape(h * w, cn).astype(np.float64)
        for mask in (None, _mask(rng, h, w)):
            sel = flat if mask is None else flat[mask.reshape(-1) != 0]
            # (CPU OpenCV sums 32S in int32 lanes that can wrap; lazycv sums exactly, in double)
            exact = mask is not None or depth == cv2.CV_32S
            want = {"sum": tuple(sel.sum(0)) + (0.0,) * (4 - cn) if exact else cv2.sumElems(src),
                    "absSum": np.abs(sel).sum(0), "sqrSum": (sel * sel).sum(0)}
            for name, ref in want.items():
                got = getattr(cv2.cuda, name)(upload(src), _gpu_mask(mask))
                assert len(got) == 4 and got[cn:] == (0.0,) * (4 - cn)
                np.testing.assert_allclose(got[:cn], np.asarray(ref)[:cn], rtol=1e-9, err_msg=f"{name} {h}x{w}")


@pytest.mark.sim
def test_sums_sim(rng):
    src = rand_image(rng, 3, 5, 3, np.uint8)
    mask = _mask(rng, 3, 5)
    assert cv2.cuda.sum(upload(src)) == cv2.sumElems(src)
    ref = src.reshape(-1, 3)[mask.reshape(-1) != 0].astype(np.float64)
    assert cv2.cuda.sqrSum(upload(src), upload(mask))[:3] == tuple((ref * ref).sum(0))


@pytest.mark.parametrize("depth", list(ALL))
def test_min_max_loc_matches_cpu(rng, depth):
    for h, w in SIZES + [(4, 1)]:
        src = rand_image(rng, h, w, 1, ALL[depth])
        if h * w > 4:
            src.flat[7 % (h * w)] = src.max()            # a tie: the first in row-major order wins
        for mask in (None, _mask(rng, h, w)):
            ref = cv2.minMaxLoc(src, mask)
            assert cv2.cuda.minMaxLoc(upload(src), _gpu_mask(mask)) == ref, f"{h}x{w}"
            assert cv2.cuda.minMax(upload(src), _gpu_mask(mask)) == ref[:2]


@pytest.mark.sim
def test_min_max_loc_sim(rng):
    src = rand_image(rng, 3, 5, 1, np.int16)
    mask = _mask(rng, 3, 5)
    assert cv2.cuda.minMaxLoc(upload(src)) == cv2.minMaxLoc(src)
    assert cv2.cuda.minMaxLoc(upload(src), upload(mask)) == cv2.minMaxLoc(src, mask)


def test_min_max_empty_mask(rng):
    src = rand_image(rng, 4, 6, 1, np.float32)
    mask = _mask(rng, 4, 6, empty=True)
    assert cv2.cuda.minMaxLoc(upload(src), upload(mask)) == cv2.minMaxLoc(src, mask)


def test_find_min_max_device_forms(rng):
    src = rand_image(rng, 6, 9, 1, np.uint16)
    lazycv.reset_stats()
    vals, loc = cv2.cuda.findMinMaxLoc(upload(src))
    mm = cv2.cuda.findMinMax(upload(src))
    assert lazycv.stats()["bytes_d2h"] == 0
    lo, hi, (x0, y0), (x1, y1) = cv2.minMaxLoc(src)
    assert mm.type() == cv2.CV_32SC1 and mm.size() == (2, 1)
    np.testing.assert_array_equal(mm.download(), [[lo, hi]])
    np.testing.assert_array_equal(vals.download(), [[lo, hi]])
    np.testing.assert_array_equal(loc.download(), [[y0 * 9 + x0, y1 * 9 + x1]])
    f = rand_image(rng, 6, 9, 1, np.float32)
    assert cv2.cuda.findMinMax(upload(f)).type() == cv2.CV_32FC1


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16S, cv2.CV_32F])
def test_count_non_zero(rng, depth):
    for h, w in SIZES:
        src = rand_image(rng, h, w, 1, ALL[depth])
        src[rng.random((h, w)) < 0.3] = 0
        assert cv2.cuda.countNonZero(upload(src)) == cv2.countNonZero(src)
        d = cv2.cuda.countNonZero(upload(src), cv2.cuda_GpuMat())
        assert d.type() == cv2.CV_32SC1 and d.download()[0, 0] == cv2.countNonZero(src)


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16S, cv2.CV_32F])
def test_norm_matches_cpu(rng, depth):
    rtol = 1e-6 if depth == cv2.CV_32F else 1e-9        # (CPU takes a 32F difference in float)
    for h, w in SIZES:
        for cn in (1, 3):
            a, b = rand_image(rng, h, w, cn, ALL[depth]), rand_image(rng, h, w, cn, ALL[depth])
            for nt in (cv2.NORM_L1, cv2.NORM_L2, cv2.NORM_INF):
                np.testing.assert_allclose(cv2.cuda.norm(upload(a), nt), cv2.norm(a, nt), rtol=rtol)
                np.testing.assert_allclose(cv2.cuda.norm(upload(a), upload(b), nt), cv2.norm(a, b, nt), rtol=rtol)
                if cn == 1:
                    m = _mask(rng, h, w)
                    np.testing.assert_allclose(cv2.cuda.norm(upload(a), nt, upload(m)), cv2.norm(a, nt, mask=m),
                                               rtol=rtol)
        np.testing.assert_allclose(cv2.cuda.norm(upload(a), upload(b)), cv2.norm(a, b), rtol=rtol)


def test_calc_norm_device_forms(rng):
    a, b = rand_image(rng, 5, 7, 1, np.float32), rand_image(rng, 5, 7, 1, np.float32)
    lazycv.reset_stats()
    n = cv2.cuda.calcNorm(upload(a), cv2.NORM_L2)
    d = cv2.cuda.calcNormDiff(upload(a), upload(b), normType=cv2.NORM_L1)
    assert lazycv.stats()["bytes_d2h"] == 0
    np.testing.assert_allclose(n.download()[0, 0], cv2.norm(a, cv2.NORM_L2), rtol=1e-9)
    np.testing.assert_allclose(d.download()[0, 0], cv2.norm(a, b, cv2.NORM_L1), rtol=1e-6)


NORMALIZE = [(cv2.NORM_MINMAX, 10, 200), (cv2.NORM_MINMAX, 1, 0), (cv2.NORM_L1, 1000, 0), (cv2.NORM_L2, 100, 0),
             (cv2.NORM_INF, 50, 0)]


@pytest.mark.parametrize("depth, dtype", [(cv2.CV_8U, -1), (cv2.CV_8U, cv2.CV_32F), (cv2.CV_16S, -1),
                                          (cv2.CV_32F, -1), (cv2.CV_32F, cv2.CV_8U), (cv2.CV_64F, -1)])
def test_normalize_matches_cpu(rng, depth, dtype):
    from lazycv.ops.reduce import reference_normalize
    for h, w in SIZES:
        src = rand_image(rng, h, w, 1, ALL[depth])
        for nt, alpha, beta in NORMALIZE:
            for mask in (None, _mask(rng, h, w)):
                got = cv2.cuda.normalize(upload(src), alpha, beta, nt, dtype, mask=_gpu_mask(mask)).download()
                ref = reference_normalize(src, alpha, beta, nt, dtype, mask)
                float_out = ref.dtype.kind == "f"
                assert_close(got, ref, 1e-4 if float_out else 1, rel=1e-5 if float_out else None,
                             what=f"{h}x{w} norm {nt}")


@pytest.mark.sim
def test_normalize_sim(rng):
    from lazycv.ops.reduce import reference_normalize
    src = rand_image(rng, 3, 5, 1, np.uint8)
    for nt, alpha, beta in NORMALIZE[:1] + NORMALIZE[3:4]:
        got = cv2.cuda.normalize(upload(src), alpha, beta, nt, cv2.CV_32F).download()
        assert_close(got, reference_normalize(src, alpha, beta, nt, cv2.CV_32F), 1e-4, rel=1e-5)


def test_normalize_into_dst_with_mask_keeps_the_rest(rng):
    src = rand_image(rng, 6, 8, 1, np.uint8)
    mask = _mask(rng, 6, 8)
    old = rand_image(rng, 6, 8, 1, np.uint8)
    dst = upload(old)
    cv2.cuda.normalize(upload(src), 0, 255, cv2.NORM_MINMAX, -1, dst, upload(mask))
    assert_close(dst.download(), cv2.normalize(src, old.copy(), 0, 255, cv2.NORM_MINMAX, -1, mask), 1)


@pytest.mark.sim
def test_normalize_after_resize_is_one_reduce_phase_plus_one_fused_map(rng):
    """The statistic never reaches the host and the resize is never written: the reduce kernel
    computes the resize's pixels in registers and folds them in (plus the fold of its blocks'
    partials on CUDA), then one fused map (the resize again, normalize and the convert after
    it) reads the statistic from device memory. Recording launches nothing."""
    src = rand_image(rng, 9, 12, 1, np.uint8) if SIM else rand_image(rng, 40, 60, 1, np.uint8)
    dsize = (5, 4) if SIM else (31, 17)

    def pipeline():
        lazycv.reset_stats()
        r = cv2.cuda.resize(upload(src), dsize)
        n = cv2.cuda.normalize(r, 0, 1, cv2.NORM_MINMAX, cv2.CV_32F)
        out = n.convertTo(cv2.CV_8U, alpha=255)
        before = dict(lazycv.stats())
        host = out.download()
        return host, before, dict(lazycv.stats())

    (fused, before, after), (eager, eager_before, eager_after) = run_both(pipeline)
    assert before["kernels_launched"] == eager_before["kernels_launched"] == 0
    assert before["bytes_d2h"] == 0
    assert after["bytes_d2h"] == fused.nbytes
    reduce_launches = 1 if lazycv.backend() == "cpu" else 2
    assert after["kernels_launched"] == 1 + reduce_launches
    assert eager_after["kernels_launched"] == 3 + reduce_launches     # eager: resize, normalize, convert apart
    assert_fused_equals_eager(fused, eager)
    r = cv2.resize(src, dsize)
    ref = cv2.normalize(r, None, 0, 1, cv2.NORM_MINMAX, cv2.CV_32F)
    assert_close(fused, np.clip(np.rint(ref.astype(np.float64) * 255), 0, 255).astype(np.uint8), 1)


RESIZE_SRC, RESIZE_TO = ((12, 10), (7, 5)) if SIM else ((23, 31), (17, 13))


def _reduction_calls(g, mask, other):
    """Every fused reduction of ``g`` (pending), as host numbers and device results."""
    def dev(m):
        return m.download().reshape(-1).tolist()
    out = {"minMaxLoc": cv2.cuda.minMaxLoc(g), "minMaxLoc mask": cv2.cuda.minMaxLoc(g, mask),
           "sum": cv2.cuda.sum(g), "sum mask": cv2.cuda.sum(g, mask), "absSum": cv2.cuda.absSum(g),
           "sqrSum": cv2.cuda.sqrSum(g, mask), "countNonZero": cv2.cuda.countNonZero(g),
           "findMinMax": dev(cv2.cuda.findMinMax(g)), "calcSum": dev(cv2.cuda.calcSum(g, mask=mask))}
    for nt in (cv2.NORM_L1, cv2.NORM_L2, cv2.NORM_INF):
        out[f"norm {nt}"] = cv2.cuda.norm(g, nt)
        out[f"norm {nt} mask"] = cv2.cuda.norm(g, nt, mask)
        out[f"norm {nt} diff"] = cv2.cuda.norm(g, other, nt)
        out[f"calcNorm {nt}"] = dev(cv2.cuda.calcNorm(g, nt))
    if g.depth() in (cv2.CV_8U, cv2.CV_32F):
        out["meanStdDev"] = cv2.cuda.meanStdDev(g)
        out["meanStdDev mask"] = cv2.cuda.meanStdDev(g, mask=mask)
    return out


def _reference_calls(r, mask, other):
    """CPU OpenCV's answers for the pixels ``r`` (what _reduction_calls reduces)."""
    f = r.astype(np.float64)
    sel = f[mask != 0]
    lo, hi = cv2.minMaxLoc(r)[:2]
    depth_int = r.dtype.kind != "f"
    out = {"minMaxLoc": cv2.minMaxLoc(r), "minMaxLoc mask": cv2.minMaxLoc(r, mask),
           "sum": (f.sum(), 0.0, 0.0, 0.0), "sum mask": (sel.sum(), 0.0, 0.0, 0.0),
           "absSum": (np.abs(f).sum(), 0.0, 0.0, 0.0), "sqrSum": ((sel * sel).sum(), 0.0, 0.0, 0.0),
           "countNonZero": cv2.countNonZero(r),
           "findMinMax": [lo, hi], "calcSum": [sel.sum()]}
    for nt in (cv2.NORM_L1, cv2.NORM_L2, cv2.NORM_INF):
        out[f"norm {nt}"] = cv2.norm(r, nt)
        out[f"norm {nt} mask"] = cv2.norm(r, nt, mask=mask)
        # (CPU takes a 32F difference in float; the reference in double keeps the tolerance tight)
        out[f"norm {nt} diff"] = cv2.norm(f, other.astype(np.float64), nt)
        out[f"calcNorm {nt}"] = [cv2.norm(r, nt)]
    if r.dtype in (np.uint8, np.float32):
        m, sd = cv2.meanStdDev(r)
        out["meanStdDev"] = ((m[0, 0], 0.0, 0.0, 0.0), (sd[0, 0], 0.0, 0.0, 0.0))
        m, sd = cv2.meanStdDev(r, mask=mask)
        out["meanStdDev mask"] = ((m[0, 0], 0.0, 0.0, 0.0), (sd[0, 0], 0.0, 0.0, 0.0))
    return out, depth_int


def _assert_calls_match(got, ref, integer_pixels):
    """Locations, extremes and counts exactly, and for integer pixels also sums and L1/INF norms
    (double sums of integers are exact); L2 norms (a root), means and float sums within 1e-6."""
    assert got.keys() == ref.keys()
    for name in ref:
        words = name.split()
        exact = words[0] in ("minMaxLoc", "countNonZero", "findMinMax") or \
            (integer_pixels and words[0] != "meanStdDev" and str(cv2.NORM_L2) not in words)
        if exact:
            assert _numbers(got[name]).tolist() == _numbers(ref[name]).tolist(), name
        else:
            np.testing.assert_allclose(_numbers(got[name]), _numbers(ref[name]), rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.sim
@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16S, cv2.CV_32F] if not SIM else [cv2.CV_8U])
def test_reductions_of_a_pending_resize_match_cpu(rng, depth):
    """Each fused reduction of a pending resize equals CPU OpenCV's on the resized pixels:
    exactly for integer statistics (locations, counts, integer sums and L1/INF norms), within
    1e-6 for float ones; and the resize itself is CPU cv2.resize's within SPEC's tolerance."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO
    src, other_src = rand_image(rng, h, w, 1, ALL[depth]), rand_image(rng, h, w, 1, ALL[depth])
    src.flat[5] = 0                                       # (countNonZero has something to skip)
    mask = _mask(rng, dsize[1], dsize[0])
    r = cv2.cuda.resize(upload(src), dsize).download()    # the pixels the reductions fold
    other = cv2.cuda.resize(upload(other_src), dsize).download()
    assert_close(r, cv2.resize(src, dsize), 1 if depth != cv2.CV_32F else 1e-2)
    got = _reduction_calls(cv2.cuda.resize(upload(src), dsize), upload(mask),
                           cv2.cuda.resize(upload(other_src), dsize))
    ref, depth_int = _reference_calls(r, mask, other)
    _assert_calls_match(got, ref, depth_int)


@pytest.mark.sim
def test_fused_reductions_equal_eager_ones(rng):
    """fuse=False runs the resize, then the reduction over its memory: the same numbers."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO
    src, other_src = rand_image(rng, h, w, 1, np.float32), rand_image(rng, h, w, 1, np.float32)
    mask = _mask(rng, dsize[1], dsize[0])

    def pipeline():
        return _reduction_calls(cv2.cuda.resize(upload(src), dsize), upload(mask),
                                cv2.cuda.resize(upload(other_src), dsize))
    fused, eager = run_both(pipeline)
    assert fused.keys() == eager.keys()
    for name in fused:
        assert_fused_equals_eager(_numbers(fused[name]), _numbers(eager[name]))


def _numbers(v):
    """A call's answer (numbers, tuples of them, locations) as one float64 array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_numbers(x) for x in v]) if v else np.zeros(0)
    return np.array([float(v)])


@pytest.mark.sim
def test_recording_a_device_reduction_launches_nothing(rng):
    """The device forms (and normalize) are recorded like any op: nothing runs until a result
    is asked for; then each statistic is one reduce phase over the pending chain."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO
    src = rand_image(rng, h, w, 1, np.uint8)
    mask = upload(_mask(rng, dsize[1], dsize[0]))
    g = upload(src)
    lazycv.reset_stats()
    r = cv2.cuda.resize(g, dsize)
    results = [cv2.cuda.normalize(r, 0, 255, nt, -1, mask=m) for nt in (cv2.NORM_MINMAX, cv2.NORM_L1,
                                                                         cv2.NORM_L2, cv2.NORM_INF)
               for m in (None, mask)]
    results += [cv2.cuda.calcSum(r), cv2.cuda.calcSqrSum(r, mask=mask), cv2.cuda.findMinMax(r),
                cv2.cuda.findMinMaxLoc(r)[1], cv2.cuda.countNonZero(r, cv2.cuda_GpuMat()),
                cv2.cuda.calcNorm(r, cv2.NORM_L2), cv2.cuda.meanStdDev(r, cv2.cuda_GpuMat())]
    assert lazycv.stats()["kernels_launched"] == 0 and lazycv.stats()["bytes_d2h"] == 0
    lazycv.materialize(*results)
    assert "pending" in repr(r)                           # folded in registers, never written
    ref = cv2.resize(src, dsize)
    np.testing.assert_allclose(results[-2].download()[0, 0], cv2.norm(r.download(), cv2.NORM_L2), rtol=1e-9)
    assert_close(results[0].download(), reference_normalize(r.download(), 0, 255, cv2.NORM_MINMAX, -1), 1)
    assert_close(r.download(), ref, 1)


@pytest.mark.sim
def test_a_host_number_reduction_fuses_its_input_and_leaves_it_pending(rng):
    """minMax of a pending resize: one reduce phase (its kernel, plus the fold on CUDA), the
    resize computed in it and not written."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO
    src = rand_image(rng, h, w, 1, np.uint8)
    r = cv2.cuda.resize(upload(src), dsize)
    lazycv.reset_stats()
    got = cv2.cuda.minMaxLoc(r)
    assert lazycv.stats()["kernels_launched"] == (1 if lazycv.backend() == "cpu" else 2)
    assert "pending" in repr(r)
    assert got == cv2.minMaxLoc(r.download())


def test_a_statistic_recorded_before_its_input_changes_reads_the_old_pixels(rng):
    a, b = rand_image(rng, 6, 7, 1, np.uint8), rand_image(rng, 6, 7, 1, np.uint8)
    g = upload(a)
    s = cv2.cuda.calcSum(cv2.cuda.add(g, 1))
    n = cv2.cuda.normalize(g, 0, 255, cv2.NORM_MINMAX, -1)
    mm = cv2.cuda.findMinMax(g)
    cv2.cuda.add(g, 5, dst=g)                             # in place: its readers run first
    g.upload(b)                                           # the whole buffer
    assert s.download()[0, 0] == cv2.sumElems(cv2.add(a, 1))[0]
    assert_close(n.download(), cv2.normalize(a, None, 0, 255, cv2.NORM_MINMAX, -1), 1)
    np.testing.assert_array_equal(mm.download(), [[a.min(), a.max()]])
    assert cv2.cuda.minMax(g) == (float(b.min()), float(b.max()))


@pytest.mark.sim
def test_a_repeated_normalize_replays_its_plan_with_each_frames_statistic(rng):
    """Frame after frame the same calls: the flush's plan is replayed (reduce kernel, then map)
    and every frame's statistic is its own."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO
    frames = [rand_image(rng, h, w, 1, np.uint8) for _ in range(3)]
    lazycv.reset_stats()
    for f in frames:
        g = upload(f)
        out = cv2.cuda.normalize(cv2.cuda.resize(g, dsize), 0, 1, cv2.NORM_MINMAX, cv2.CV_32F).download()
        lo, hi = cv2.cuda.minMax(cv2.cuda.resize(g, dsize))
        r = cv2.cuda.resize(g, dsize).download()
        assert (lo, hi) == cv2.minMaxLoc(r)[:2]
        assert_close(out, cv2.normalize(r, None, 0, 1, cv2.NORM_MINMAX, cv2.CV_32F), 1e-6, rel=1e-6)
    assert lazycv.stats()["plan_hits"] >= 4


@pytest.mark.sim
def test_a_captured_graph_replays_a_reduction_with_each_calls_pixels(rng):
    """lazycv.capture of resize -> normalize: each replay launches what a flush launches
    (the reduction keeps its partials buffer in the tape) and sees its own input."""
    (h, w), dsize = RESIZE_SRC, RESIZE_TO

    def step(f):
        return cv2.cuda.normalize(cv2.cuda.resize(f, dsize), 0, 255, cv2.NORM_MINMAX, -1)
    graph = lazycv.capture(step)
    frames = [rand_image(rng, h, w, 1, np.uint8) for _ in range(3)]
    for f in frames:
        lazycv.reset_stats()
        want = step(upload(f)).download()
        direct = lazycv.stats()["kernels_launched"]
        lazycv.reset_stats()
        got = graph(upload(f)).download()
        assert lazycv.stats()["kernels_launched"] <= direct + 1          # (+ the copy into its slot)
        np.testing.assert_array_equal(got, want)
    assert graph.replays == 2


@pytest.mark.parametrize("sim_ok", [pytest.param(True, marks=pytest.mark.sim)])
def test_device_scalar_gain_stays_on_device(rng, sim_ok):
    """frame * (target / mean(frame)) with the mean a 1x1 GpuMat: no download until the end."""
    src = rand_image(rng, 3, 5, 3, np.uint8)

    def pipeline():
        lazycv.reset_stats()
        g = upload(src)
        mean = cv2.cuda.multiply(cv2.cuda.calcSum(g), 1.0 / (3 * 5))
        out = cv2.cuda.multiply(g, cv2.cuda.divide(128.0, mean))
        d2h = lazycv.stats()["bytes_d2h"]
        return out.download(), d2h

    (fused, d2h), (eager, _) = run_both(pipeline)
    assert d2h == 0
    assert_fused_equals_eager(fused, eager)
    mean = src.reshape(-1, 3).astype(np.float64).mean(0)
    assert_close(fused, cv2.multiply(src, tuple(128.0 / mean)), 1)


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_32F])
def test_device_scalar_in_add_subtract_min(rng, depth):
    src = rand_image(rng, 5, 7, 3, ALL[depth])
    gray = rand_image(rng, 5, 7, 1, ALL[depth])
    g, s1 = upload(src), cv2.cuda.calcSum(upload(gray))               # 1 channel: broadcast
    v = cv2.sumElems(gray)[0]
    s3 = cv2.cuda.calcSum(upload(src))                                 # 3 channels: per channel
    v3 = cv2.sumElems(src)[:3]
    tol = 1 if depth == cv2.CV_8U else 1e-3
    assert_close(cv2.cuda.subtract(g, cv2.cuda.multiply(s1, 1e-3)).download(),
                 cv2.subtract(src, (v * 1e-3,) * 3 + (0,)), tol, rel=1e-5)
    assert_close(cv2.cuda.add(cv2.cuda.multiply(s3, 1e-3), g).download(),
                 cv2.add(src, tuple(x * 1e-3 for x in v3) + (0,)), tol, rel=1e-5)
    assert_close(cv2.cuda.min(g, cv2.cuda.multiply(s1, 1 / 35)).download(),
                 cv2.min(src, np.full(src.shape, v / 35, np.float64).astype(src.dtype)) if depth == cv2.CV_32F
                 else np.minimum(src, np.uint8(min(max(round(v / 35), 0), 255))), tol, rel=1e-5)


def test_device_scalar_wrong_channels_raises(rng):
    g = upload(rand_image(rng, 4, 4, 3, np.uint8))
    two = upload(np.zeros((1, 1, 2), np.float64))
    with pytest.raises(cv2.error, match="1x1 GpuMat"):
        cv2.cuda.add(g, two)


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16U, cv2.CV_32F])
def test_reduce_matches_cpu(rng, depth):
    ops = [cv2.REDUCE_SUM, cv2.REDUCE_AVG, cv2.REDUCE_MAX, cv2.REDUCE_MIN, cv2.REDUCE_SUM2]
    checked = 0
    for h, w in SIZES:
        for cn in (1, 3):
            src = rand_image(rng, h, w, cn, ALL[depth])
            for op in ops:
                for dim in (0, 1):
                    for dtype in (-1, cv2.CV_32S, cv2.CV_32F, cv2.CV_64F):
                        try:
                            ref = cv2.reduce(src, dim, op, dtype=dtype)
                        except cv2.error:
                            continue                      # a combination CPU OpenCV refuses
                        got = cv2.cuda.reduce(upload(src), dim, op, dtype=dtype).download()
                        fl = ref.dtype.kind == "f"
                        assert_close(got, ref, 1e-3 if fl else (1 if op == cv2.REDUCE_AVG else 0),
                                     rel=1e-5 if fl else None, what=f"op {op} dim {dim} dtype {dtype}")
                        checked += 1
    assert checked > 20


@pytest.mark.sim
def test_reduce_sim(rng):
    src = rand_image(rng, 3, 4, 2, np.float32)
    for dim in (0, 1):
        got = cv2.cuda.reduce(upload(src), dim, cv2.REDUCE_SUM).download()
        assert_close(got, cv2.reduce(src, dim, cv2.REDUCE_SUM), 1e-5, rel=1e-5)


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_32F])
def test_mean_std_dev(rng, depth):
    for h, w in SIZES:
        src = rand_image(rng, h, w, 1, ALL[depth])
        for mask in (None, _mask(rng, h, w)):
            m_ref, s_ref = cv2.meanStdDev(src, mask=mask)
            if mask is None:
                mean, std = cv2.cuda.meanStdDev(upload(src))
                dst = cv2.cuda.meanStdDev(upload(src), cv2.cuda_GpuMat())
            else:
                mean, std = cv2.cuda.meanStdDev(upload(src), mask=upload(mask))
                dst = cv2.cuda.meanStdDev(upload(src), upload(mask), dst=cv2.cuda_GpuMat())
            assert mean[1:] == std[1:] == (0.0, 0.0, 0.0)
            np.testing.assert_allclose([mean[0], std[0]], [m_ref[0, 0], s_ref[0, 0]], rtol=1e-7, atol=1e-9)
            assert dst.type() == cv2.CV_64FC1 and dst.size() == (2, 1)
            np.testing.assert_allclose(dst.download()[0], [m_ref[0, 0], s_ref[0, 0]], rtol=1e-7, atol=1e-9)


def test_calc_hist_and_equalize(rng):
    for h, w in SIZES:
        src = rand_image(rng, h, w, 1, np.uint8)
        mask = _mask(rng, h, w)
        ref = cv2.calcHist([src], [0], None, [256], [0, 256]).reshape(1, 256).astype(np.int32)
        got = cv2.cuda.calcHist(upload(src))
        assert got.type() == cv2.CV_32SC1 and got.size() == (256, 1)
        np.testing.assert_array_equal(got.download(), ref)
        ref_m = cv2.calcHist([src], [0], mask, [256], [0, 256]).reshape(1, 256).astype(np.int32)
        np.testing.assert_array_equal(cv2.cuda.calcHist(upload(src), upload(mask)).download(), ref_m)
        np.testing.assert_array_equal(cv2.cuda.equalizeHist(upload(src)).download(), cv2.equalizeHist(src))
    flat = np.full((4, 6), 77, np.uint8)                   # one value: every pixel keeps it
    np.testing.assert_array_equal(cv2.cuda.equalizeHist(upload(flat)).download(), cv2.equalizeHist(flat))


@pytest.mark.sim
def test_hist_sim(rng):
    src = rand_image(rng, 3, 5, 1, np.uint8)
    ref = cv2.calcHist([src], [0], None, [256], [0, 256]).reshape(1, 256).astype(np.int32)
    np.testing.assert_array_equal(cv2.cuda.calcHist(upload(src)).download(), ref)
    np.testing.assert_array_equal(cv2.cuda.equalizeHist(upload(src)).download(), cv2.equalizeHist(src))


def _hist_by_levels(src, levels):
    """Counts of levels[k] <= v < levels[k + 1] (cv::calcHist's non-uniform bins; its Python
    binding has no ``uniform`` argument)."""
    lv = levels.ravel().astype(np.float64)
    v = src.ravel().astype(np.float64)
    k = np.searchsorted(lv, v, side="right") - 1
    k = k[(k >= 0) & (v < lv[-1])]
    return np.bincount(k, minlength=len(lv) - 1).astype(np.int32).reshape(1, -1)


def _npp_even_levels(n, lower, upper):
    """NPP's nppiEvenLevelsHost_32s: integer levels lower + (upper - lower) * k / (n - 1)."""
    return np.array([lower + (upper - lower) * k // (n - 1) for k in range(n)], np.int32).reshape(1, -1)


@pytest.mark.parametrize("depth", [cv2.CV_8U, cv2.CV_16U, cv2.CV_16S])
def test_hist_even_and_range(rng, depth):
    src = rand_image(rng, 9, 14, 1, ALL[depth])
    lo, hi = (50, 200) if depth == cv2.CV_8U else (-1000, 30000)
    # 30 bins over [50, 200) are uniform: OpenCV CUDA's own test compares with cv::calcHist
    if depth == cv2.CV_8U:
        ref = cv2.calcHist([src], [0], None, [30], [lo, hi]).reshape(1, -1).astype(np.int32)
        np.testing.assert_array_equal(cv2.cuda.histEven(upload(src), 30, lo, hi).download(), ref)
    levels = _npp_even_levels(8, lo, hi)
    np.testing.assert_array_equal(cv2.cuda.evenLevels(8, lo, hi).download(), levels)
    ref = _hist_by_levels(src, levels)
    if depth != cv2.CV_8U:      # 8U histEven is OpenCV CUDA's own kernel: test_hist_even_8u_bins
        np.testing.assert_array_equal(cv2.cuda.histEven(upload(src), 7, lo, hi).download(), ref)
    np.testing.assert_array_equal(cv2.cuda.histRange(upload(src), upload(levels)).download(), ref)


def test_hist_range_float(rng):
    src = rand_image(rng, 7, 11, 1, np.float32)
    levels = np.array([[-0.5, 0.0, 0.25, 1.0, 1.9]], np.float32)
    ref = _hist_by_levels(src, levels)
    np.testing.assert_array_equal(cv2.cuda.histRange(upload(src), upload(levels)).download(), ref)


def test_integral_and_sqr_integral(rng):
    for h, w in SIZES:
        src = rand_image(rng, h, w, 1, np.uint8)
        s, sq = cv2.integral2(src, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
        got = cv2.cuda.integral(upload(src))
        assert got.type() == cv2.CV_32SC1 and got.size() == (w + 1, h + 1)
        np.testing.assert_array_equal(got.download(), s)
        np.testing.assert_array_equal(cv2.cuda.sqrIntegral(upload(src)).download(), sq)


@pytest.mark.sim
def test_integral_sim(rng):
    src = rand_image(rng, 3, 4, 1, np.uint8)
    np.testing.assert_array_equal(cv2.cuda.integral(upload(src)).download(), cv2.integral(src))


def test_rect_std_dev(rng):
    src = rand_image(rng, 12, 15, 1, np.uint8)
    s, sq = cv2.integral2(src, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
    rx, ry, rw, rh = 1, 2, 3, 4
    got = cv2.cuda.rectStdDev(upload(s), upload(sq), (rx, ry, rw, rh)).download()
    assert got.dtype == np.float32 and got.shape == s.shape
    for y in range(0, 13 - ry - rh):
        for x in range(0, 16 - rx - rw):
            win = src[y + ry:y + ry + rh, x + rx:x + rx + rw].astype(np.float64)
            assert abs(got[y, x] - win.std()) <= 1e-3, (y, x)


def test_stat_reads_pending_input_and_roi(rng):
    """A reduction of a pending result or a ROI view computes it first and reads the view."""
    src = rand_image(rng, 10, 12, 1, np.uint8)
    g = upload(src)
    roi = cv2.cuda_GpuMat(g, (2, 3, 7, 5))
    assert cv2.cuda.sum(roi) == cv2.sumElems(src[3:8, 2:9])
    pending = cv2.cuda.add(g, 7)
    assert cv2.cuda.minMaxLoc(pending) == cv2.minMaxLoc(cv2.add(src, 7))


def test_errors(rng):
    c3 = upload(rand_image(rng, 4, 5, 3, np.uint8))
    c1 = upload(rand_image(rng, 4, 5, 1, np.uint8))
    u16 = upload(rand_image(rng, 4, 5, 1, np.uint16))
    for call in (lambda: cv2.cuda.minMax(c3), lambda: cv2.cuda.minMaxLoc(c3), lambda: cv2.cuda.countNonZero(c3),
                 lambda: cv2.cuda.normalize(c3, 0, 1, cv2.NORM_MINMAX, -1)):
        with pytest.raises(cv2.error, match="channels"):
            call()
    with pytest.raises(cv2.error, match="norm type"):
        cv2.cuda.normalize(c1, 0, 1, 12345, -1)
    with pytest.raises(cv2.error, match="norm type"):
        cv2.cuda.norm(c1, cv2.NORM_HAMMING)
    with pytest.raises(cv2.error, match="depth"):
        cv2.cuda.meanStdDev(u16)
    with pytest.raises(cv2.error, match="mask"):
        cv2.cuda.sum(c1, u16)
    with pytest.raises(cv2.error, match="dim"):
        cv2.cuda.reduce(c1, 2, cv2.REDUCE_SUM)
    with pytest.raises(cv2.error, match="reduceOp"):
        cv2.cuda.reduce(c1, 0, 99)
    with pytest.raises(cv2.error, match="levels"):
        cv2.cuda.histRange(c1, upload(np.zeros((1, 4), np.float32)))
    with pytest.raises(cv2.error, match="depth"):
        cv2.cuda.calcHist(u16)
    with pytest.raises(cv2.error, match="empty"):
        cv2.cuda.sum(cv2.cuda_GpuMat())
    with pytest.raises(cv2.error, match="channels"):           # (OpenCV CUDA sums 1 to 4 channels)
        cv2.cuda.calcSum(upload(np.zeros((2, 3, 5), np.uint8)))
    with pytest.raises(cv2.error, match="sizes"):
        cv2.cuda.norm(c1, upload(np.zeros((3, 3), np.uint8)), cv2.NORM_L1)


def _hist_even_8u_reference(src, n, lower, upper):
    """OpenCV CUDA's histEven8u (hist.cu): each row's first ``cols`` bytes, ``lower <= v <=
    upper`` into (v - lower) // ceil((upper - lower) / n), a bin past the last dropped."""
    rows, cols = src.shape[:2]
    v = src.reshape(rows, -1)[:, :cols].ravel().astype(np.int64)
    v = v[(v >= lower) & (v <= upper)]
    k = (v - lower) // -(-(upper - lower) // n)
    return np.bincount(k[k < n], minlength=n).astype(np.int32).reshape(1, -1)


@pytest.mark.sim
@pytest.mark.parametrize("cn", [1, 3, 4])
def test_hist_even_8u_bins(rng, cn):
    """8U histEven of 1, 3 or 4 channels (OpenCV's test_cudaimgproc passes an 8UC3 image): whole
    bins of ceil((upper - lower) / histSize), the upper level counted, ROIs included."""
    src = rand_image(rng, 9, 13, cn, np.uint8)
    for n, lower, upper in [(20, 0, 255), (7, 50, 200), (5, 0, 100), (1, 3, 4)]:
        got = cv2.cuda.histEven(upload(src), n, lower, upper).download()
        np.testing.assert_array_equal(got, _hist_even_8u_reference(src, n, lower, upper))
        roi = cv2.cuda_GpuMat(upload(src), (2, 1, 7, 5))
        np.testing.assert_array_equal(cv2.cuda.histEven(roi, n, lower, upper).download(),
                                      _hist_even_8u_reference(src[1:6, 2:9], n, lower, upper))
    with pytest.raises(cv2.error, match="histEven"):
        cv2.cuda.histEven(upload(src), 4, 10, 10)
    with pytest.raises(cv2.error, match="histRange"):        # the binding's histRange is 1-channel
        cv2.cuda.histRange(upload(src), cv2.cuda.evenLevels(5, 0, 255)) if cn > 1 else \
            cv2.cuda.histRange(upload(src), upload(np.zeros((1, 1), np.int32)))
