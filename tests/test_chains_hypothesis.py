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
import contextlib
import math

import cv2
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lazycv
from lazycv import recipes
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
# convertTo; normalize; crops; split/merge; user ops written with lazycv.op / lazycv.gather_op),
# writing through dst=, in place and into an ROI of a larger GpuMat, a second operand sometimes
# an earlier mat of the chain (a DAG). The property: the fused run equals the eager run
# (fuse=False, one kernel per op). Ops are drawn blind to the current type and adapted to it
# where a choice exists (a colour code for the channel count); a call the current type does not
# support raises cv2.error at the call and is skipped — identically in both runs.
#
# Then the same families through layer 2 (random lazycv.compose pipelines over random lists of
# images: templates, batch programs, every output form) and layer 3 (random per-pixel
# expressions and gathers, compiled by lazycv.op / lazycv.gather_op, inside chains).
#
# Profiles: CI runs a few derandomized examples of each (fewer under the simulator).
# LAZYCV_FUZZ_LONG=N runs N random graphs, N/4 pipelines and N/10 user-op chains, split into
# shards with seeds of their own (LAZYCV_FUZZ_SEED, default 20) so pytest-xdist spreads them
# (``-n 16``: 4 shards a worker, or LAZYCV_FUZZ_SHARDS); a failing example is recorded and the
# shard goes on (its test fails at the end, listing them). LAZYCV_FUZZ_REPORT=path writes what
# each process ran as JSON (under xdist one file a worker: path.gw0, path.gw1, ...; merge them
# with ``python -m tests.test_chains_hypothesis path.gw*``).

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import zlib  # noqa: E402

import pytest  # noqa: E402
from hypothesis import Phase, seed  # noqa: E402

from lazycv.compose import Step  # noqa: E402

ALL_DEPTHS = {cv2.CV_8U: np.uint8, cv2.CV_8S: np.int8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16,
              cv2.CV_32S: np.int32, cv2.CV_32F: np.float32, cv2.CV_64F: np.float64}
LONG = int(os.environ.get("LAZYCV_FUZZ_LONG", "0") or 0)
SEED = int(os.environ.get("LAZYCV_FUZZ_SEED", "20") or 20)
SHARDS = max(1, int(os.environ.get("LAZYCV_FUZZ_SHARDS") or
                    4 * int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))) if LONG else 1
# (CI examples, simulator examples, share of LAZYCV_FUZZ_LONG) of each fuzzer
PROFILES = {"graphs": (12, 3, 1.0), "pipelines": (8, 2, 0.25), "user_ops": (5, 2, 0.1)}
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


# ---------------------------------------------------------------- user ops (layer 3), generated
#
# A random per-pixel expression over the op's inputs and two parameters (p0 a float, p1 an int:
# kernel arguments), of +, -, *, min, max, abs, negation and a comparison's choice, becomes the
# source of a function compiled by lazycv.op: per channel (one or two image inputs) or over all
# channels of the image (any output count). Gathers come from templates with drawn parameters
# (a mirror, a shift with a replicated or constant border, a 2x2 mean, a half-size sampling).
# One op object per source text, shared by the eager and fused runs (they compile it once).

_USER_OPS = {}


@st.composite
def expressions(draw, leaves, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    kind = draw(st.sampled_from(["+", "-", "*", "min", "max", "abs", "neg", "pick"]))
    a = draw(expressions(leaves, depth - 1))
    if kind == "abs":
        return f"abs({a})"
    if kind == "neg":
        return f"(-{a})"
    b = draw(expressions(leaves, depth - 1))
    if kind in ("min", "max"):
        return f"{kind}({a}, {b})"
    if kind == "pick":
        return f"({a} if {a} > {b} else {b} - {a})"
    return f"({a} {kind} {b})"


OUT_DEPTHS = [None, cv2.CV_8U, cv2.CV_16S, cv2.CV_32S, cv2.CV_32F, cv2.CV_64F]
user_ops = st.one_of(
    st.tuples(st.just("per_channel"), expressions(["a", "p0", "p1", "2"]), st.sampled_from(OUT_DEPTHS),
              st.floats(-3, 3, **finite), st.integers(-5, 5)),
    st.tuples(st.just("two_inputs"), expressions(["a", "b", "p0", "p1"]), st.sampled_from(OUT_DEPTHS),
              st.floats(-3, 3, **finite), st.integers(-5, 5), st.integers(0, 2 ** 32 - 1)),
    st.tuples(st.just("channels"), st.lists(expressions(["{c0}", "{c1}", "{c2}", "{c3}", "p0", "p1"]),
                                            min_size=1, max_size=4),
              st.sampled_from(OUT_DEPTHS), st.floats(-3, 3, **finite), st.integers(-5, 5)),
    st.tuples(st.just("gather"), st.sampled_from(["mirror", "shift", "mean2x2", "half"]),
              st.sampled_from(["replicate", "constant"]), st.integers(-3, 3), st.integers(-3, 3), small),
)


def _compiled(src, name):
    """The function ``name`` that ``src`` defines (a module of its own: numba reads its globals)."""
    scope = {"math": math, "np": np, "__name__": f"lazycv_fuzz_{name}"}
    exec(compile(src, f"<lazycv-fuzz {name}>", "exec"), scope)
    return scope[name]


def _user_op(spec, cn):
    """(the op object, its parameters) for ``spec`` on an image of ``cn`` channels."""
    kind = spec[0]
    if kind == "gather":
        _, which, border, dy, dx, value = spec
        key = (kind, which, border, value if border == "constant" else 0, cn if which == "mean2x2" else 0)
    elif kind == "channels":
        exprs = [e.format(**{f"c{i}": f"c{i % cn}" for i in range(4)}) for e in spec[1]]
        key = (kind, tuple(exprs), spec[2], cn)
    else:
        key = (kind, spec[1], spec[2])
    got = _USER_OPS.get(key)
    if got is None:
        name = f"fz_{zlib.crc32(repr(key).encode()):08x}"
        if kind == "gather":
            got = _gather_op(name, key)
        else:
            if kind == "channels":
                args = [f"c{i}" for i in range(cn)]
                body = "(" + ", ".join(exprs) + ",)" if len(exprs) > 1 else exprs[0]
            else:
                args, body = (["a", "b"] if kind == "two_inputs" else ["a"]), spec[1]
            src = f"def {name}({', '.join(args)}, p0, p1):\n    return {body}\n"
            got = lazycv.op(_compiled(src, name), name=name, out_depth=spec[2], per_channel=kind != "channels",
                            inputs=2 if kind == "two_inputs" else 1, param_types=(float, int))
        _USER_OPS[key] = got
    if kind == "gather":
        return got, ((spec[3], spec[4]) if spec[1] == "shift" else ())
    return got, (spec[3], spec[4])


def _gather_op(name, key):
    _, which, border, value, cn = key
    if which == "mirror":
        coords = _compiled(f"def {name}(y, x, h, w):\n    return y, w - 1 - x\n", name)
        return lazycv.gather_op(coords, name=name)
    if which == "shift":
        coords = _compiled(f"def {name}(y, x, h, w, dy, dx):\n    return y + dy, x + dx\n", name)
        return lazycv.gather_op(coords, name=name, border=border, border_value=value, param_types=(int, int))
    if which == "half":
        coords = _compiled(f"def {name}(y, x, h, w):\n    return 2 * y, 2 * x\n", name)
        return lazycv.gather_op(coords, name=name, out_size=lambda h, w: ((w + 1) // 2, (h + 1) // 2))
    taps = [[f"t{t}c{c}" for c in range(cn)] for t in range(4)]
    means = [f"({' + '.join(t[c] for t in taps)}) / 4" for c in range(cn)]
    pixel = _compiled(f"def {name}_px({', '.join(v for t in taps for v in t)}):\n"
                      f"    return {'(' + ', '.join(means) + ',)' if cn > 1 else means[0]}\n", f"{name}_px")
    coords = _compiled(f"def {name}(y, x, h, w):\n    return y, x\n", name)
    return lazycv.gather_op(coords, name=name, pixel=pixel, footprint=((0, 0), (0, 1), (1, 0), (1, 1)),
                            border=border, border_value=value)


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
    st.tuples(st.just("userop"), user_ops),
)


def _chain(ops):
    side = 12 if not SIM else 5                 # (the simulator runs ~0.3 ms a pixel)
    return st.tuples(st.integers(1, side), st.integers(1, side), st.sampled_from(list(ALL_DEPTHS)),
                     st.sampled_from([1, 3, 4]), st.integers(0, 2 ** 32 - 1), ops)


graphs = st.lists(_chain(st.lists(graph_ops, min_size=1, max_size=5)), min_size=1, max_size=3)
# chains that hold at least one user op (layer 3 among the built-in ops)
user_op_graphs = st.lists(_chain(st.tuples(st.lists(graph_ops, max_size=2), st.tuples(st.just("userop"), user_ops),
                                           st.lists(graph_ops, max_size=2)).map(lambda t: t[0] + [t[1]] + t[2])),
                          min_size=1, max_size=2)


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
    if kind == "userop":
        spec = op[1]
        fn, params = _user_op(spec, cn)
        if spec[0] == "two_inputs":
            return fn(m, _like(m, spec[5]), *params)
        return fn(m, *params)
    # roi: the result written into the middle of a larger GpuMat, which goes on
    big = cv2.cuda_GpuMat(h + 2, w + 3, m.type())
    big.setTo((op[3],) * 4)
    roi = cv2.cuda_GpuMat(big, (1, 1, w, h))
    getattr(cuda, op[1])(m, (op[2],) * 4, dst=roi)
    return big


def _family(op):
    return f"userop:{op[1][0]}" if op[0] == "userop" else op[0]


def run_graph(chains, stats=None):
    """Record every chain, then download every result (the first download flushes them all)."""
    made, ends = [], []
    try:
        for rows, cols, depth, cn, seed_, ops in chains:
            m = _upload(rand_image(np.random.default_rng(seed_), rows, cols, cn, ALL_DEPTHS[depth]))
            earlier = [m]
            for op in ops:
                try:
                    m = _apply(op, m, earlier)
                except cv2.error:
                    if stats is not None:
                        _count(stats, "skipped", _family(op))
                    continue
                if stats is not None:
                    _count(stats, "ops", _family(op))
                earlier.append(m)
            made += earlier
            ends.append(m)
        return [e.download() for e in ends]
    finally:
        for g in made:
            g.release()


def check_graph(chains, stats):
    """The fused flush of ``chains`` equals the eager one; so do the same calls on other
    source images (where each call's recipe is captured: lazycv/recipes.py) and the first
    images once more (each call replayed from its recipe, over data other than the captured
    call's) — the eager calls run through their op functions (recipes off)."""
    again = [(rows, cols, depth, cn, seed_ + 7919, ops) for rows, cols, depth, cn, seed_, ops in chains]
    with lazycv.enabled(backend=BACKEND, fuse=False):
        with recipes_off():
            eager = run_graph(chains)
            eager_again = run_graph(again)
    with lazycv.enabled(backend=BACKEND, fuse=True):
        fused = run_graph(chains, stats)
        fused_again = run_graph(again)
        fused_replayed = run_graph(chains)
    assert_fused_equals_eager(fused, eager)
    assert_fused_equals_eager(fused_again, eager_again)
    assert_fused_equals_eager(fused_replayed, eager)


@contextlib.contextmanager
def recipes_off():
    """Every call through its op's function (the full path)."""
    was, recipes.ENABLED = recipes.ENABLED, False
    try:
        yield
    finally:
        recipes.ENABLED = was


# ---------------------------------------------------------------- random pipelines (layer 2)
#
# A batch of 1-4 random images (one size, or each its own), given as a list of numpy images, a
# (B, H, W, C) array, a list of GpuMats or one image, through random steps: crop (a rect, or a
# function of the size), resize, cvt_color, convert, normalize, a callable step making a
# size-keeping graph op or a user op (op.step), then to_planar or not, and an output: numpy
# (stacked or a list), GpuMats, one tensor, or the lazy results. Steps are built against the
# type the batch has there (a colour code for its channels; a step the type does not support
# is left out), so every pipeline runs. Fused: called twice on new images of the same shapes
# (the second call is served by the template and, when the batch is one launch, the batch
# program). Reference: the same steps called frame by frame eagerly (the cv2.cuda chain), which
# the eager pipeline must equal too.

SIZE_KEEPING = ("scalar", "binary", "masked", "threshold", "compare", "inrange", "not", "math", "pow",
                "filter", "flip", "warp", "convert", "normalize", "splitmerge", "dst")
COMPOSE_DTYPES = ["uint8", "uint16", "int16", "float32"]     # (names: a failing case is a literal)
pipeline_steps = st.one_of(
    st.tuples(st.just("crop"), frac, frac, frac, frac, st.booleans()),
    st.tuples(st.just("resize"), st.integers(1, 12), st.integers(1, 12),
              st.sampled_from([cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_AREA, cv2.INTER_CUBIC])),
    st.tuples(st.just("cvt_color"), st.integers(0, 11)),
    st.tuples(st.just("convert"), st.sampled_from(COMPOSE_DTYPES), st.sampled_from([1.0, 0.5, 1 / 255, -2.0]),
              st.sampled_from([0.0, 10.0, -3.5])),
    st.tuples(st.just("normalize"), st.tuples(small, small, small, small), st.floats(0.25, 60, **finite),
              st.booleans()),
    st.tuples(st.just("call"), graph_ops.filter(lambda op: op[0] in SIZE_KEEPING)),
    st.tuples(st.just("call"), st.tuples(st.just("userop"), user_ops.filter(lambda u: u[0] != "gather"))),
)


@st.composite
def pipelines(draw):
    side = 10 if not SIM else 4
    n = draw(st.integers(1, 4))
    one_size = draw(st.booleans())
    sizes = [(draw(st.integers(1, side)), draw(st.integers(1, side)))] * n if one_size else \
        [(draw(st.integers(1, side)), draw(st.integers(1, side))) for _ in range(n)]
    depth = draw(st.sampled_from([cv2.CV_8U, cv2.CV_16U, cv2.CV_32F]))
    cn = draw(st.sampled_from([1, 3, 4]))
    form = draw(st.sampled_from(["list", "gpumats"] + (["array"] if one_size else []) + (["one"] if n == 1 else [])))
    steps = draw(st.lists(pipeline_steps, min_size=1, max_size=5))
    planar = draw(st.booleans())
    out = draw(st.sampled_from(["numpy", "list", "device", "lazy"] + (["tensor"] if one_size else [])))
    return sizes, depth, cn, form, draw(st.integers(0, 2 ** 32 - 1)), steps, planar, out


def _frames(case, salt):
    sizes, depth, cn, form, seed_ = case[:5]
    rng = np.random.default_rng(seed_ + salt)
    imgs = [rand_image(rng, h, w, cn, ALL_DEPTHS[depth]) for h, w in sizes]
    if form == "array":
        return np.stack([i.reshape(i.shape[0], i.shape[1], cn) for i in imgs])
    if form == "gpumats":
        return [_upload(i) for i in imgs]
    return imgs[0] if form == "one" else imgs


def _step(spec, m, sizes):
    """The lazycv step for ``spec`` on the batch whose first frame is ``m`` (its frames' sizes
    ``sizes``), or None when ``m``'s type does not support it."""
    kind = spec[0]
    w, h = min(s[1] for s in sizes), min(s[0] for s in sizes)
    if kind == "crop":
        if spec[5]:
            return lazycv.crop(lambda cw, ch: (cw // 4, ch // 4, max(1, cw - cw // 2), max(1, ch - ch // 2)))
        x, y = int(spec[1] * (w - 1)), int(spec[2] * (h - 1))
        return lazycv.crop((x, y, max(1, int(spec[3] * (w - x))), max(1, int(spec[4] * (h - y)))))
    if kind == "resize":
        return lazycv.resize((spec[1], spec[2]), interpolation=spec[3])
    if kind == "cvt_color":
        codes = GRAPH_CODES.get(m.channels())
        if not codes or m.depth() not in COLOR_DEPTHS:
            return None
        return lazycv.cvt_color(codes[spec[1] % len(codes)])
    if kind == "convert":
        return lazycv.convert(spec[1], spec[2], spec[3])
    if kind == "normalize":
        cn = m.channels()
        mean = spec[1][:cn] if spec[3] else spec[1][0]
        std = tuple(spec[2] * (k + 1) for k in range(cn)) if spec[3] else spec[2]
        return lazycv.normalize(mean, std)
    op = spec[1]
    if op[0] == "userop":
        fn, params = _user_op(op[1], m.channels())
        if op[1][0] == "two_inputs":
            other = op[1][5]
            return lambda g: fn(g, _like(g, other), *params)
        return fn.step(*params)
    return lambda g: _apply(op, g, [])


def _shape_after(spec, sizes):
    if spec[0] == "resize":
        return [(spec[2], spec[1])] * len(sizes)
    if spec[0] == "crop":
        if spec[5]:
            return [(max(1, h - h // 2), max(1, w - w // 2)) for h, w in sizes]
        w, h = min(s[1] for s in sizes), min(s[0] for s in sizes)
        x, y = int(spec[1] * (w - 1)), int(spec[2] * (h - 1))
        return [(max(1, int(spec[4] * (h - y))), max(1, int(spec[3] * (w - x))))] * len(sizes)
    return sizes


def build_pipeline(case, stats=None):
    """(the pipeline, its body steps) for ``case``; each step is tried on the first frame's
    recording (nothing is computed) and left out where that frame's type refuses it."""
    sizes, depth, cn, form, seed_, specs, planar, out = case
    first = _upload(rand_image(np.random.default_rng(seed_), sizes[0][0], sizes[0][1], cn, ALL_DEPTHS[depth]))
    body, m, made = [], first, [first]
    try:
        for spec in specs:
            family = "call:" + _family(spec[1]) if spec[0] == "call" else spec[0]
            step = _step(spec, m, sizes)
            try:
                if step is None:
                    raise cv2.error("not for this type")
                nxt = step.apply(m) if isinstance(step, Step) else step(m)
            except cv2.error:
                if stats is not None:
                    _count(stats, "skipped", family)
                continue
            if stats is not None:
                _count(stats, "ops", family)
            made.append(nxt)
            body.append(step)
            sizes, m = _shape_after(spec, sizes), nxt
    finally:
        for g in made:
            g.release()
    if planar:
        body.append(lazycv.to_planar())
    writer = {"numpy": [lazycv.write()], "list": [lazycv.write(stack=False)], "device": [lazycv.write(device=True)],
              "tensor": [lazycv.write(tensor=True)], "lazy": []}[out]
    if out == "numpy" and len(set(sizes)) > 1:
        writer = [lazycv.write(stack=False)]             # (frames of other sizes cannot be stacked)
    return lazycv.compose(lazycv.read(), *body, *writer), body


def _host(r):
    """A result of one frame (a GpuMat, or a list of planes) as a numpy array ((C, H, W) for planes)."""
    if isinstance(r, list):
        return np.stack([p.download() for p in r])
    return r.download()


def _per_frame(got, case):
    """A pipeline's output as one numpy array per frame."""
    n, single = len(case[0]), case[3] == "one"
    out = case[7]
    if out in ("device", "lazy"):
        frames = [got] if single else got
        return [_host(r) for r in frames]
    if out == "tensor":
        arr = got if isinstance(got, np.ndarray) else got.copy_to_host()
        return [arr] if single else [arr[i] for i in range(n)]
    if out == "list" or isinstance(got, list):
        return list(got) if not single else [got]
    return [got] if single else [got[i] for i in range(n)]


def _by_hand(body, frames):
    """The steps called frame by frame (the cv2.cuda calls a user would write)."""
    mats = frames if isinstance(frames, list) else [frames] if frames.ndim in (2, 3) else list(frames)
    outs = []
    for f in mats:
        m = f if isinstance(f, cv2.cuda.GpuMat) else _upload(f)
        for s in body:
            m = s.apply(m) if isinstance(s, Step) else s(m)
        outs.append(_host(m))
    return outs


def check_pipeline(case, stats):
    """The fused pipeline (twice: new images of the same shapes) and the eager one equal the
    steps called frame by frame eagerly."""
    with lazycv.enabled(backend=BACKEND, fuse=False):
        eager, body = build_pipeline(case, stats)
    with lazycv.enabled(backend=BACKEND, fuse=True):
        fused, _ = build_pipeline(case)
    for salt in (0, 1):
        with lazycv.enabled(backend=BACKEND, fuse=False):
            want = _by_hand(body, _frames(case, salt))
            assert_fused_equals_eager(_per_frame(eager(_frames(case, salt)), case), want)
        with lazycv.enabled(backend=BACKEND, fuse=True):
            assert_fused_equals_eager(_per_frame(fused(_frames(case, salt)), case), want)


# ---------------------------------------------------------------- the profiles and the report

FUZZ_STATS = {kind: {"examples": 0, "ops": 0, "skipped": 0, "by_op": {}, "skipped_by_op": {}, "failures": [],
                     "seconds": 0.0, "shards": []} for kind in PROFILES}


def _count(stats, what, family):
    stats[what] += 1
    key = "by_op" if what == "ops" else "skipped_by_op"
    stats[key][family] = stats[key].get(family, 0) + 1


def _report_path():
    path = os.environ.get("LAZYCV_FUZZ_REPORT")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"{path}.{worker}" if path and worker else path


@pytest.fixture(scope="module", autouse=True)
def fuzz_report():
    """LAZYCV_FUZZ_REPORT=path: what the random examples exercised, as JSON, after the module
    (under pytest-xdist one file a worker: path.gw0, ...)."""
    yield
    path = _report_path()
    if path:
        with open(path, "w") as f:
            json.dump(dict(FUZZ_STATS, seed=SEED, long=LONG, shards=SHARDS, backend=BACKEND), f, indent=1,
                      sort_keys=True)


def merge_reports(paths):
    """One summary of several processes' reports (LAZYCV_FUZZ_REPORT files)."""
    total = {kind: {"examples": 0, "ops": 0, "skipped": 0, "by_op": {}, "skipped_by_op": {}, "failures": [],
                    "seconds": 0.0, "shards": []} for kind in PROFILES}
    for p in paths:
        with open(p) as f:
            rep = json.load(f)
        for kind, t in total.items():
            r = rep.get(kind, {})
            for k in ("examples", "ops", "skipped", "seconds"):
                t[k] += r.get(k, 0)
            for k in ("by_op", "skipped_by_op"):
                for fam, c in r.get(k, {}).items():
                    t[k][fam] = t[k].get(fam, 0) + c
            t["failures"] += r.get("failures", [])
            t["shards"] += r.get("shards", [])
    return total


def _fuzz(kind, strategy):
    """The test of one fuzzer: ``check(case, stats)`` over ``strategy``'s examples — CI's
    derandomized few, or under LAZYCV_FUZZ_LONG its share of N in shards with their own seeds."""
    ci, sim, share = PROFILES[kind]

    def deco(check):
        stats = FUZZ_STATS[kind]

        def one(case):
            t0 = time.perf_counter()
            check(case, stats)
            stats["examples"] += 1
            stats["seconds"] += time.perf_counter() - t0

        health = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                  HealthCheck.filter_too_much]
        if not LONG:
            def example_(case):
                one(case)
            example_.__name__ = example_.__qualname__ = check.__name__     # (derandomize hashes it)
            return settings(max_examples=sim if SIM else ci, deadline=None, derandomize=True, database=None,
                            suppress_health_check=health)(given(strategy)(example_))

        total = max(1, int(LONG * share))

        def test(shard):
            n = total // SHARDS + (1 if shard < total % SHARDS else 0)
            if n == 0:
                return
            failures = []

            def guarded(case):
                try:
                    one(case)
                except Exception as e:              # noqa: BLE001 (recorded; the shard goes on)
                    failures.append({"case": repr(case), "error": f"{type(e).__name__}: {e}"[:2000],
                                     "where": traceback.format_exc(limit=-3)[-2000:]})
            shard_seed = SEED * 1_000_003 + list(PROFILES).index(kind) * 10_007 + shard
            run = seed(shard_seed)(settings(max_examples=n, deadline=None, derandomize=False, database=None,
                                            phases=[Phase.generate], suppress_health_check=health)(
                given(strategy)(guarded)))
            before = stats["examples"]
            run()
            stats["shards"].append({"shard": shard, "seed": shard_seed, "examples": stats["examples"] - before,
                                    "failures": len(failures)})
            stats["failures"] += failures
            print(f"fuzz {kind} shard {shard}/{SHARDS}: {stats['examples'] - before} examples, "
                  f"{len(failures)} failures", flush=True)
            assert not failures, f"{len(failures)} failing {kind}: {failures[:3]}"
        test.__name__ = check.__name__
        return pytest.mark.parametrize("shard", range(SHARDS))(test)
    return deco


@pytest.mark.sim
@_fuzz("graphs", graphs)
def test_random_graph_fused_equals_eager(chains, stats):
    check_graph(chains, stats)


@pytest.mark.sim
@_fuzz("user_ops", user_op_graphs)
def test_random_user_ops_in_chains_fused_equals_eager(chains, stats):
    check_graph(chains, stats)


@pytest.mark.sim
@_fuzz("pipelines", pipelines())
def test_random_pipeline_equals_the_eager_calls(case, stats):
    check_pipeline(case, stats)


if __name__ == "__main__":
    import sys
    print(json.dumps(merge_reports(sys.argv[1:]), indent=1, sort_keys=True))
