"""Random cv2.cuda op chains (hypothesis): fused == eager, and both track CPU OpenCV.

A chain starts from a random image (1..24 x 1..24, 8U/16U/32F, 1/3/4 channels) and applies
1..6 ops drawn from: resize (NEAREST/LINEAR, dsize 1..20), cvtColor (a code valid for the
current channel count; only on 8U/16U/32F), GpuMat.convertTo (8U/16U/16S/32F with alpha/beta),
add/subtract/multiply with a scalar tuple, absdiff/min/max with a second uploaded image of the
same shape, a crop through ``cv2.cuda_GpuMat(m, rect)`` of the (lazy) result, and split
followed by merge (planes in a drawn order).

The same chain runs on the host with CPU cv2 (``lazycv.ops.convert.reference`` for
convertTo, numpy slicing for the crop), one op at a time.

Checks
------
1. fused == eager on this backend (SPEC §3: integers bit-exact, floats within 1e-6 relative).
2. fused vs the CPU chain within a bound ``e`` propagated op by op (``propagate`` below).
   ``e`` bounds |lazycv - CPU| after each op, in units of the current depth's values:

   * exact data movement (NEAREST resize, crop, channel reorders/alpha add/drop, split+merge)
     keeps ``e``;
   * an op that is L-Lipschitz in its input scales ``e`` by L (multiply by s: L = max|s|;
     convertTo: L = |alpha|; integer add/subtract/absdiff/min/max and the integer fixed-point
     gray conversion, whose weights sum to exactly 1: L = 1, no new error);
   * an op whose output is rounded to an integer depth turns an input difference d into at
     most floor(d) + 1 (0 when d == 0: both sides round the same value by the same rule), and
     adds its SPEC tolerance against CPU OpenCV (LINEAR resize: 1; convertTo and multiply: 0,
     lazycv follows OpenCV's rule exactly);
   * an op with a float output adds SPEC's float arithmetic tolerance, 1e-5 relative to the
     largest reference output magnitude (+1e-6 absolute); a float LINEAR resize adds SPEC's
     1e-2 on top of that.

   So a chain of exact ops on integers must match CPU OpenCV bit for bit, the first op of any
   chain is held to its own SPEC tolerance, and the allowance grows with each lossy op (and is
   amplified only by ops that really amplify differences).

Speed: every distinct chain structure compiles one fused kernel (dsize, scalars, alpha/beta
and ROI offsets are kernel arguments, so they never recompile). Examples are derandomized so
the same structures recur from run to run and Numba's on-disk cache serves them.
"""
import math

import cv2
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lazycv
from lazycv.ops import convert as convert_ops

from .conftest import BACKEND, DEPTHS, SIM, assert_fused_equals_eager, rand_image, run_both

IN_DEPTHS = [cv2.CV_8U, cv2.CV_16U, cv2.CV_32F]
CONVERT_DEPTHS = [cv2.CV_8U, cv2.CV_16U, cv2.CV_16S, cv2.CV_32F]
COLOR_DEPTHS = (cv2.CV_8U, cv2.CV_16U, cv2.CV_32F)
# code -> output channels, by input channel count
CVT_CODES = {
    1: [(cv2.COLOR_GRAY2BGR, 3), (cv2.COLOR_GRAY2BGRA, 4)],
    3: [(cv2.COLOR_BGR2RGB, 3), (cv2.COLOR_BGR2GRAY, 1), (cv2.COLOR_BGR2BGRA, 4), (cv2.COLOR_RGB2GRAY, 1)],
    4: [(cv2.COLOR_BGRA2BGR, 3), (cv2.COLOR_BGRA2GRAY, 1), (cv2.COLOR_BGRA2RGBA, 4)],
}
GRAY_CODES = {cv2.COLOR_BGR2GRAY, cv2.COLOR_RGB2GRAY, cv2.COLOR_BGRA2GRAY}
FLOAT_REL = 1e-5           # SPEC §3: arithmetic on floats, 1e-5 relative (also ->GRAY)
FLOAT_ABS = 1e-6
LINEAR_F32 = 1e-2          # SPEC §3: resize LINEAR 32F
LINEAR_INT = 1             # SPEC §3: resize LINEAR integers

finite = dict(allow_nan=False, allow_infinity=False)


@st.composite
def chains(draw):
    rows, cols = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    depth = draw(st.sampled_from(IN_DEPTHS))
    cn = draw(st.sampled_from([1, 3, 4]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    ops = []
    h, w, d, c = rows, cols, depth, cn
    for _ in range(draw(st.integers(1, 6))):
        kinds = ["resize", "convert", "scalar", "binary", "crop", "splitmerge"]
        if d in COLOR_DEPTHS:
            kinds.append("cvt")
        kind = draw(st.sampled_from(kinds))
        if kind == "resize":
            interp = draw(st.sampled_from([cv2.INTER_NEAREST, cv2.INTER_LINEAR]))
            dw, dh = draw(st.integers(1, 20)), draw(st.integers(1, 20))
            ops.append(("resize", interp, dw, dh))
            h, w = dh, dw
        elif kind == "cvt":
            code, dcn = draw(st.sampled_from(CVT_CODES[c]))
            ops.append(("cvt", code))
            c = dcn
        elif kind == "convert":
            nd = draw(st.sampled_from(CONVERT_DEPTHS))
            alpha, beta = draw(st.one_of(
                st.just((1.0, 0.0)),
                st.tuples(st.sampled_from([0.5, 2.0, -1.0, 1 / 255, 255.0]), st.just(0.0)),
                st.tuples(st.floats(-4, 4, **finite), st.floats(-300, 300, **finite))))
            ops.append(("convert", nd, alpha, beta))
            d = nd
        elif kind == "scalar":
            name = draw(st.sampled_from(["add", "subtract", "multiply"]))
            lim = 3 if name == "multiply" else 300
            s = tuple(draw(st.lists(st.floats(-lim, lim, **finite), min_size=4, max_size=4)))
            ops.append(("scalar", name, s))
        elif kind == "binary":
            name = draw(st.sampled_from(["absdiff", "min", "max"]))
            ops.append(("binary", name, draw(st.integers(0, 2 ** 32 - 1))))
        elif kind == "crop":
            x, y = draw(st.integers(0, w - 1)), draw(st.integers(0, h - 1))
            cw, ch = draw(st.integers(1, w - x)), draw(st.integers(1, h - y))
            ops.append(("crop", x, y, cw, ch))
            h, w = ch, cw
        else:
            ops.append(("splitmerge", tuple(draw(st.permutations(range(c))))))
    return rows, cols, depth, cn, seed, ops


def _shape(a):
    return a.shape[0], a.shape[1], (1 if a.ndim == 2 else a.shape[2])


def _second(a, seed):
    h, w, c = _shape(a)
    return rand_image(np.random.default_rng(seed), h, w, c, a.dtype)


def cpu_op(op, a):
    kind = op[0]
    if kind == "resize":
        _, interp, dw, dh = op
        return cv2.resize(a, (dw, dh), interpolation=interp)
    if kind == "cvt":
        return cv2.cvtColor(a, op[1])
    if kind == "convert":
        _, nd, alpha, beta = op
        return convert_ops.reference(a, nd, alpha, beta)
    if kind == "scalar":
        return getattr(cv2, op[1])(a, op[2])
    if kind == "binary":
        return getattr(cv2, op[1])(a, _second(a, op[2]))
    if kind == "crop":
        _, x, y, cw, ch = op
        return np.ascontiguousarray(a[y:y + ch, x:x + cw])
    planes = cv2.split(a)
    return cv2.merge([planes[i] for i in op[1]])


def gpu_op(op, m, a_ref_shape_dtype, made):
    """``a_ref_shape_dtype``: (shape, dtype) of the current image, for the second operand;
    every GpuMat the op creates is appended to ``made``."""
    kind = op[0]
    if kind == "resize":
        _, interp, dw, dh = op
        return cv2.cuda.resize(m, (dw, dh), interpolation=interp)
    if kind == "cvt":
        return cv2.cuda.cvtColor(m, op[1])
    if kind == "convert":
        _, nd, alpha, beta = op
        return m.convertTo(nd, alpha=alpha, beta=beta)
    if kind == "scalar":
        return getattr(cv2.cuda, op[1])(m, op[2])
    if kind == "binary":
        shape, dtype = a_ref_shape_dtype
        h, w = shape[0], shape[1]
        c = 1 if len(shape) == 2 else shape[2]
        other = cv2.cuda_GpuMat()
        other.upload(rand_image(np.random.default_rng(op[2]), h, w, c, dtype))
        return getattr(cv2.cuda, op[1])(m, other)
    if kind == "crop":
        _, x, y, cw, ch = op
        return cv2.cuda_GpuMat(m, (x, y, cw, ch))
    planes = cv2.cuda.split(m)
    made.extend(planes)
    return cv2.cuda.merge([planes[i] for i in op[1]], cv2.cuda_GpuMat())   # dst: stays on the device


def _mag(a):
    a = np.abs(np.asarray(a, np.float64))
    return float(a.max(initial=0.0))


def propagate(op, e, a_in, a_out):
    """The bound on |lazycv - CPU| after ``op``, given ``e`` before it (see the module doc)."""
    kind = op[0]
    out_float = a_out.dtype.kind == "f"
    fterm = FLOAT_REL * _mag(a_out) + FLOAT_ABS if out_float else 0.0
    if kind in ("crop", "splitmerge") or (kind == "resize" and op[1] == cv2.INTER_NEAREST):
        return e
    if kind == "cvt":
        if op[1] in GRAY_CODES and out_float:
            return e + fterm
        return e                                 # reorders, alpha, integer fixed-point gray
    if kind == "resize":                         # LINEAR: convex weights, rounded
        if out_float:
            return e + LINEAR_F32 + fterm
        return e + LINEAR_INT + (1 if e > 0 else 0)     # OpenCV's fixed point: |F(a)-F(b)| <= e+1
    if kind == "binary":
        return e + fterm                         # 1-Lipschitz; exact on integers
    if kind == "scalar":
        name, s = op[1], op[2]
        if name in ("add", "subtract"):
            return e + fterm                     # exact on integers (scalar rounded first)
        gain = max(abs(v) for v in s[:_shape(a_in)[2]])
        if out_float:
            return gain * e + fterm
        return _rounded(gain * e)
    # convert
    _, nd, alpha, beta = op
    if out_float:
        return abs(alpha) * e + fterm
    if a_in.dtype.kind == "f" or (alpha, beta) != (1.0, 0.0):
        return _rounded(abs(alpha) * e)
    return e                                     # integer -> integer: saturation only


def _rounded(d):
    """|round(u) - round(v)| <= floor(|u - v|) + 1 (round(x) is within 0.5 of x), and 0 when
    u == v: both sides round the same value with the same rule."""
    return math.floor(d + 1e-12) + 1 if d > 0 else 0


def _tol_check(got, ref, e, ops):
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    err = np.abs(g64 - r64)
    bound = math.floor(e + 1e-9) if ref.dtype.kind != "f" else e
    worst = float(err.max(initial=0))
    assert worst <= bound, f"max |fused - CPU| = {worst} > allowed {bound} for chain {ops}"


@settings(max_examples=40 if not SIM else 5, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(chains())
# found by this test: three saturating scalar ops, then a second image in the same fused kernel
@example((2, 3, cv2.CV_8U, 1, 5, [("scalar", "multiply", (1.5, 1.5, 1.5, 1.5))] * 3 + [("binary", "min", 7)]))
def test_random_chain(case):
    rows, cols, depth, cn, seed, ops = case
    src = rand_image(np.random.default_rng(seed), rows, cols, cn, DEPTHS[depth])

    # CPU reference, one op at a time, with the propagated bound
    steps, e = [src], 0.0
    for op in ops:
        b = cpu_op(op, steps[-1])
        e = propagate(op, e, steps[-1], b)
        steps.append(b)
    ref = steps[-1]
    depth_of = {np.dtype(v): k for k, v in DEPTHS.items()}

    def run(image=src):
        made = [cv2.cuda_GpuMat()]
        made[0].upload(image)
        try:
            m = made[0]
            for op, cur, nxt in zip(ops, steps, steps[1:]):
                m = gpu_op(op, m, (cur.shape, cur.dtype), made)
                made.append(m)
                # size/type are known without computing anything, and must be OpenCV's
                assert m.size() == (nxt.shape[1], nxt.shape[0]), (op, m.size(), nxt.shape)
                assert (m.depth(), m.channels()) == (depth_of[nxt.dtype], _shape(nxt)[2]), (op, m.type())
            return m.download()
        finally:
            # A failing example must not leave pending work behind (the traceback keeps these
            # mats alive, and a later flush would run it again): every example stands alone.
            for g in made:
                g.release()

    fused, eager = run_both(run)
    assert_fused_equals_eager(fused, eager)
    _tol_check(fused, ref, e, ops)
    # the same calls on new data: replays of the first flush, then launches straight from the
    # recording (flush programs) — each equal to eager on that data
    src2 = rand_image(np.random.default_rng(seed + 1), rows, cols, cn, DEPTHS[depth])
    with lazycv.enabled(backend=BACKEND, fuse=False):
        eager2 = run(src2)
    with lazycv.enabled(backend=BACKEND, fuse=True):
        for _ in range(2):
            assert_fused_equals_eager(run(src2), eager2)


# ---------------------------------------------------------------- random graphs over the whole surface
#
# Several chains recorded before one flush, each from its own image of any of the seven depths,
# through every op family (arithmetic with scalars, images and masks; threshold, compare,
# inRange, bitwise; math; colour spaces; box and Gaussian filters; resize, flip, warpAffine;
# convertTo; normalize; crops; split/merge), writing through dst=, in place and into an ROI of a
# larger GpuMat, a second operand sometimes an earlier mat of the chain (a DAG). The property:
# the fused run equals the eager run (fuse=False, one kernel per op). Ops are drawn blind to
# the current type and adapted to it where a choice exists (a colour code for the channel
# count); a call the current type does not support raises cv2.error at the call and is skipped
# — identically in both runs. CI runs FUZZ_EXAMPLES derandomized graphs; LAZYCV_FUZZ_LONG=N
# runs N random ones (docs/reliability.md records a long run).

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from lazycv.ops.common import API  # noqa: E402

ALL_DEPTHS = {cv2.CV_8U: np.uint8, cv2.CV_8S: np.int8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16,
              cv2.CV_32S: np.int32, cv2.CV_32F: np.float32, cv2.CV_64F: np.float64}
LONG = int(os.environ.get("LAZYCV_FUZZ_LONG", "0") or 0)
FUZZ_EXAMPLES = LONG or (12 if not SIM else 3)
FUZZ_STATS = {"graphs": 0, "ops": 0, "skipped": 0, "by_op": {}, "skipped_by_op": {}, "seconds": 0.0}
GRAPH_CODES = {
    1: [cv2.COLOR_GRAY2BGR, cv2.COLOR_GRAY2BGRA],
    3: [cv2.COLOR_BGR2HSV, cv2.COLOR_BGR2HLS, cv2.COLOR_BGR2Lab, cv2.COLOR_BGR2Luv, cv2.COLOR_BGR2YCrCb,
        cv2.COLOR_BGR2XYZ, cv2.COLOR_BGR2YUV, cv2.COLOR_BGR2GRAY, cv2.COLOR_BGR2RGB, cv2.COLOR_BGR2BGRA,
        cv2.COLOR_HSV2BGR, cv2.COLOR_Lab2BGR],
    4: [cv2.COLOR_BGRA2BGR, cv2.COLOR_BGRA2GRAY, cv2.COLOR_RGBA2BGR, cv2.COLOR_BGRA2RGBA],
}
SCALAR_FNS = ["add", "subtract", "multiply", "divide", "absdiff", "min", "max"]
BINARY_FNS = ["add", "subtract", "multiply", "divide", "absdiff", "min", "max", "bitwise_and", "bitwise_or",
              "bitwise_xor", "addWeighted", "compare"]
WRITE_FNS = ["add", "subtract", "multiply", "absdiff"]
small = st.floats(-300, 300, **finite)
frac = st.floats(0, 1, **finite)

graph_ops = st.one_of(
    st.tuples(st.just("scalar"), st.sampled_from(SCALAR_FNS), st.tuples(small, small, small, small)),
    st.tuples(st.just("binary"), st.sampled_from(BINARY_FNS), st.integers(0, 2 ** 32 - 1), st.booleans()),
    st.tuples(st.just("masked"), st.sampled_from(["add", "subtract"]), small, st.integers(0, 2 ** 32 - 1)),
    st.tuples(st.just("threshold"), small, small, st.integers(0, 4)),
    st.tuples(st.just("compare"), st.integers(0, 5), small),
    st.tuples(st.just("inrange"), small, small),
    st.tuples(st.just("not"),),
    st.tuples(st.just("math"), st.sampled_from(["sqrt", "exp", "log", "abs", "sqr"])),
    st.tuples(st.just("pow"), st.sampled_from([0.5, 2.0, 3.0, -1.0])),
    st.tuples(st.just("cvt"), st.integers(0, 11)),
    st.tuples(st.just("filter"), st.sampled_from(["box", "gaussian"]), st.sampled_from([3, 5])),
    st.tuples(st.just("resize"), st.sampled_from([cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_AREA]),
              st.integers(1, 16), st.integers(1, 16)),
    st.tuples(st.just("flip"), st.sampled_from([-1, 0, 1])),
    st.tuples(st.just("warp"), st.floats(-180, 180, **finite), st.sampled_from([cv2.INTER_NEAREST, cv2.INTER_LINEAR])),
    st.tuples(st.just("convert"), st.sampled_from(list(ALL_DEPTHS)), st.floats(-4, 4, **finite), small),
    st.tuples(st.just("normalize"), st.sampled_from([cv2.NORM_MINMAX, cv2.NORM_L1, cv2.NORM_L2, cv2.NORM_INF]),
              st.sampled_from([cv2.CV_8U, cv2.CV_32F, -1])),
    st.tuples(st.just("crop"), frac, frac, frac, frac),
    st.tuples(st.just("splitmerge"), st.permutations(range(4))),
    st.tuples(st.just("dst"), st.sampled_from(WRITE_FNS), small),
    st.tuples(st.just("inplace"), st.sampled_from(WRITE_FNS), small),
    st.tuples(st.just("roi"), st.sampled_from(WRITE_FNS), small, small),
)


@st.composite
def graphs(draw):
    chains = []
    for _ in range(draw(st.integers(1, 3))):
        side = 12 if not SIM else 5             # (the simulator runs ~0.3 ms a pixel)
        chains.append((draw(st.integers(1, side)), draw(st.integers(1, side)), draw(st.sampled_from(list(ALL_DEPTHS))),
                       draw(st.sampled_from([1, 3, 4])), draw(st.integers(0, 2 ** 32 - 1)),
                       draw(st.lists(graph_ops, min_size=1, max_size=5))))
    return chains


def _like(m, seed):
    """A random GpuMat of ``m``'s size and type."""
    w, h = m.size()
    return _upload(rand_image(np.random.default_rng(seed), h, w, m.channels(), ALL_DEPTHS[m.depth()]))


def _upload(a):
    g = cv2.cuda_GpuMat()
    g.upload(np.ascontiguousarray(a))
    return g


def _apply(op, m, earlier):
    """``op`` on GpuMat ``m``: the resulting GpuMat (raises cv2.error where m's type does not
    fit the op)."""
    kind, cuda = op[0], cv2.cuda
    w, h = m.size()
    cn = m.channels()
    if kind == "scalar":
        s = op[2] if op[1] != "multiply" else tuple(v / 100 for v in op[2])
        return getattr(cuda, op[1])(m, s[:cn] if cn < 4 else s)
    if kind == "binary":
        other = next((e for e in reversed(earlier) if op[3] and e is not m and e.size() == m.size()
                      and e.type() == m.type()), None) or _like(m, op[2])
        if op[1] == "addWeighted":
            return cuda.addWeighted(m, 0.5, other, -1.25, 3.0)
        if op[1] == "compare":
            return cuda.compare(m, other, op[2] % 6)
        return getattr(cuda, op[1])(m, other)
    if kind == "masked":
        mask = _upload((np.random.default_rng(op[3]).random((h, w)) < 0.5).astype(np.uint8))
        return getattr(cuda, op[1])(m, (op[2],) * 4, mask=mask)
    if kind == "threshold":
        return cuda.threshold(m, op[1], op[2], op[3])[1]
    if kind == "compare":
        return cuda.compare(m, (op[2],) * 4, op[1])
    if kind == "inrange":
        return cuda.inRange(m, (min(op[1], op[2]),) * cn, (max(op[1], op[2]),) * cn)
    if kind == "not":
        return cuda.bitwise_not(m)
    if kind == "math":
        return getattr(cuda, op[1])(m)
    if kind == "pow":
        return cuda.pow(m, op[1])
    if kind == "cvt":
        codes = GRAPH_CODES[cn] if cn in GRAPH_CODES else None
        if not codes:
            raise cv2.error("no colour code for this channel count")
        return cuda.cvtColor(m, codes[op[1] % len(codes)])
    if kind == "filter":
        t = m.type()
        f = cuda.createBoxFilter(t, t, (op[2], op[2])) if op[1] == "box" else \
            cuda.createGaussianFilter(t, t, (op[2], op[2]), 1.2)
        return f.apply(m)
    if kind == "resize":
        return cuda.resize(m, (op[2], op[3]), interpolation=op[1])
    if kind == "flip":
        return cuda.flip(m, op[1])
    if kind == "warp":
        M = cv2.getRotationMatrix2D((w / 2, h / 2), op[1], 1.1)
        return cuda.warpAffine(m, M, (w, h), flags=op[2])
    if kind == "convert":
        return m.convertTo(op[1], alpha=op[2], beta=op[3])
    if kind == "normalize":
        return cuda.normalize(m, 1.0 if op[1] != cv2.NORM_MINMAX else 0.0, 200.0, op[1], op[2])
    if kind == "crop":
        x, y = int(op[1] * (w - 1)), int(op[2] * (h - 1))
        return cv2.cuda_GpuMat(m, (x, y, max(1, int(op[3] * (w - x))), max(1, int(op[4] * (h - y)))))
    if kind == "splitmerge":
        planes = cuda.split(m)
        order = [i for i in op[1] if i < cn]
        return cuda.merge([planes[i] for i in order], cv2.cuda_GpuMat())
    if kind == "dst":
        out = cv2.cuda_GpuMat(h, w, m.type())
        getattr(cuda, op[1])(m, (op[2],) * 4, dst=out)
        return out
    if kind == "inplace":
        getattr(cuda, op[1])(m, (op[2],) * 4, dst=m)
        return m
    # roi: the result written into the middle of a larger GpuMat, which goes on
    big = cv2.cuda_GpuMat(h + 2, w + 3, m.type())
    big.setTo((op[3],) * 4)
    roi = cv2.cuda_GpuMat(big, (1, 1, w, h))
    getattr(cuda, op[1])(m, (op[2],) * 4, dst=roi)
    return big


def run_graph(chains, stats=None):
    """Record every chain, then download every result (the first download flushes them all)."""
    made, ends = [], []
    try:
        for rows, cols, depth, cn, seed, ops in chains:
            m = _upload(rand_image(np.random.default_rng(seed), rows, cols, cn, ALL_DEPTHS[depth]))
            earlier = [m]
            for op in ops:
                try:
                    m = _apply(op, m, earlier)
                except cv2.error:
                    if stats is not None:
                        stats["skipped"] += 1
                        stats["skipped_by_op"][op[0]] = stats["skipped_by_op"].get(op[0], 0) + 1
                    continue
                if stats is not None:
                    stats["ops"] += 1
                    stats["by_op"][op[0]] = stats["by_op"].get(op[0], 0) + 1
                earlier.append(m)
            made += earlier
            ends.append(m)
        return [e.download() for e in ends]
    finally:
        for g in made:
            g.release()


@pytest.fixture(scope="module", autouse=True)
def fuzz_report():
    """LAZYCV_FUZZ_REPORT=path: what the random graphs exercised, as JSON, after the module."""
    yield
    path = os.environ.get("LAZYCV_FUZZ_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(FUZZ_STATS, f, indent=1, sort_keys=True)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(graphs())
@pytest.mark.sim
def test_random_graph_fused_equals_eager(chains):
    t0 = time.perf_counter()
    with lazycv.enabled(backend=BACKEND, fuse=False):
        eager = run_graph(chains)
    with lazycv.enabled(backend=BACKEND, fuse=True):
        fused = run_graph(chains, FUZZ_STATS)
    assert_fused_equals_eager(fused, eager)
    FUZZ_STATS["graphs"] += 1
    FUZZ_STATS["seconds"] += time.perf_counter() - t0
    if LONG and FUZZ_STATS["graphs"] % 100 == 0:
        print(f"fuzz: {FUZZ_STATS}", flush=True)
