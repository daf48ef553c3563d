"""Per-element logic: threshold, compare (and compareWithScalar), inRange, bitwise and/or/xor/not
(and their *_with_scalar forms), lshift and rshift. All fuse with their neighbours.

OpenCV's rules, which the CPU reference confirms:
* threshold on an integer image floors the threshold and rounds maxval (saturated to the depth),
  returns the floored threshold, and compares in integers (a threshold past the depth's range
  gives the all-or-nothing answer; TRUNC below the range gives 0, as CPU OpenCV's shortcut);
  on a float image both are converted to its type. OpenCV's CUDA module also takes 8S and 32S.
* compare of an integer image with a scalar is exact: ``v > 5.5`` is ``v > 5``, ``v == 5.5`` is
  never true (CPU OpenCV rounds the scalar by the comparison); a float image compares with the
  scalar converted to its type. The result is CV_8U, 255 or 0, with the input's channels.
* inRange converts its bounds to the image's depth (saturate_cast: round half to even) and gives
  one CV_8U channel, 255 where every channel lies in its [lower, upper].
* bitwise ops work on integer images (a scalar rounded to the depth first); float images, whose
  bit patterns a kernel cannot reinterpret here, go through the CPU fallback.
* lshift and rshift shift by a non-negative int per channel (rshift is arithmetic for signed
  depths; lshift keeps the depth's low bits, as NPP's shift does); 1, 3 or 4 channels.
"""
import math

import cv2
import numpy as np

from .._types import DEPTH_RANGE, is_float
from ..errors import StsBadArg, StsBadFlag, cv_error
from .base import OpDef, round_int32
from .common import (check_channels, check_depth, check_same, cuda_api, float_arg, gpumat_cls, int_arg,
                     is_scalar_like, node, result, scalar4, src_mat)
from .core import masked_result
from .fallback import cpu_fallback

_ALL = (cv2.CV_8U, cv2.CV_8S, cv2.CV_16U, cv2.CV_16S, cv2.CV_32S, cv2.CV_32F, cv2.CV_64F)
_INTS = (cv2.CV_8U, cv2.CV_8S, cv2.CV_16U, cv2.CV_16S, cv2.CV_32S)
_FAR = 1 << 40          # an integer threshold no int32 pixel reaches (kept in the int64 argument)


def _float_kind(depth):
    return "f64" if depth == cv2.CV_64F else "f32"


def _kind(depth):
    return _float_kind(depth) if is_float(depth) else "i"


def _clamp_far(v):
    return max(min(v, _FAR), -_FAR)


# ---------------------------------------------------------------------------------- threshold

class Threshold(OpDef):
    """dyn = (thresh, maxval) in the image's type (see the module rules), then the type as
    choices: above, below (0: zero, 1: maxval, 2: the pixel). The type is an argument, not
    part of the kernel: one kernel serves all five."""
    name = "threshold"

    def emit(self, ctx, n, y, x):
        kind = _kind(n.depth)
        t, m = ctx.dyn(n, 0, kind), ctx.dyn(n, 1, kind)
        above, below = ctx.dyn(n, 2, "i"), ctx.dyn(n, 3, "i")
        z = {"i": "0", "f32": "np.float32(0)", "f64": "np.float64(0)"}[kind]
        pick = "({m} if {k} == 1 else ({v} if {k} == 2 else {z}))"
        return [f"{pick.format(m=m, v=v, z=z, k=above)} if {v} > {t} else {pick.format(m=m, v=v, z=z, k=below)}"
                for v in ctx.read(n.inputs[0], y, x)]


# type -> (above the threshold, at or below it): 0 zero, 1 maxval (TRUNC: the threshold), 2 the pixel
_THRESH_CHOICES = {cv2.THRESH_BINARY: (1, 0), cv2.THRESH_BINARY_INV: (0, 1), cv2.THRESH_TRUNC: (1, 2),
                   cv2.THRESH_TOZERO: (2, 0), cv2.THRESH_TOZERO_INV: (0, 2)}


def threshold_args(depth, thresh, maxval, ttype):
    """(retval, thresh, maxval) as OpenCV applies them to an image of ``depth``."""
    if is_float(depth):
        if depth == cv2.CV_32F:
            thresh32, maxval32 = float(np.float32(thresh)), float(np.float32(maxval))
            return thresh, thresh32, (thresh32 if ttype == cv2.THRESH_TRUNC else maxval32)
        return thresh, thresh, (thresh if ttype == cv2.THRESH_TRUNC else maxval)
    lo, hi = DEPTH_RANGE[depth]
    ithresh = _clamp_far(math.floor(thresh)) if math.isfinite(thresh) else (_FAR if thresh > 0 else -_FAR)
    if ttype == cv2.THRESH_TRUNC:
        imax = 0 if ithresh < lo else min(ithresh, hi)
    else:
        imax = min(max(round_int32(maxval), lo), hi)
    return float(ithresh), ithresh, imax


@cuda_api("threshold")
def threshold(src, thresh, maxval, type, dst=None, stream=None):
    """cv2.cuda.threshold(src, thresh, maxval, type[, dst[, stream]]) -> (retval, dst)."""
    func = "threshold"
    m = src_mat(func, src)
    thresh = float_arg(func, thresh, "thresh", 0.0)
    maxval = float_arg(func, maxval, "maxval", 0.0)
    ttype = int_arg(func, type, "type")
    check_depth(func, m, _ALL)
    if ttype & cv2.THRESH_OTSU and m._depth == cv2.CV_8U and m._cn == 1 and \
            (ttype & ~cv2.THRESH_OTSU) in _THRESH_CHOICES:
        # Otsu needs the histogram first: CPU OpenCV picks it, as OpenCV's CUDA module does
        got = {}

        def otsu(a):
            got["t"], out = cv2.threshold(a, thresh, maxval, ttype)
            return out
        out = cpu_fallback(func, otsu, [m], dst, stream, why="THRESH_OTSU picks the threshold on the host")
        return got["t"], out
    if ttype not in _THRESH_CHOICES:
        raise cv_error(func, f"unsupported threshold type {ttype} (expected THRESH_BINARY, THRESH_BINARY_INV, "
                             "THRESH_TRUNC, THRESH_TOZERO or THRESH_TOZERO_INV; THRESH_OTSU on CV_8UC1 only)",
                       StsBadFlag)
    retval, t, mx = threshold_args(m._depth, thresh, maxval, ttype)
    nd = node("threshold", [m._value(func)], (), (t, mx) + _THRESH_CHOICES[ttype], m._rows, m._cols, m._depth,
              m._cn)
    return retval, result(func, nd, dst, stream)


# ------------------------------------------------------------------------------------ compare

class Compare(OpDef):
    """static = (mode,): 'mm' (two images) or 'ms' (image and a scalar, per channel, already in
    the image's type: :func:`compare_scalar`); dyn = the scalars, then the answer (255 or 0)
    when a == b, a < b, a > b and unordered (NaN): the operator is an argument, not part of
    the kernel."""
    name = "compare"

    def emit(self, ctx, n, y, x):
        (mode,) = n.static
        src = n.inputs[0]
        a = ctx.read(src, y, x)
        if mode == "mm":
            b, k = ctx.read(n.inputs[1], y, x), 0
        else:
            b, k = [ctx.dyn(n, c, _kind(src.depth)) for c in range(n.cn)], n.cn
        eq, lt, gt, nan = (ctx.dyn(n, k + i, "i") for i in range(4))
        return [f"{eq} if {ai} == {bi} else ({lt} if {ai} < {bi} else ({gt} if {ai} > {bi} else {nan}))"
                for ai, bi in zip(a, b)]


# cmpop -> the answer when a == b, a < b, a > b, unordered
_OUTCOMES = {cv2.CMP_EQ: (255, 0, 0, 0), cv2.CMP_GT: (0, 0, 255, 0), cv2.CMP_GE: (255, 0, 255, 0),
             cv2.CMP_LT: (0, 255, 0, 0), cv2.CMP_LE: (255, 255, 0, 0), cv2.CMP_NE: (0, 255, 255, 255)}


def compare_scalar(depth, cmpop, s):
    """The value an image of ``depth`` is compared with, so that the comparison stays exact:
    integers compare with an integer chosen by the operator (CPU OpenCV's rule), floats with
    the scalar in their own type."""
    if is_float(depth):
        return float(np.float32(s)) if depth == cv2.CV_32F else s
    if s != s:                                         # NaN: only != holds
        return _FAR
    if s == math.floor(s) or not math.isfinite(s):
        return _clamp_far(s) if math.isfinite(s) else (_FAR if s > 0 else -_FAR)
    if cmpop in (cv2.CMP_GT, cv2.CMP_LE):
        return _clamp_far(math.floor(s))
    if cmpop in (cv2.CMP_LT, cv2.CMP_GE):
        return _clamp_far(math.ceil(s))
    return _FAR                                        # == a fraction: never; != : always


def _cmpop(func, cmpop):
    cmpop = int_arg(func, cmpop, "cmpop")
    if cmpop not in _OUTCOMES:
        raise cv_error(func, f"unknown comparison {cmpop} (expected CMP_EQ, CMP_GT, CMP_GE, CMP_LT, CMP_LE "
                             "or CMP_NE)", StsBadFlag)
    return cmpop


def compare_node(func, a, other, cmpop, broadcast):
    """The node of ``a cmpop other`` (a GpuMat or a scalar; a scalar first swaps the operator)."""
    check_depth(func, a, _ALL, "src1")
    if isinstance(other, gpumat_cls()):
        b = src_mat(func, other, "src2")
        check_same(func, a, b)
        return node("compare", [a._value(func, "src1"), b._value(func, "src2")], ("mm",), _OUTCOMES[cmpop],
                    a._rows, a._cols, cv2.CV_8U, a._cn)
    s = scalar4(func, other, "src2", broadcast=broadcast)
    vals = tuple(compare_scalar(a._depth, cmpop, v) for v in s[:a._cn])
    return node("compare", [a._value(func, "src1")], ("ms",), vals + _OUTCOMES[cmpop], a._rows, a._cols,
                cv2.CV_8U, a._cn)


_SWAPPED = {cv2.CMP_EQ: cv2.CMP_EQ, cv2.CMP_NE: cv2.CMP_NE, cv2.CMP_GT: cv2.CMP_LT, cv2.CMP_LT: cv2.CMP_GT,
            cv2.CMP_GE: cv2.CMP_LE, cv2.CMP_LE: cv2.CMP_GE}


@cuda_api("compare")
def compare(src1, src2, cmpop, dst=None, stream=None):
    """cv2.cuda.compare(src1, src2, cmpop[, dst[, stream]]): 255 where ``src1 cmpop src2``, else 0
    (CV_8U, src1's channels); either side may be a scalar (a bare number applies to every channel)."""
    func = "compare"
    cmpop = _cmpop(func, cmpop)
    if is_scalar_like(src1) and not is_scalar_like(src2):
        a, other, cmpop = src_mat(func, src2, "src2"), src1, _SWAPPED[cmpop]
    else:
        a, other = src_mat(func, src1, "src1"), src2
        if not is_scalar_like(other):
            other = src_mat(func, other, "src2")
    return result(func, compare_node(func, a, other, cmpop, broadcast=True), dst, stream)


@cuda_api("compareWithScalar")
def compareWithScalar(src1, src2, cmpop, dst=None, stream=None):
    """cv2.cuda.compareWithScalar(src1, src2, cmpop[, dst[, stream]]): src2 a cv::Scalar (a bare
    number is (v, 0, 0, 0))."""
    func = "compareWithScalar"
    cmpop = _cmpop(func, cmpop)
    a = src_mat(func, src1, "src1")
    if not is_scalar_like(src2):
        raise cv_error(func, f"src2 must be a scalar, got {type(src2).__name__}", StsBadArg)
    return result(func, compare_node(func, a, src2, cmpop, broadcast=False), dst, stream)


# ------------------------------------------------------------------------------------ inRange

class InRange(OpDef):
    """255 where every channel lies in [lower, upper]; dyn = (lower per channel, upper per channel)."""
    name = "in_range"

    def emit(self, ctx, n, y, x):
        src = n.inputs[0]
        v, cn, kind = ctx.read(src, y, x), src.cn, _kind(src.depth)
        tests = [f"({ctx.dyn(n, c, kind)} <= {v[c]} and {v[c]} <= {ctx.dyn(n, cn + c, kind)})" for c in range(cn)]
        return [f"255 if ({' and '.join(tests)}) else 0"]


def _bound(depth, v):
    """A bound in the image's type, as saturate_cast converts it."""
    if is_float(depth):
        return float(np.float32(v)) if depth == cv2.CV_32F else v
    lo, hi = DEPTH_RANGE[depth]
    return min(max(round_int32(v), lo), hi)


@cuda_api("inRange")
def inRange(src, lowerb, upperb, dst=None, stream=None):
    """cv2.cuda.inRange(src, lowerb, upperb[, dst[, stream]]) -> CV_8UC1 mask (bounds are cv::Scalar)."""
    func = "inRange"
    m = src_mat(func, src)
    check_depth(func, m, _ALL)
    lo = scalar4(func, lowerb, "lowerb")
    hi = scalar4(func, upperb, "upperb")
    dyn = tuple(_bound(m._depth, v) for v in lo[:m._cn]) + tuple(_bound(m._depth, v) for v in hi[:m._cn])
    nd = node("in_range", [m._value(func)], (), dyn, m._rows, m._cols, cv2.CV_8U, 1)
    return result(func, nd, dst, stream)


# ------------------------------------------------------------------------------------ bitwise

_BIT_OPS = {"and": 0, "or": 1, "xor": 2}
_LOW_BITS = {cv2.CV_8U: 0xFF, cv2.CV_16U: 0xFFFF}


class Bitwise(OpDef):
    """static = (mode,): 'mm', 'ms' (dyn scalars, already in the image's depth) or 'not'; the
    binary operation is the last dyn (0 and, 1 or, 2 xor): one kernel serves all three."""
    name = "bitwise"

    def emit(self, ctx, n, y, x):
        (mode,) = n.static
        a = ctx.read(n.inputs[0], y, x)
        if mode == "not":
            mask = _LOW_BITS.get(n.depth)
            # integers load sign-extended: ~v is right for signed depths, unsigned keep their bits
            return [f"(~{v}) & {mask}" if mask else f"~{v}" for v in a]
        if mode == "mm":
            b, k = ctx.read(n.inputs[1], y, x), ctx.dyn(n, 0, "i")
        else:
            b, k = [ctx.dyn(n, c, "i") for c in range(n.cn)], ctx.dyn(n, n.cn, "i")
        return [f"({ai} & {bi}) if {k} == 0 else (({ai} | {bi}) if {k} == 1 else ({ai} ^ {bi}))"
                for ai, bi in zip(a, b)]


def _bitwise(func, kind, src1, src2, dst, mask, stream, broadcast):
    a = src_mat(func, src1, "src1")
    check_depth(func, a, _ALL, "src1")
    GpuMat = gpumat_cls()
    if kind != "not" and not (is_scalar_like(src2) and not isinstance(src2, GpuMat)):
        b = src_mat(func, src2, "src2")
        check_same(func, a, b)
    else:
        b = None
    if is_float(a._depth):
        return _bitwise_fallback(func, kind, a, b, src2, dst, mask, stream, broadcast)
    if kind == "not":
        nd = node("bitwise", [a._value(func, "src1")], ("not",), (), a._rows, a._cols, a._depth, a._cn)
    elif b is not None:
        nd = node("bitwise", [a._value(func, "src1"), b._value(func, "src2")], ("mm",), (_BIT_OPS[kind],),
                  a._rows, a._cols, a._depth, a._cn)
    else:
        s = scalar4(func, src2, "src2", broadcast=broadcast)
        nd = node("bitwise", [a._value(func, "src1")], ("ms",),
                  tuple(_bound(a._depth, v) for v in s[:a._cn]) + (_BIT_OPS[kind],), a._rows, a._cols, a._depth, a._cn)
    return masked_result(func, nd, a, dst, mask, stream)


def _bitwise_fallback(func, kind, a, b, src2, dst, mask, stream, broadcast):
    """Float images: CPU OpenCV works on their bit patterns."""
    fn = {"and": cv2.bitwise_and, "or": cv2.bitwise_or, "xor": cv2.bitwise_xor}.get(kind)
    mats = [a] + ([b] if b is not None else []) + ([mask] if mask is not None else [])
    if mask is not None:
        mask = src_mat(func, mask, "mask")
    scalar = None if b is not None or kind == "not" else np.array(scalar4(func, src2, "src2", broadcast=broadcast))
    old = dst.download() if dst is not None and not dst.empty() and dst.size() == a.size() and \
        dst.type() == a.type() else None

    def run(*hosts):
        first, rest = hosts[0], list(hosts[1:])
        m = rest.pop() if mask is not None else None
        out = None if old is None else old.copy()
        if kind == "not":
            return cv2.bitwise_not(first, out, mask=m)
        other = rest[0] if b is not None else scalar
        return fn(first, other, out, mask=m)
    return cpu_fallback(func, run, mats, dst, stream, why="bitwise ops on float images")


def _bitwise_api(name, kind):
    @cuda_api(name)
    def f(src1, src2, dst=None, mask=None, stream=None):
        return _bitwise(name, kind, src1, src2, dst, mask, stream, broadcast=True)
    f.__doc__ = f"cv2.cuda.{name}(src1, src2[, dst[, mask[, stream]]]); src2 may be a scalar."
    return f


def _bitwise_scalar_api(name, kind):
    @cuda_api(name)
    def f(src1, src2, dst=None, mask=None, stream=None):
        if not is_scalar_like(src2):
            raise cv_error(name, f"src2 must be a scalar, got {type(src2).__name__}", StsBadArg)
        return _bitwise(name, kind, src1, src2, dst, mask, stream, broadcast=False)
    f.__doc__ = f"cv2.cuda.{name}(src1, src2[, dst[, mask[, stream]]]); src2 a cv::Scalar ((v, 0, 0, 0) for v)."
    return f


bitwise_and = _bitwise_api("bitwise_and", "and")
bitwise_or = _bitwise_api("bitwise_or", "or")
bitwise_xor = _bitwise_api("bitwise_xor", "xor")
bitwise_and_with_scalar = _bitwise_scalar_api("bitwise_and_with_scalar", "and")
bitwise_or_with_scalar = _bitwise_scalar_api("bitwise_or_with_scalar", "or")
bitwise_xor_with_scalar = _bitwise_scalar_api("bitwise_xor_with_scalar", "xor")


@cuda_api("bitwise_not")
def bitwise_not(src, dst=None, mask=None, stream=None):
    """cv2.cuda.bitwise_not(src[, dst[, mask[, stream]]])."""
    return _bitwise("bitwise_not", "not", src, None, dst, mask, stream, broadcast=True)


# -------------------------------------------------------------------------------------- shifts

class Shift(OpDef):
    """static = (direction,) '<<' or '>>'; dyn = shift per channel (0-31)."""
    name = "shift"

    def emit(self, ctx, n, y, x):
        (direction,) = n.static
        v = ctx.read(n.inputs[0], y, x)
        out = []
        for c, vc in enumerate(v):
            e = f"{vc} {direction} {ctx.dyn(n, c, 'i')}"
            if direction == "<<":
                mask = _LOW_BITS.get(n.depth)
                e = f"({e}) & {mask}" if mask else ctx.spell("wrap_i32", e)
            out.append(e)
        return out


def _shift(func, direction, depths, src, val, dst, stream):
    m = src_mat(func, src)
    check_depth(func, m, depths)
    check_channels(func, m, (1, 3, 4))
    s = scalar4(func, val, "val")
    shifts = []
    for v in s[:m._cn]:
        k = round_int32(v)
        if k < 0:
            raise cv_error(func, f"shift values must be non-negative, got {k}", StsBadArg)
        shifts.append(min(k, 31))
    nd = node("shift", [m._value(func)], (direction,), tuple(shifts), m._rows, m._cols, m._depth, m._cn)
    return result(func, nd, dst, stream)


@cuda_api("rshift")
def rshift(src, val, dst=None, stream=None):
    """cv2.cuda.rshift(src, val[, dst[, stream]]): val an int per channel; 8U 8S 16U 16S 32S."""
    return _shift("rshift", ">>", _INTS, src, val, dst, stream)


@cuda_api("lshift")
def lshift(src, val, dst=None, stream=None):
    """cv2.cuda.lshift(src, val[, dst[, stream]]): val an int per channel; 8U 16U 32S."""
    return _shift("lshift", "<<", (cv2.CV_8U, cv2.CV_16U, cv2.CV_32S), src, val, dst, stream)


__all__ = ["threshold", "compare", "compareWithScalar", "inRange", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "bitwise_and_with_scalar", "bitwise_or_with_scalar", "bitwise_xor_with_scalar",
           "lshift", "rshift"]
