"""Per-element math: abs, sqr, sqrt, exp, log, pow, addWeighted, and the polar functions
magnitude, magnitudeSqr, phase, cartToPolar, polarToCart. All fuse with their neighbours.

OpenCV's rules, which the CPU reference confirms:
* abs and sqr are absdiff(src, 0) and multiply(src, src) (lazycv/ops/arith.py's node: the same
  saturation, int32 abs wrapping as OpenCV's);
* sqrt, exp, log compute in the image's float type (a negative sqrt or log is NaN, log(0) is
  -inf, as CPU OpenCV 5's); integer images (OpenCV's CUDA module only) compute in float32 and
  saturate, a NaN giving 0 as CUDA's saturate_cast does;
* pow: a float image raises to the power (a negative base with a fractional power is NaN); an
  integer image computes |v|^p in double with v's sign for odd integral p, then saturates; a
  negative integral power follows CPU OpenCV's table (0 -> the depth's maximum, |v| = 2 with
  p = -1 -> +-1, |v| > 2 -> 0);
* addWeighted computes src1 * alpha + (src2 * beta + gamma) in float32 with fused roundings (CPU
  OpenCV's SIMD form; double where 32S or 64F is involved), then saturates;
* the polar functions take float images of one type; phase is atan2 in [0, 2*pi) (or degrees).
"""
import cv2

from .._types import DEPTH_RANGE, is_float
from ..errors import StsBadArg, StsUnmatchedFormats, cv_error
from .arith import arith_node
from .base import OpDef, saturate
from .common import (check_channels, check_depth, check_same, cuda_api, depth_arg, float_arg, gpumat_cls,
                     node, result, src_mat)
from .core import masked_result

_ALL = (cv2.CV_8U, cv2.CV_8S, cv2.CV_16U, cv2.CV_16S, cv2.CV_32S, cv2.CV_32F, cv2.CV_64F)
_FLOATS = (cv2.CV_32F, cv2.CV_64F)
_WIDE = (cv2.CV_32S, cv2.CV_64F)


def _ft(depth):
    return "np.float64" if depth == cv2.CV_64F else "np.float32"


# ------------------------------------------------------------------- sqrt, exp, log, pow

_EXP_MAX = 709.0     # math.exp overflows past ~709.78 (the simulator's Python raises there)


class MathFn(OpDef):
    """static = (kind,) 'sqrt', 'exp', 'log' or 'pow'; dyn (pow) = (power, power is integral)."""
    name = "mathfn"

    def emit(self, ctx, n, y, x):
        (kind,) = n.static
        src = n.inputs[0]
        integer = not is_float(n.depth)
        ft = "np.float64" if kind == "pow" and integer else ("np.float32" if integer else _ft(n.depth))
        out = []
        for v in ctx.read(src, y, x):
            f = ctx.let(f"{ft}({v})", "f")
            if kind == "pow":
                e = self._pow(ctx, n, f, integer)
            else:
                e = {"sqrt": f"math.sqrt({f}) if {f} >= 0 else math.nan",
                     "exp": f"math.exp({f}) if {f} < {_EXP_MAX} else math.inf",
                     "log": f"math.log({f}) if {f} > 0 else (-math.inf if {f} == 0 else math.nan)"}[kind]
            if integer:
                r = ctx.let(f"{ft}({e})", "r")
                out.append(f"0 if {r} != {r} else ({saturate(ctx, r, n.depth)})")
            else:
                out.append(f"{ft}({e})")
        return out

    @staticmethod
    def _pow(ctx, n, f, integer):
        p, p_int = ctx.dyn(n, 0, "f64"), ctx.dyn(n, 1, "i")
        if not integer:
            # guards keep the simulator's Python math (which raises) to OpenCV's IEEE answers
            return (f"(math.inf if {f} == 0 and {p} < 0 else math.pow({f}, {p})) "
                    f"if ({f} >= 0 or {p_int} == 1) else math.nan")
        mag = ctx.let(f"math.pow(abs({f}), {p}) if {f} != 0 or {p} >= 0 else math.inf", "p")
        odd = f"(np.int64({p}) & 1) == 1"
        signed = ctx.let(f"-{mag} if ({f} < 0 and {p_int} == 1 and {odd}) else {mag}", "p")
        hi = DEPTH_RANGE[n.depth][1]
        # CPU OpenCV's table for negative integral powers of integers
        table = (f"({hi} if {f} == 0 else ({signed} if abs({f}) == 1 else "
                 f"((np.float64(1) if {f} > 0 else np.float64(-1)) if (abs({f}) == 2 and {p} == -1) "
                 f"else np.float64(0))))")
        return f"{table} if ({p} < 0 and {p_int} == 1) else {signed}"


def _mathfn(func, kind, src, dst, stream, dyn=()):
    m = src_mat(func, src)
    check_depth(func, m, _ALL)
    nd = node("mathfn", [m._value(func)], (kind,), dyn, m._rows, m._cols, m._depth, m._cn)
    return result(func, nd, dst, stream)


@cuda_api("sqrt")
def sqrt(src, dst=None, stream=None):
    """cv2.cuda.sqrt(src[, dst[, stream]])."""
    return _mathfn("sqrt", "sqrt", src, dst, stream)


@cuda_api("exp")
def exp(src, dst=None, stream=None):
    """cv2.cuda.exp(src[, dst[, stream]])."""
    return _mathfn("exp", "exp", src, dst, stream)


@cuda_api("log")
def log(src, dst=None, stream=None):
    """cv2.cuda.log(src[, dst[, stream]])."""
    return _mathfn("log", "log", src, dst, stream)


@cuda_api("pow")
def pow_(src, power, dst=None, stream=None):
    """cv2.cuda.pow(src, power[, dst[, stream]])."""
    power = float_arg("pow", power, "power", 0.0)
    return _mathfn("pow", "pow", src, dst, stream, (power, int(power == int(power)) if power == power
                                                    and abs(power) != float("inf") else 0))


@cuda_api("abs")
def abs_(src, dst=None, stream=None):
    """cv2.cuda.abs(src[, dst[, stream]]) — |src|, saturated (absdiff with 0)."""
    src_mat("abs", src)
    nd, like = arith_node("abs", "absdiff", src, (0.0, 0.0, 0.0, 0.0))
    return masked_result("abs", nd, like, dst, None, stream)


@cuda_api("sqr")
def sqr(src, dst=None, stream=None):
    """cv2.cuda.sqr(src[, dst[, stream]]) — src * src, saturated."""
    m = src_mat("sqr", src)
    nd, like = arith_node("sqr", "mul", m, m)
    return masked_result("sqr", nd, like, dst, None, stream)


# -------------------------------------------------------------------------------- addWeighted

class AddWeighted(OpDef):
    """static = (wt,) 'f32' or 'f64'; dyn = (alpha, beta, gamma)."""
    name = "add_weighted"

    def emit(self, ctx, n, y, x):
        (wt,) = n.static
        ft = "np.float32" if wt == "f32" else "np.float64"
        al, be, ga = (ctx.dyn(n, k, wt) for k in range(3))
        a, b = ctx.read(n.inputs[0], y, x), ctx.read(n.inputs[1], y, x)
        out = []
        for ac, bc in zip(a, b):
            if wt == "f32":
                inner = ctx.let(ctx.spell("fma_f32", f"{ft}({bc})", be, ga), "w")
                e = ctx.spell("fma_f32", f"{ft}({ac})", al, inner)
            else:
                e = f"{ft}({ac}) * {al} + ({ft}({bc}) * {be} + {ga})"
            out.append(saturate(ctx, e, n.depth))
        return out


@cuda_api("addWeighted")
def addWeighted(src1, alpha, src2, beta, gamma, dst=None, dtype=-1, stream=None):
    """cv2.cuda.addWeighted(src1, alpha, src2, beta, gamma[, dst[, dtype[, stream]]])."""
    func = "addWeighted"
    a, b = src_mat(func, src1, "src1"), src_mat(func, src2, "src2")
    check_same(func, a, b, type_too=False)
    if a._cn != b._cn:
        raise cv_error(func, f"src1 has {a._cn} channels and src2 {b._cn}", StsUnmatchedFormats)
    if a._depth != b._depth and (dtype is None or int(dtype) < 0):
        raise cv_error(func, "src1 and src2 have different depths; pass dtype to choose the output depth",
                       StsUnmatchedFormats)
    out_depth = depth_arg(func, dtype, a._depth)
    wt = "f64" if any(d in _WIDE for d in (a._depth, b._depth, out_depth)) else "f32"
    dyn = tuple(float_arg(func, v, name, 0.0) for v, name in ((alpha, "alpha"), (beta, "beta"), (gamma, "gamma")))
    nd = node("add_weighted", [a._value(func, "src1"), b._value(func, "src2")], (wt,), dyn,
              a._rows, a._cols, out_depth, a._cn)
    return result(func, nd, dst, stream)


# ------------------------------------------------------------------------------------- polar

_TWO_PI = 6.283185307179586
_DEG = 57.29577951308232


class Polar(OpDef):
    """static = (kind,): 'mag', 'mag_sqr', 'phase' (from x, y) or 'x', 'y' (from magnitude,
    angle), the two operands as the channels of one input; dyn = (angle unit,): 1 for radians,
    the degrees <-> radians factor otherwise (an argument: one kernel for both units)."""
    name = "polar"

    def emit(self, ctx, n, y, x):
        (kind,) = n.static
        ft = _ft(n.depth)
        a, b = ctx.read(n.inputs[0], y, x)
        if kind == "mag":
            return [f"math.sqrt({a} * {a} + {b} * {b})"]
        if kind == "mag_sqr":
            return [f"{a} * {a} + {b} * {b}"]
        unit = ctx.dyn(n, 0, "f64" if n.depth == cv2.CV_64F else "f32")
        if kind == "phase":
            t = ctx.let(f"math.atan2({b}, {a})", "a")
            t = ctx.let(f"{t} + {ft}({_TWO_PI}) if {t} < 0 else {t}", "a")
            return [f"{t} * {unit}"]
        rad = ctx.let(f"{b} * {unit}", "a")
        return [f"{a} * math.{'cos' if kind == 'x' else 'sin'}({rad})"]


def _pair(func, first, second, names):
    """The two operands as one 2-channel value (a merge node: both outputs of cartToPolar
    share it, so the planner computes them in one kernel)."""
    a = src_mat(func, first, names[0])
    check_depth(func, a, _FLOATS, names[0])
    if second is None:
        check_channels(func, a, (2,), names[0])
        return a._value(func, names[0]), a
    b = src_mat(func, second, names[1])
    check_channels(func, a, (1,), names[0])
    check_same(func, a, b, names)
    return node("merge", [a._value(func, names[0]), b._value(func, names[1])], (), (),
                a._rows, a._cols, a._depth, 2), a


def _polar(pair, like, kind, degrees):
    unit = 1.0 if not degrees else (_DEG if kind == "phase" else 1 / _DEG)
    return node("polar", [pair], (kind,), (unit,) if kind in ("phase", "x", "y") else (),
                like._rows, like._cols, like._depth, 1)


def _magnitude_api(name, kind):
    @cuda_api(name)
    def f(*args, **kw):
        """cv2.cuda.{name}(xy[, magnitude[, stream]]) or (x, y[, magnitude[, stream]])."""
        args = list(args)
        xy = kw.pop("xy", None)
        x, y = kw.pop("x", None), kw.pop("y", None)
        out, stream = kw.pop("magnitude", None), kw.pop("stream", None)
        if kw:
            raise cv_error(name, f"unexpected arguments {sorted(kw)}", StsBadArg)
        GpuMat = gpumat_cls()
        if xy is None and x is None and args:
            first = args.pop(0)
            if isinstance(first, GpuMat) and first.channels() == 1 and args and isinstance(args[0], GpuMat):
                x, y = first, args.pop(0)
            else:
                xy = first
        for a in args:
            if isinstance(a, GpuMat) and out is None:
                out = a
            elif a is not None and stream is None and not isinstance(a, GpuMat):
                stream = a
            elif a is not None:
                raise cv_error(name, f"unexpected argument {a!r}", StsBadArg)
        pair, like = _pair(name, xy, None, ("xy",)) if xy is not None else _pair(name, x, y, ("x", "y"))
        return result(name, _polar(pair, like, kind, False), out, stream)
    return f


magnitude = _magnitude_api("magnitude", "mag")
magnitudeSqr = _magnitude_api("magnitudeSqr", "mag_sqr")


@cuda_api("phase")
def phase(x, y, angle=None, angleInDegrees=False, stream=None):
    """cv2.cuda.phase(x, y[, angle[, angleInDegrees[, stream]]])."""
    pair, like = _pair("phase", x, y, ("x", "y"))
    return result("phase", _polar(pair, like, "phase", angleInDegrees), angle, stream)


@cuda_api("cartToPolar")
def cartToPolar(x, y, magnitude=None, angle=None, angleInDegrees=False, stream=None):
    """cv2.cuda.cartToPolar(x, y[, magnitude[, angle[, angleInDegrees[, stream]]]]) -> (magnitude, angle);
    both come out of one kernel."""
    func = "cartToPolar"
    pair, like = _pair(func, x, y, ("x", "y"))
    mag = result(func, _polar(pair, like, "mag", False), magnitude, stream)
    return mag, result(func, _polar(pair, like, "phase", angleInDegrees), angle, stream)


@cuda_api("polarToCart")
def polarToCart(magnitude, angle, x=None, y=None, angleInDegrees=False, stream=None):
    """cv2.cuda.polarToCart(magnitude, angle[, x[, y[, angleInDegrees[, stream]]]]) -> (x, y)."""
    func = "polarToCart"
    pair, like = _pair(func, magnitude, angle, ("magnitude", "angle"))
    xs = result(func, _polar(pair, like, "x", angleInDegrees), x, stream)
    return xs, result(func, _polar(pair, like, "y", angleInDegrees), y, stream)
