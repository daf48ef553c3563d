"""Helpers every op family uses to turn a cv2.cuda call into a recorded node."""
import numbers

import numpy as np

from .. import recipes, runtime, streams
from .._types import DEPTH_DTYPE, DEPTH_NAME, MAX_CHANNELS, split_type, type_name
from ..errors import (StsBadArg, StsOutOfRange, StsUnmatchedFormats, StsUnmatchedSizes, StsUnsupportedFormat,
                      binding_error, binding_problem, cv_error)
from ..ir import Node
from .base import REGISTRY
from ..runtime import STATE

API = {}          # cv2.cuda name -> function, patched in by lazycv.enable()


def cuda_api(name):
    """Register ``fn`` as ``cv2.cuda.<name>``; calls run under the runtime lock, through the
    call's recipe when its signature has one (lazycv/recipes.py). Arguments the
    function cannot take (an unknown keyword, too many positionals, a missing one) and numbers
    no integer can hold (``fx=inf``) are a cv2.error, as OpenCV's binding reports them."""
    def deco(fn):
        def run(args, kw, answer):
            """The call (the runtime lock held): ``answer`` is what the C replay said — RUN:
            the function runs; MISS: recipes' Python path decides; None: recipes.call, its C
            replay included."""
            kw = kw or {}                    # (the C wrapper passes None for no keywords)
            try:
                return recipes.answered(fn, args, kw, _GPUMAT or gpumat_cls(), answer)
            except TypeError:                # (no cost on the way that raises nothing)
                problem = binding_problem(fn, args, kw)     # (errors.py: methods share it)
                if problem is None:
                    raise
                raise binding_error(name, problem) from None
            except OverflowError as e:
                raise cv_error(name, f"an argument is out of range: {e}", StsOutOfRange) from None

        if recipes.API_TYPE is not None:     # the lock, the replay and the answer in C
            wrapper = recipes.API_TYPE(fn, run, STATE.lock)
        else:
            def wrapper(*args, **kw):
                with STATE.lock:
                    return run(args, kw, None)
        wrapper.__name__ = name
        wrapper.__qualname__ = name
        wrapper.__module__ = fn.__module__
        wrapper.__doc__ = fn.__doc__
        wrapper.__wrapped__ = fn
        API[name] = wrapper
        return wrapper
    return deco


_GPUMAT = None


def gpumat_cls():
    """lazycv's GpuMat class (imported on first use: the façade imports this module)."""
    global _GPUMAT
    if _GPUMAT is None:
        from ..facade.gpumat import GpuMat
        _GPUMAT = GpuMat
    return _GPUMAT


def src_mat(func, m, name="src"):
    """Validate a GpuMat input (not empty, a lazycv GpuMat)."""
    GpuMat = _GPUMAT or gpumat_cls()
    if not isinstance(m, GpuMat):
        from ..facade.interop import adopt_native
        m2 = adopt_native(m)
        if m2 is None:
            what = "numpy.ndarray (upload it to a GpuMat first)" if isinstance(m, np.ndarray) else type(m).__name__
            raise cv_error(func, f"{name} must be a cv2.cuda.GpuMat, got {what}", StsBadArg)
        m = m2
    if m._rows == 0 or m._cols == 0:        # (m.empty(), without its binding wrapper: every input)
        raise cv_error(func, f"{name} is empty (!{name}.empty())", StsBadArg)
    return m


def check_depth(func, m, allowed, name="src"):
    if m._depth not in allowed:
        names = "/".join(DEPTH_NAME[d] for d in sorted(allowed))
        raise cv_error(func, f"unsupported depth of {name}: expected {names}, got {DEPTH_NAME[m._depth]}",
                       StsUnsupportedFormat)


def check_channels(func, m, allowed, name="src"):
    if m._cn not in allowed:
        raise cv_error(func, f"unsupported number of channels of {name}: expected "
                             f"{' or '.join(map(str, sorted(allowed)))}, got {m._cn}", StsUnsupportedFormat)


def check_same(func, a, b, names=("src1", "src2"), type_too=True):
    if (a._rows, a._cols) != (b._rows, b._cols):
        raise cv_error(func, f"sizes of {names[0]} ({a._cols}x{a._rows}) and {names[1]} "
                             f"({b._cols}x{b._rows}) differ", StsUnmatchedSizes)
    if type_too and (a._depth, a._cn) != (b._depth, b._cn):
        raise cv_error(func, f"types of {names[0]} ({type_name(a.type())}) and {names[1]} "
                             f"({type_name(b.type())}) differ", StsUnmatchedFormats)


def stream_cls():
    global _STREAM
    if _STREAM is None:
        from ..facade.stream import Stream
        _STREAM = Stream
    return _STREAM


_STREAM = None


def check_stream(func, stream):
    """Validate a ``stream`` argument; a stream of other code is ordered against lazycv's
    launches (runtime.foreign_stream_call)."""
    if stream is not None:
        if not isinstance(stream, stream_cls()):
            raise cv_error(func, f"stream must be a cv2.cuda.Stream, got {type(stream).__name__}", StsBadArg)
        if stream._foreign is not None:
            runtime.foreign_stream_call(stream)


def check_dst(func, dst):
    if dst is not None and not isinstance(dst, gpumat_cls()):
        raise cv_error(func, f"dst must be a cv2.cuda.GpuMat, got {type(dst).__name__}", StsBadArg)


def int_arg(func, v, name):
    """An integer argument as OpenCV's binding parses one: a float with a fraction, a bool or
    anything else is an error naming the argument (an integral float is taken)."""
    if type(v) is int:                   # (the common case first: resize's is per call)
        return v
    if isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, (numbers.Real, np.floating)) and not isinstance(v, bool) and float(v).is_integer():
        return int(v)
    raise cv_error(func, f"argument '{name}' is required to be an integer, got {v!r}", StsBadArg)


def float_arg(func, v, name, default):
    """A double argument as OpenCV's binding parses one: None is its default; a number (not a
    bool) is taken; anything else is an error naming the argument."""
    if v is None:
        return default
    if isinstance(v, (numbers.Real, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    raise cv_error(func, f"argument '{name}' is required to be a number, got {v!r}", StsBadArg)


def size_arg(func, v, name="dsize"):
    """A (width, height) argument: a sequence of two integers (OpenCV's Size)."""
    if type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        return v                         # (the common case, per call: no checks beyond these)
    try:
        n = len(v)
    except TypeError:
        n = None
    if n != 2:
        raise cv_error(func, f"{name} must be (width, height), got {v!r}", StsBadArg)
    return int_arg(func, v[0], name + "[0]"), int_arg(func, v[1], name + "[1]")


def depth_arg(func, dtype, default):
    """OpenCV's ``dtype``/``rtype`` argument: -1 keeps ``default``; a full type code gives its depth."""
    if dtype is None or int(dtype) < 0:
        return default
    dc = split_type(int(dtype))
    if dc is None:
        raise cv_error(func, f"unsupported dtype {dtype}", StsUnsupportedFormat)
    return dc[0]


def scalar4(func, s, name="scalar", broadcast=False):
    """A cv::Scalar from a number or a sequence of up to 4 numbers (missing entries are 0).

    OpenCV's bindings differ by parameter kind: a bare number given where an InputArray is
    expected (``cv2.add(img, 5.0)``) applies to every channel (``broadcast``); given where a
    Scalar is expected (``setTo(5)``) it is ``(5, 0, 0, 0)``. A tuple is always per channel.
    """
    t = type(s)
    if t is tuple and 1 <= len(s) <= 4 and _PLAIN_NUMBERS.issuperset(map(type, s)):
        return tuple(map(float, s)) + (0.0,) * (4 - len(s))      # the common case, fast
    if isinstance(s, numbers.Number) and not isinstance(s, bool):
        return (float(s),) * 4 if broadcast else (float(s), 0.0, 0.0, 0.0)
    if isinstance(s, np.ndarray):
        if s.size == 1 and broadcast:
            return (float(s.ravel()[0]),) * 4
        s = s.ravel().tolist()
    try:
        vals = [float(v) for v in s]
    except Exception:
        raise cv_error(func, f"{name} must be a number or a tuple of up to 4 numbers, got {s!r}", StsBadArg)
    if not 1 <= len(vals) <= 4:
        raise cv_error(func, f"{name} must have 1 to 4 values, got {len(vals)}", StsBadArg)
    return tuple(vals + [0.0] * (4 - len(vals)))


_PLAIN_NUMBERS = frozenset((float, int))     # (not bool: True is no scalar here)
_TUPLE_SCALARS = {}     # a plain tuple -> its broadcast scalar4 (a loop passes one mean each frame)


def known_tuple_scalar(s):
    """The broadcast cv::Scalar of a tuple seen before (:func:`broadcast_scalar`), else None."""
    if type(s) is tuple:
        try:
            return _TUPLE_SCALARS.get(s)
        except TypeError:                    # an unhashable element: the caller reports it
            return None
    return None


def broadcast_scalar(func, s, name):
    """``scalar4(func, s, name, broadcast=True)``, remembered for tuples of plain numbers
    without a zero (``0.0 == -0.0``: a remembered ``(0.0,)`` would answer for ``(-0.0,)``)."""
    got = scalar4(func, s, name, broadcast=True)
    if type(s) is tuple and len(_TUPLE_SCALARS) < 256 and _PLAIN_NUMBERS.issuperset(map(type, s)) \
            and 0 not in s:
        _TUPLE_SCALARS[s] = got
    return got


def is_scalar_like(x):
    t = type(x)
    if t is float or t is int:
        return True
    GpuMat = _GPUMAT or gpumat_cls()
    if t is GpuMat or isinstance(x, GpuMat):
        return False
    if t is tuple and 1 <= len(x) <= 4 and _PLAIN_NUMBERS.issuperset(map(type, x)):
        return True
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return True
    if isinstance(x, (tuple, list)) and 1 <= len(x) <= 4 and all(isinstance(v, numbers.Number) for v in x):
        return True
    if isinstance(x, np.ndarray) and x.size <= 4 and x.dtype.kind in "iuf":
        return True
    return False


def node(op_name, inputs, static, dyn, rows, cols, depth, cn):
    # (the C twin of Node where recipes.bind() has bound it: a call recipes do not replay — a
    # first sighting, a crop of a new size — builds its nodes as fast as a replay does)
    return (recipes._node or Node)(REGISTRY[op_name], tuple(inputs), static, dyn, rows, cols, depth, cn)


def result(func, nd, dst=None, stream=None):
    """Hand a new node to the user: a new lazy GpuMat, or ``dst`` made to hold it."""
    if dst is None:
        if stream is not None:
            check_stream(func, stream)
        cls = _GPUMAT or gpumat_cls()
        out = recipes._lazy(cls, nd) if recipes._lazy is not None else cls._lazy(nd)
    else:
        check_dst(func, dst)
        check_stream(func, stream)
        out = dst._assign_result(nd)
    # the stream its launch goes on (lazycv/streams.py); a call naming none takes on_stream's
    out._stream = stream if stream is not None else streams.RECORD_ON
    if STATE.any_shared:
        runtime.read_shared_now(out)
    return out


def dtype_of(depth):
    return DEPTH_DTYPE[depth]


__all__ = ["API", "cuda_api", "src_mat", "int_arg", "float_arg", "size_arg", "check_depth", "check_channels",
           "check_same", "check_stream", "depth_arg", "scalar4", "is_scalar_like", "node", "result", "MAX_CHANNELS"]
