"""Per-element arithmetic: add, subtract, multiply, divide (with a GpuMat or a scalar), absdiff,
min, max, and their masks.

OpenCV's rules, which the CPU reference confirms:
* add/subtract take CPU OpenCV's working type (addsub_working_type): int32 when the result and
  an operand are integers (a float image rounded first, a scalar rounded; sums wrap), else
  float32, double only where 64F is involved;
* absdiff/min/max of integer images is exact integer math; min/max of floats follow x86
  OpenCV's SIMD path (a NaN or a tie gives the second operand);
* multiply with a scale != 1, divide, and anything else with a float operand or result computes
  in float (double when 32S or 64F is involved; a float32 result scaled by a scalar in float,
  the scale folded into the scalar), then saturates (round half to even); two images of
  different depths, or a result of another depth, compute in CPU OpenCV 5's coerced depth
  (:func:`muldiv_work_depth`: 8U * 32F into 32S in float32, 8U * 8U into 16U as 32S);
* integer division (two integer images) by zero gives 0; a division in floating point (a
  scalar or a float operand) follows IEEE, and saturating inf or NaN to an integer output gives
  its minimum (cvRound's INT_MIN), as the CPU reference does.
"""
import functools
import inspect
import numbers

import cv2
import numpy as np

from .._types import is_float
from ..errors import StsBadArg, StsUnmatchedFormats, cv_error
from .base import OpDef, round_int32, saturate
from .common import (broadcast_scalar, check_same, cuda_api, depth_arg, float_arg, gpumat_cls, is_scalar_like,
                     known_tuple_scalar, node, scalar4, src_mat)
from .core import masked_result

_WIDE = (cv2.CV_32S, cv2.CV_64F)

_FORMULA = {
    "add": "{a} + {b}",
    "sub": "{a} - {b}",
    "mul": "{a} * {b}",
    "mul_scaled": "{s} * {a} * {b}",
    "mul_scaled_product": "{a} * {b} * {s}",
    "div_int": "({a} * {s} / {b}) if {b} != 0 else {zero}",
    "div_float": "{a} * {s} / {b}",
    # scale == 1: a * 1 is exactly a, so the multiply can go
    "div_int_unscaled": "({a} / {b}) if {b} != 0 else {zero}",
    "div_float_unscaled": "{a} / {b}",
    "absdiff": "abs({a} - {b})",
    # as OpenCV's SIMD min/max (x86 minps/maxps): a NaN or a tie gives the second operand
    "min": "({a} if {a} < {b} else {b})",
    "max": "({a} if {a} > {b} else {b})",
}


_SHORT_PRODUCT = (cv2.CV_8U, cv2.CV_8S, cv2.CV_16S)   # products that always fit in int32


@functools.lru_cache(maxsize=None)
def working_type(kind, in_depths, out_depth, scaled, with_scalar):
    """'i' (exact integer), 'f32' or 'f64': the precision OpenCV computes ``kind`` in (add and
    subtract: :func:`addsub_working_type`).

    Scalar multiply/divide into an integer result run in double (bit-exact with CPU OpenCV);
    16U products run in float so that products past int32 saturate as OpenCV's do.
    """
    if kind in ("mul", "div") and not with_scalar and len({*in_depths, out_depth}) > 1:
        # images of two types, or a result of another type: CPU OpenCV computes in
        # muldiv_work_depth (32S as double; a short exact product stays integer)
        w = muldiv_work_depth(*in_depths, out_depth)
        if w == cv2.CV_32S and kind == "mul" and not scaled and all(d in _SHORT_PRODUCT for d in in_depths):
            return "i"
        return "f32" if w == cv2.CV_32F else "f64"
    all_int = not any(is_float(d) for d in in_depths) and not is_float(out_depth)
    if all_int and kind in ("absdiff", "min", "max"):
        return "i"
    if all_int and kind == "mul" and not scaled and not with_scalar and \
            all(d in _SHORT_PRODUCT for d in in_depths):
        return "i"
    if with_scalar and kind in ("mul", "div"):
        # OpenCV's CUDA module scales by a float scalar (double only with 64F), CPU OpenCV by
        # a double: a float32 result keeps the float math (a rounding or two from CPU's, well
        # inside SPEC's 1e-5; double costs W1's normalize 7 % of its kernel time), an
        # integer result keeps CPU's double, whose rounding a float would change
        if out_depth == cv2.CV_32F and not any(d in _WIDE for d in in_depths):
            return "f32"
        return "f64"
    if any(d in _WIDE for d in (*in_depths, out_depth)):
        return "f64"
    return "f32"


def muldiv_work_depth(d1, d2, out):
    """The depth CPU OpenCV 5 multiplies or divides two images of depths ``d1``, ``d2`` into
    ``out`` in (arithm_op's coerceTypes with muldiv): the common depth when all three agree,
    else 32S for integers, 64F beside a 64F, else 32F (8U * 32F into 32S: float32; 8U * 8U
    into 16U: 32S, i.e. double, the product first, then the scale)."""
    def coerce(a, b):
        if a == b:
            return a
        if a <= cv2.CV_32S and b <= cv2.CV_32S:
            return cv2.CV_32S
        return cv2.CV_64F if cv2.CV_64F in (a, b) else cv2.CV_32F
    return coerce(coerce(d1, d2), out)


class Arith(OpDef):
    """static = (kind, mode, wt, scaled); mode 'mm' (two images), 'ms' (image op scalar),
    'sm' (scalar op image), or 'mv' / 'vm' with a device scalar (a 1x1 GpuMat, e.g. a
    statistic, read at (0, 0): channel c, or channel 0 of a one-channel one); dyn = (scale,
    s0, s1, s2, s3)."""
    name = "arith"

    def emit(self, ctx, n, y, x):
        kind, mode, wt, scaled = n.static
        ft = {"f32": "np.float32", "f64": "np.float64"}.get(wt)
        a = self._operand(ctx, n.inputs[0], wt, y, x)
        if mode == "mm":
            b = self._operand(ctx, n.inputs[1], wt, y, x)
        elif mode in DEVICE_SCALAR_MODES:
            b = self._operand(ctx, n.inputs[1], wt, "0", "0")
            b = [b[c] if len(b) > 1 else b[0] for c in range(n.cn)]
        else:
            b = [ctx.dyn(n, 1 + c, wt if wt != "i" else "i") for c in range(n.cn)]
        if ft:
            a = [f"{ft}({v})" for v in a]
            if mode == "mm" or mode in DEVICE_SCALAR_MODES:
                b = [f"{ft}({v})" for v in b]
        if mode in ("sm", "vm") and kind not in ("min", "max"):     # (min/max: OpenCV's image first)
            a, b = b, a
        s = ctx.dyn(n, 0, wt) if scaled else None
        if kind == "mul" and scaled:
            # OpenCV's 32S multiply (mul32s, also mixed integer images) scales the product
            product_first = mode == "mm" and \
                muldiv_work_depth(n.inputs[0].depth, n.inputs[1].depth, n.depth) == cv2.CV_32S
            f = _FORMULA["mul_scaled_product" if product_first else "mul_scaled"]
        elif kind == "div":
            # OpenCV's zero rule is its integer division's: two integer images; a scalar or a
            # float operand divides in floating point, and a zero divisor saturates inf or NaN
            int_div = mode == "mm" and not is_float(n.depth) and \
                not any(is_float(i.depth) for i in n.inputs)
            f = _FORMULA[("div_int" if int_div else "div_float") + ("" if scaled else "_unscaled")]
        elif wt == "i" and kind in ("add", "sub"):
            # OpenCV adds in int32 (16-bit types cannot reach its limits): past them it wraps
            f = ctx.spell("wrap_i32", _FORMULA[kind])
        elif wt == "i" and kind == "absdiff":       # |a - b| of the wrapped difference, wrapped
            f = ctx.spell("wrap_i32", f"abs({ctx.spell('wrap_i32', _FORMULA['sub'])})")
        else:
            f = _FORMULA[kind]
        zero = f"{ft}(0)" if ft else "0"
        exprs = [f.format(a=ai, b=bi, s=s, zero=zero) for ai, bi in zip(a, b)]
        return [saturate(ctx, e, n.depth, src_is_float=(wt != "i")) for e in exprs]

    @staticmethod
    def _operand(ctx, v, wt, y, x):
        """An image operand's channels; in integer math a float image rounds to int32 first."""
        vals = ctx.read(v, y, x)
        if wt == "i" and is_float(v.depth):
            return [saturate(ctx, e, cv2.CV_32S) for e in vals]
        return vals


def _operands(func, src1, src2):
    """(image, other, mode): other is a GpuMat or a 4-tuple scalar."""
    GpuMat = gpumat_cls()
    if type(src1) is GpuMat:                  # the common case, an image first: fewer tests
        a = src_mat(func, src1, "src1")
        s = known_tuple_scalar(src2)
        if s is not None:
            return a, s, "ms"
        if type(src2) is not GpuMat and is_scalar_like(src2):
            return a, broadcast_scalar(func, src2, "src2"), "ms"
        return a, src_mat(func, src2, "src2"), "mm"
    if is_scalar_like(src1) and not is_scalar_like(src2):
        return src_mat(func, src2, "src2"), scalar4(func, src1, "src1", broadcast=True), "sm"
    a = src_mat(func, src1, "src1")
    if is_scalar_like(src2):
        return a, scalar4(func, src2, "src2", broadcast=True), "ms"
    if not isinstance(src2, GpuMat) and src2 is not None:
        b = src_mat(func, src2, "src2")
    else:
        b = src_mat(func, src2, "src2")
    return a, b, "mm"


_FLT_TINY, _FLT_MAX = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
_INF = float("inf")


@functools.lru_cache(maxsize=None)
def addsub_working_type(d1, d2, out):
    """add/subtract's working type by CPU OpenCV's arithm_op: ``d1`` the image's depth, ``d2``
    the other image's or the scalar's (:func:`scalar_depth`), ``out`` the result's. An integer
    result with an integer operand is int32 math, a float image rounded first (21.5 - 7 into
    8U: 22 - 7 = 15); float math is float32 unless 64F is involved (32S + 32S into 32F too)."""
    if d1 == d2 == out:
        w = out
    else:
        w = cv2.CV_16S if d1 <= cv2.CV_8S and d2 <= cv2.CV_8S else \
            cv2.CV_32S if d1 <= cv2.CV_32S and d2 <= cv2.CV_32S else max(d1, d2)
        w = max(w, out)
        if out < cv2.CV_32F and (d1 < cv2.CV_32F or d2 < cv2.CV_32F):
            w = cv2.CV_32S
    return "i" if w < cv2.CV_32F else "f32" if w == cv2.CV_32F else "f64"


@functools.lru_cache(maxsize=256)
def scalar_depth(vals, img_depth):
    """The depth OpenCV's arithm_op gives a scalar operand of add/subtract (actualScalarDepth
    over the image's channels): the smallest integer depth holding whole values, else 32F —
    64F beside a 64F image (OpenCV 5 measured: a 32S image and 0.5 add in float32)."""
    ints = [round_int32(v) for v in vals]
    if any(i != v for i, v in zip(ints, vals)):
        return cv2.CV_64F if img_depth == cv2.CV_64F else cv2.CV_32F
    lo, hi = min(ints), max(ints)
    for depth, (dlo, dhi) in ((cv2.CV_8U, (0, 255)), (cv2.CV_8S, (-128, 127)), (cv2.CV_16U, (0, 65535)),
                              (cv2.CV_16S, (-32768, 32767))):
        if dlo <= lo and hi <= dhi:
            return depth
    return cv2.CV_32S


def _float_scalars(kind, mode, scale, svals):
    """A float32 result's scalars with ``scale`` folded in, as OpenCV's CUDA module computes it
    (one float multiply or divide by a float scalar, no intermediate product to overflow), or
    None where float32 would not stay within a rounding of CPU OpenCV's double math: a folded
    value past float32's range or subnormal (fewer digits), or a zero scale."""
    if scale == 0:
        return None
    vals = tuple(v * scale for v in svals) if kind == "mul" or mode == "sm" else \
        tuple(v / scale for v in svals)
    for v in vals:
        if v == v and v != 0 and abs(v) != _INF and not _FLT_TINY <= abs(v) <= _FLT_MAX:
            return None
    return vals


DEVICE_SCALAR_MODES = ("mv", "vm")


def _device_scalar_mode(func, a, b):
    """'mv' when ``b`` is a device scalar for image ``a`` (a 1x1 GpuMat beside a bigger image or
    one of another channel count), 'vm' when ``a`` is one for ``b``, else 'mm' (a lazycv
    extension: a statistic such as calcSum's stays on the device)."""
    one_a, one_b = (a._rows, a._cols) == (1, 1), (b._rows, b._cols) == (1, 1)
    if one_b and (not one_a or a._cn != b._cn):
        mode, img, val = "mv", a, b
    elif one_a and not one_b:
        mode, img, val = "vm", b, a
    else:
        return "mm"
    if val._cn != 1 and val._cn < img._cn:
        raise cv_error(func, f"a 1x1 GpuMat used as a scalar needs 1 or at least {img._cn} channels, "
                             f"got {val._cn}", StsUnmatchedFormats)
    return mode


def arith_node(func, kind, src1, src2, dtype=-1, scale=1.0):
    a, b, mode = _operands(func, src1, src2)
    if mode == "mm":
        mode = _device_scalar_mode(func, a, b)
    if mode in DEVICE_SCALAR_MODES:
        return _device_scalar_node(func, kind, mode, a, b, dtype, scale)
    if mode == "mm":
        check_same(func, a, b, type_too=False)
        if a._cn != b._cn:
            raise cv_error(func, f"src1 has {a._cn} channels and src2 {b._cn}", StsUnmatchedFormats)
        if a._depth != b._depth and (dtype is None or int(dtype) < 0):
            raise cv_error(func, "src1 and src2 have different depths; pass dtype to choose the "
                                 "output depth", StsUnmatchedFormats)
    out_depth = depth_arg(func, dtype, a._depth)
    in_depths = (a._depth, b._depth) if mode == "mm" else (a._depth,)
    scaled = float(scale) != 1.0
    if kind in ("add", "sub"):
        d2 = b._depth if mode == "mm" else scalar_depth(b[:a._cn], a._depth)
        wt = addsub_working_type(a._depth, d2, out_depth)
    else:
        wt = working_type(kind, in_depths, out_depth, scaled, mode != "mm")
    svals = (0.0,) * 4
    if mode != "mm":
        svals = b                           # scalar4 gave four floats
        if wt == "i":                       # OpenCV rounds the scalar to the integer work type
            svals = tuple(round_int32(v) for v in svals)
        elif wt == "f32" and kind in ("mul", "div"):
            folded = _float_scalars(kind, mode, float(scale), svals)
            if folded is None:
                wt = "f64"                  # CPU OpenCV's double math, as before
            else:
                svals, scaled, scale = folded, False, 1.0
    inputs = [a._value(func, "src1")] + ([b._value(func, "src2")] if mode == "mm" else [])
    return node("arith", inputs, (kind, mode, wt, scaled), (float(scale),) + svals,
                a._rows, a._cols, out_depth, a._cn), a


def _device_scalar_node(func, kind, mode, a, b, dtype, scale):
    """An image and a device scalar: the working type a host scalar would give, taking a float
    statistic for a fractional value (rounded in the kernel where the math is integer)."""
    img, val = (a, b) if mode == "mv" else (b, a)
    out_depth = depth_arg(func, dtype, img._depth)
    scaled = float(scale) != 1.0
    if kind in ("add", "sub"):
        d2 = val._depth if not is_float(val._depth) else (cv2.CV_64F if img._depth == cv2.CV_64F else cv2.CV_32F)
        wt = addsub_working_type(img._depth, d2, out_depth)
    else:
        wt = working_type(kind, (img._depth,), out_depth, scaled, True)
    inputs = [img._value(func, "src1" if mode == "mv" else "src2"), val._value(func, "scalar")]
    return node("arith", inputs, (kind, mode, wt, scaled), (float(scale),) + (0.0,) * 4,
                img._rows, img._cols, out_depth, img._cn), img


@cuda_api("add")
def add(src1, src2, dst=None, mask=None, dtype=-1, stream=None):
    """dst = saturate(src1 + src2); src2 may be a scalar."""
    nd, like = arith_node("add", "add", src1, src2, dtype)
    return masked_result("add", nd, like, dst, mask, stream)


@cuda_api("subtract")
def subtract(src1, src2, dst=None, mask=None, dtype=-1, stream=None):
    """dst = saturate(src1 - src2); either side may be a scalar."""
    nd, like = arith_node("subtract", "sub", src1, src2, dtype)
    return masked_result("subtract", nd, like, dst, mask, stream)


@cuda_api("multiply")
def multiply(src1, src2, dst=None, scale=1.0, dtype=-1, stream=None):
    """dst = saturate(scale * src1 * src2)."""
    nd, like = arith_node("multiply", "mul", src1, src2, dtype, float_arg("multiply", scale, "scale", 1.0))
    return masked_result("multiply", nd, like, dst, None, stream)


@cuda_api("divide")
def divide(src1, src2, dst=None, scale=1.0, dtype=-1, stream=None):
    """dst = saturate(src1 * scale / src2); integer division by zero gives 0."""
    nd, like = arith_node("divide", "div", src1, src2, dtype, float_arg("divide", scale, "scale", 1.0))
    return masked_result("divide", nd, like, dst, None, stream)


@cuda_api("absdiff")
def absdiff(src1, src2, dst=None, stream=None):
    nd, like = arith_node("absdiff", "absdiff", src1, src2)
    return masked_result("absdiff", nd, like, dst, None, stream)


@cuda_api("min")
def min_(src1, src2, dst=None, stream=None):
    src1, src2 = _minmax_operands("min", src1, src2)
    nd, like = arith_node("min", "min", src1, src2)
    return masked_result("min", nd, like, dst, None, stream)


@cuda_api("max")
def max_(src1, src2, dst=None, stream=None):
    src1, src2 = _minmax_operands("max", src1, src2)
    nd, like = arith_node("max", "max", src1, src2)
    return masked_result("max", nd, like, dst, None, stream)


def _minmax_operands(func, src1, src2):
    """min/max read a scalar operand as cv2.min/max do: their binding takes an array, so a bare
    number is the 4-element (v, 0, 0, 0) — per channel, zeros after the first — a one-value
    tuple applies to every channel, and a tuple of the image's channel count or of 4 values is
    per channel (other lengths are an error)."""
    GpuMat = gpumat_cls()
    if type(src1) is not GpuMat and is_scalar_like(src1) and not is_scalar_like(src2):
        return _minmax_scalar(func, src1, src2, "src1"), src2
    if type(src2) is not GpuMat and is_scalar_like(src2) and isinstance(src1, GpuMat):
        return src1, _minmax_scalar(func, src2, src1, "src2")
    return src1, src2


def _minmax_scalar(func, s, img, name):
    if isinstance(s, numbers.Number) and not isinstance(s, bool):
        return (float(s), 0.0, 0.0, 0.0)
    vals = np.asarray(s, dtype=np.float64).ravel() if isinstance(s, np.ndarray) else s
    n, cn = len(vals), img.channels() if isinstance(img, gpumat_cls()) else 4
    if n == 1:
        return (float(vals[0]),) * 4
    if n not in (4, cn):
        raise cv_error(func, f"{name} has {n} values for a {cn}-channel image (expected 1, {cn} or 4)",
                       StsBadArg)
    return scalar4(func, tuple(vals), name)


def _with_scalar(name, fn):
    """OpenCV CUDA's ``*WithScalar(src, Scalar)``: src2 is a cv::Scalar, so a bare number is
    (v, 0, 0, 0) and a shorter tuple is zero-padded, for every op alike."""
    def f(src1, src2, dst=None, *args, **kw):
        if not is_scalar_like(src2):
            raise cv_error(name, f"src2 must be a scalar, got {type(src2).__name__}", StsBadArg)
        return fn.__wrapped__(src1, scalar4(name, src2, "src2"), dst, *args, **kw)
    f.__signature__ = inspect.signature(fn.__wrapped__)     # (what cuda_api checks calls against)
    return cuda_api(name)(f)


addWithScalar = _with_scalar("addWithScalar", add)
subtractWithScalar = _with_scalar("subtractWithScalar", subtract)
multiplyWithScalar = _with_scalar("multiplyWithScalar", multiply)
divideWithScalar = _with_scalar("divideWithScalar", divide)
absdiffWithScalar = _with_scalar("absdiffWithScalar", absdiff)
minWithScalar = _with_scalar("minWithScalar", min_)
maxWithScalar = _with_scalar("maxWithScalar", max_)


REFERENCE = {"add": cv2.add, "subtract": cv2.subtract, "multiply": cv2.multiply, "divide": cv2.divide,
             "absdiff": cv2.absdiff, "min": cv2.min, "max": cv2.max}
