"""Layer 3: write your own ops in Python; they fuse with the built-in ones on every backend.

Two kinds, both plain Python functions compiled as device functions of the active backend
(``numba.njit`` on the CPU, ``numba.cuda.jit(device=True)`` on CUDA and the simulator):

* ``@lazycv.op(...)`` — a per-pixel op. The function gets one scalar per input channel (all
  channels of input 1, then of input 2, ...) followed by the scalar parameters, and returns one
  scalar or a tuple with one value per output channel::

      @lazycv.op(out_depth=cv2.CV_32F)
      def luma(b, g, r, gain):
          return gain * (0.114 * b + 0.587 * g + 0.299 * r)

      y = luma(gpumat, 1.5)            # a lazy GpuMat, CV_32FC1

  ``per_channel=True`` applies the function to each channel separately (``f(a, b, *params)``
  for two inputs): the output has the inputs' channel count.

* ``@lazycv.gather_op(...)`` — an op that reads other coordinates of its (single) input, like a
  custom warp. It is a *coordinate function* ``coords(y, x, h, w, *params)`` (``h, w``: the
  input's size) returning ``(sy, sx)`` or ``(sy, sx, *extra)``. lazycv reads the input at every
  ``footprint`` offset ``(sy + dy, sx + dx)`` (clamped to the input, or outside = a constant
  with ``border="constant"``) and passes the fetched pixels to an optional per-pixel function
  ``pixel(*tap0_channels, *tap1_channels, ..., *extra[, *params])`` (the parameters too when it
  takes them); without ``pixel`` the output is the single fetched pixel.

Inputs arrive typed by their depth: integer depths as ints (int64), CV_32F as float32, CV_64F as
float64. The returned values are stored with OpenCV's ``saturate_cast`` to the declared output
depth (floats round half to even, then clamp; ints clamp). Parameters are kernel arguments
(a new value never recompiles); their type is ``param_types`` when declared, else taken from
the value (int -> int64, float -> float64, ``np.float32`` -> float32).

Definitions are validated when declared (arity, channels, depths, footprint) and at the first
call with a given input type (the function is type-checked by Numba); every error is a
``cv2.error`` naming the op. The compiled kernel's identity includes a fingerprint of the
function's code, constants, defaults, closure and referenced globals, so two different functions
never share a kernel, and an edited function never reuses a stale cached one.
"""
import functools
import hashlib
import inspect
import numbers
import re
import sys
import types as _pytypes

import cv2
import numpy as np

from ._types import DEPTH_DTYPE, DEPTH_NAME, DEPTH_RANGE, DTYPE_DEPTH, MAX_CHANNELS, is_float, split_type
from .errors import StsBadArg, StsOutOfRange, StsUnmatchedSizes, StsUnsupportedFormat, cv_error
from .ir import Node
from .ops.base import REGISTRY, OpDef, saturate
from .ops.common import check_same, result, src_mat
from .runtime import STATE

__all__ = ["op", "gather_op", "UserOp"]

_KINDS = {"i": "i", "int": "i", "int64": "i", "f32": "f32", "float32": "f32", "f64": "f64",
          "float": "f64", "float64": "f64", "double": "f64"}
_KIND_OF_TYPE = {int: "i", float: "f64", np.int64: "i", np.int32: "i", np.float32: "f32",
                 np.float64: "f64", bool: "i"}


# ---------------------------------------------------------------- fingerprints

_SIMPLE = (int, float, complex, str, bytes, bool, type(None), np.generic)


def _value_fp(v, seen):
    if isinstance(v, _SIMPLE):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, (tuple, list, frozenset)) and all(isinstance(e, _SIMPLE) for e in v):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, _pytypes.ModuleType):
        return "module:" + v.__name__
    if isinstance(v, _pytypes.FunctionType):
        return "fn:" + _function_fp(v, seen)
    py = getattr(v, "py_func", None)                   # numba dispatchers
    if isinstance(py, _pytypes.FunctionType):
        return "jit:" + _function_fp(py, seen)
    if isinstance(v, (type, _pytypes.BuiltinFunctionType, np.ufunc)):
        qual = getattr(v, "__qualname__", None) or getattr(v, "__name__", "")
        return f"callable:{getattr(v, '__module__', '')}.{qual}"
    if isinstance(v, np.ndarray):
        return f"array:{v.dtype}:{v.shape}:{hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest()}"
    return f"object:{type(v).__qualname__}:{id(v)}"   # unknown: never shared across processes


def _code_fp(code, out):
    out += [code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_argcount]
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _code_fp(c, out)
        else:
            out.append(f"{type(c).__name__}:{c!r}")


def _global_names(code, names):
    names.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _global_names(c, names)
    return names


def _function_fp(fn, seen=None):
    """A hash of everything that decides what ``fn`` computes."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return "recursive:" + fn.__qualname__
    seen.add(id(fn))
    parts = []
    _code_fp(fn.__code__, parts)
    parts.append(repr(fn.__defaults__))
    for cell in fn.__closure__ or ():
        try:
            parts.append(_value_fp(cell.cell_contents, seen))
        except ValueError:                              # an empty cell
            parts.append("empty-cell")
    g = fn.__globals__
    names = sorted(_global_names(fn.__code__, set()))
    for name in names:
        if name in g:
            v = g[name]
            parts.append(f"{name}={_value_fp(v, seen)}")
            if isinstance(v, _pytypes.ModuleType) and not _is_library(v):
                # what the function may read through the module (cfg.GAIN, helpers.bump):
                # co_names holds attribute names too
                parts += [f"{name}.{a}={_value_fp(getattr(v, a), seen)}" for a in names if hasattr(v, a)]
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:20]


def _is_library(module):
    """numpy, math, numba and the like: installed code, not the user's (their attributes are
    looked at by name only)."""
    root = module.__name__.partition(".")[0]
    return root in ("numpy", "math", "cmath", "numba", "cv2", "lazycv", "builtins") or \
        root in getattr(sys, "stdlib_module_names", ())


# ---------------------------------------------------------------- argument checking

def _func(name):
    return f"lazycv::{name}"


def _depth_of(name, what, d):
    """A depth from cv2.CV_* (or a type code, whose channels are returned too) or a numpy dtype."""
    if d is None:
        return None, None
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        d = int(d)
        if d in DEPTH_DTYPE:
            return d, None
        dc = split_type(d)
        if dc is not None:
            return dc
    else:
        try:
            dt = np.dtype(d)
        except Exception:
            dt = None
        if dt is not None and dt in DTYPE_DEPTH:
            return DTYPE_DEPTH[dt], None
    raise cv_error(_func(name), f"op '{name}': {what} must be a depth (cv2.CV_8U ... cv2.CV_64F) or a "
                                f"numpy dtype (uint8, int8, uint16, int16, int32, float32, float64), got {d!r}",
                   StsUnsupportedFormat)


def _channels_arg(name, what, v):
    if v is None:
        return None
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 1 <= int(v) <= MAX_CHANNELS:
        raise cv_error(_func(name), f"op '{name}': {what} must be 1..{MAX_CHANNELS}, got {v!r}", StsBadArg)
    return int(v)


def _kinds_arg(name, param_types):
    if param_types is None:
        return None
    if isinstance(param_types, (str, type)):
        param_types = (param_types,)
    out = []
    for t in param_types:
        k = _KINDS.get(t) if isinstance(t, str) else _KIND_OF_TYPE.get(t)
        if k is None:
            raise cv_error(_func(name), f"op '{name}': param_types entries must be int, float, np.float32 "
                                        f"or 'i'/'f32'/'f64', got {t!r}", StsBadArg)
        out.append(k)
    return tuple(out)


def _positional(name, fn, role):
    """The positional parameters of ``fn`` (a plain function), or a clear error."""
    py = getattr(fn, "py_func", fn)                    # accept a numba.njit function too
    if not isinstance(py, _pytypes.FunctionType):
        raise cv_error(_func(name), f"op '{name}': {role} must be a Python function (def or lambda), "
                                    f"got {type(fn).__name__}", StsBadArg)
    params = list(inspect.signature(py).parameters.values())
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise cv_error(_func(name), f"op '{name}': {role} {py.__name__}() must take plain positional "
                                        f"arguments only (no *args, **kwargs or keyword-only '{p.name}')",
                           StsBadArg)
    return py, params


def _kind_of_value(name, v, i):
    if isinstance(v, (bool, np.bool_)) or isinstance(v, numbers.Integral):
        return "i"
    if isinstance(v, np.float32):
        return "f32"
    if isinstance(v, numbers.Real):
        return "f64"
    raise cv_error(_func(name), f"op '{name}': parameter {i} must be a number, got {type(v).__name__}", StsBadArg)


def _check_int_param(name, v, i):
    """An integer parameter is an int64 kernel argument: a fraction or a value past int64's
    range is an error at the call (not a truncation, nor an overflow at some later flush)."""
    if isinstance(v, (numbers.Real, np.floating)) and not isinstance(v, numbers.Integral) and \
            not float(v).is_integer():
        raise cv_error(_func(name), f"op '{name}': parameter {i} is an integer parameter, got {v!r}", StsBadArg)
    if not -2 ** 63 <= int(v) < 2 ** 63:
        raise cv_error(_func(name), f"op '{name}': parameter {i} = {v} does not fit a 64-bit integer",
                       StsOutOfRange)


def _value_type(depth):
    from numba import types
    if depth == cv2.CV_32F:
        return types.float32
    if depth == cv2.CV_64F:
        return types.float64
    return types.int64


def _kind_type(kind):
    from numba import types
    return {"i": types.int64, "f32": types.float32, "f64": types.float64}[kind]


def _return_type(fn, argtypes):
    """Numba's return type of ``fn`` for ``argtypes`` (type inference only when the internal API
    allows it — milliseconds — else a full compile)."""
    try:
        from numba.core.compiler import run_frontend
        from numba.core.registry import cpu_target
        from numba.core.typed_passes import type_inference_stage
    except ImportError:                                # pragma: no cover - other numba versions
        run_frontend = None
    if run_frontend is not None:
        from numba.core.errors import NumbaError
        try:
            tctx, cctx = cpu_target.typing_context, cpu_target.target_context
            tctx.refresh()                             # what a compile does first: load every typing
            cctx.refresh()
            interp = run_frontend(fn)
            return type_inference_stage(tctx, cctx, interp, tuple(argtypes), None).return_type
        except NumbaError:
            raise
        except Exception:                              # pragma: no cover - internal API changed
            pass
    from numba import njit
    d = njit(fn)
    d.compile(tuple(argtypes))
    return d.nopython_signatures[-1].return_type


def _scalar_kind(t):
    """'i' (integer), 'b' (bool) or 'f' (float) for a Numba scalar type, None for anything else."""
    from numba import types
    if isinstance(t, types.Boolean):
        return "b"
    if isinstance(t, types.Integer):
        return "i"
    if isinstance(t, types.Float):
        return "f"
    return None


def _infer(name, fn, role, argtypes):
    """Type-check ``fn`` for ``argtypes``: the kinds of the values it returns (a list), whether
    it returned a tuple, and Numba's return type."""
    from numba.core.errors import NumbaError
    try:
        rt = _return_type(fn, argtypes)
    except NumbaError as e:
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).strip() for ln in str(e).splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith(("During:", "Failed in", "File ", "^"))]
        why = "; ".join(lines[:3])
        sig = ", ".join(str(t) for t in argtypes)
        raise cv_error(_func(name), f"op '{name}': {role} {fn.__name__}({sig}) does not compile as a "
                                    f"device function: {why}", StsBadArg) from None
    from numba import types
    if isinstance(rt, types.BaseTuple):
        kinds = [_scalar_kind(t) for t in rt.types]
        tup = True
    else:
        kinds = [_scalar_kind(rt)]
        tup = False
    if None in kinds or not kinds:
        raise cv_error(_func(name), f"op '{name}': {role} {fn.__name__}() must return a number or a tuple of "
                                    f"numbers, it returns {rt}", StsBadArg)
    return kinds, tup, rt


def _store(ctx, expr, kind, depth):
    """``expr`` stored to ``depth`` as OpenCV's saturate_cast does (a bool counts as 0 or 1)."""
    if kind == "b":
        expr = f"int({expr})"
    if is_float(depth):
        return expr
    return saturate(ctx, expr, depth, src_is_float=(kind == "f"))


def _as_loaded(ctx, expr, depth):
    """An integer input value as the function sees it when its input is read from memory (the
    backend's integer load: int32 on the CPU and GPU). A fused producer's value may be of
    another type — an integer saturated to the depth's minimum is an int64 literal — and a
    user function's arithmetic depends on it (``-a`` of INT_MIN): the long fuzz run found a
    fused != eager that way."""
    return expr if is_float(depth) else ctx.spell("int_load", expr)


def _ident(name):
    return re.sub(r"\W", "_", name)


# ---------------------------------------------------------------- the op definitions


def _check_out_channels(func, name, fname, cn, declared):
    """The channel count a function returns must fit an image and match the declaration."""
    if cn > MAX_CHANNELS:
        raise cv_error(func, f"op '{name}': {fname}() returns {cn} values; an image has at most "
                             f"{MAX_CHANNELS} channels", StsBadArg)
    if declared is not None and cn != declared:
        raise cv_error(func, f"op '{name}' declares out_channels={declared} but {fname}() returns "
                             f"{cn} value(s)", StsBadArg)

class _UserOpDef(OpDef):
    """Base of every user op: ``static[0]`` is the op's key (function fingerprints + options),
    so the compiled kernel's identity changes whenever the definition does."""
    name = None
    user_name = None

    def label(self, node):
        return self.user_name


class _ElementOpDef(_UserOpDef):
    """static = (key, param kinds, result kinds, returns tuple); dyn = params."""
    taps = 1
    pointwise = True

    def emit(self, ctx, n, y, x):
        key, kinds, rkinds, tup = n.static
        f = ctx.use_function(self.fname, self.fn, _function_fp(self.fn))    # as it is now
        params = [ctx.dyn(n, k, kind) for k, kind in enumerate(kinds)]
        chans = [[_as_loaded(ctx, c, v.depth) for c in ctx.read(v, y, x)] for v in n.inputs]
        if self.per_channel:
            outs = []
            for c in range(n.cn):
                args = [ch[c] for ch in chans] + params
                r = ctx.let(f"{f}({', '.join(args)})", "u")
                outs.append(f"{r}[0]" if tup else r)
            return [_store(ctx, o, rkinds[0], n.depth) for o in outs]
        args = [v for ch in chans for v in ch] + params
        r = ctx.let(f"{f}({', '.join(args)})", "u")
        outs = [f"{r}[{c}]" for c in range(n.cn)] if tup else [r]
        return [_store(ctx, o, k, n.depth) for o, k in zip(outs, rkinds)]


class _GatherOpDef(_UserOpDef):
    """static = (key, param kinds, (float sy, float sx), extras, pixel result kinds, pixel
    returns tuple, pixel takes the parameters); dyn = (src rows, src cols, *params)."""
    pointwise = False

    def tap_count(self, node):
        return len(self.footprint)

    def emit(self, ctx, n, y, x):
        key, kinds, fcoord, n_extra, rkinds, tup, pass_params = n.static
        src = n.inputs[0]
        sh, sw = ctx.dyn(n, 0, "i"), ctx.dyn(n, 1, "i")
        params = [ctx.dyn(n, 2 + k, kind) for k, kind in enumerate(kinds)]
        cf = ctx.use_function(self.cname, self.coords, _function_fp(self.coords))
        c = ctx.let(f"{cf}({', '.join([y, x, sh, sw] + params)})", "g")
        # int() also where Numba's CPU typing says int: on CUDA math.floor returns a float
        sy, sx = (ctx.let(f"int(math.floor({c}[{i}]))" if fl else f"int({c}[{i}])", "y" if i == 0 else "x")
                  for i, fl in enumerate(fcoord))
        extra = [ctx.let(f"{c}[{2 + i}]", "e") for i in range(n_extra)]
        constant = self.border == "constant"
        if constant:
            bv = self.border_value
            fill = f"np.float32({float(bv)!r})" if src.depth == cv2.CV_32F else \
                f"np.float64({float(bv)!r})" if src.depth == cv2.CV_64F else \
                repr(min(max(int(round(bv)), DEPTH_RANGE[src.depth][0]), DEPTH_RANGE[src.depth][1]))
        taps = []
        for dy, dx in self.footprint:
            ty = ctx.let(f"{sy} + {dy}", "y") if dy else sy
            tx = ctx.let(f"{sx} + {dx}", "x") if dx else sx
            cy = ctx.let(f"min(max({ty}, 0), {sh} - 1)", "y")
            cx = ctx.let(f"min(max({tx}, 0), {sw} - 1)", "x")
            vals = ctx.read(src, cy, cx)
            if constant:
                inside = ctx.let(f"({ty} >= 0 and {ty} < {sh} and {tx} >= 0 and {tx} < {sw})", "b")
                vals = [ctx.let(f"{v} if {inside} else {fill}", "v") for v in vals]
            taps.append(vals)
        if self.pixel is None:
            return list(taps[0])
        pf = ctx.use_function(self.pname, self.pixel, _function_fp(self.pixel))
        args = [v for t in taps for v in t] + extra + (params if pass_params else [])
        r = ctx.let(f"{pf}({', '.join(args)})", "u")
        outs = [f"{r}[{c}]" for c in range(n.cn)] if tup else [r]
        return [_store(ctx, o, k, n.depth) for o, k in zip(outs, rkinds)]


_CANON = {}        # (kernel-global name) -> function: one object per fingerprint


def _canonical(gname, fn):
    return _CANON.setdefault(gname, fn)


def _make_opdef(base, name, key, attrs):
    """A new OpDef subclass (registered as ``op:<name>``) and its instance."""
    cls = type(f"UserOp_{_ident(name)}", (base,), dict(attrs, name=f"op:{name}", user_name=name, key=key))
    return REGISTRY[cls.name]


# ---------------------------------------------------------------- the callable op objects

class UserOp:
    """A user-defined op: call it on GpuMats like a cv2.cuda function (``dst=`` and ``stream=``
    keywords as usual); the result is a lazy GpuMat that fuses with everything around it."""

    def __init__(self, opdef, fn, n_params, defaults, param_kinds, kind):
        self.opdef, self.fn, self.kind = opdef, fn, kind
        self.name = opdef.user_name
        self._n_params, self._defaults, self._param_kinds = n_params, defaults, param_kinds
        self._types = {}
        self._arg_names = None       # fn's parameter names, for parameters given by name
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<lazycv {self.kind} {self.name!r}>"

    def step(self, *params, **kw):
        """This op as a step of ``lazycv.compose(...)`` with fixed parameters."""
        from .compose import Call
        return Call(self, params, kw, label=self.name)

    # ---- shared helpers
    def _params(self, values, n_params, why="", by_name=None):
        """The parameter values, with defaults filled in, and their kinds. ``why`` explains where
        ``n_params`` comes from, for the error message; ``by_name``: parameters given as
        keywords, by the function's own parameter names."""
        name = self.name
        if by_name:
            values = self._place_keywords(values, n_params, by_name)
        missing = n_params - len(values)
        if missing < 0 or missing > len(self._defaults):
            raise cv_error(_func(name), f"op '{name}' takes {n_params} parameter(s) after its image input(s)"
                                        f"{why}, got {len(values)}", StsBadArg)
        if missing:
            values = tuple(values) + tuple(self._defaults[len(self._defaults) - missing:])
        kinds = []
        for i, v in enumerate(values):
            k = _kind_of_value(name, v, i)
            if self._param_kinds is not None:
                k = self._param_kinds[i]
            if k == "i":
                _check_int_param(name, v, i)
            kinds.append(k)
        return tuple(values), tuple(kinds)

    def _place_keywords(self, values, n_params, by_name):
        """Positional values followed by the keyword ones, in the function's parameter order
        (the function's last ``n_params`` parameters are the op's parameters), defaults
        filling what neither gives."""
        func = _func(self.name)
        every = self._arg_names
        if every is None:                    # (once per op: inspect.signature costs ~10 µs)
            every = self._arg_names = list(inspect.signature(self.fn).parameters)
        names = every[len(every) - n_params:] if n_params else []
        unknown = sorted(set(by_name) - set(names))
        if unknown:
            raise cv_error(func, f"op '{self.name}' has no parameter {', '.join(map(repr, unknown))} "
                                 f"(its parameters: {', '.join(names) or 'none'})", StsBadArg)
        twice = sorted(n for n in by_name if names.index(n) < len(values))
        if twice:
            raise cv_error(func, f"op '{self.name}': parameter {', '.join(map(repr, twice))} given twice",
                           StsBadArg)
        values = list(values)
        first_default = n_params - len(self._defaults)
        for k in range(len(values), n_params):
            if names[k] in by_name:
                values.append(by_name[names[k]])
            elif k >= first_default:
                values.append(self._defaults[k - first_default])
            else:
                raise cv_error(func, f"op '{self.name}': parameter {names[k]!r} is missing", StsBadArg)
        return tuple(values)

    def _split_args(self, args, n_inputs):
        if len(args) < n_inputs:
            raise cv_error(_func(self.name), f"op '{self.name}' takes {n_inputs} image input(s), "
                                             f"got {len(args)} argument(s)", StsBadArg)
        names = ["src"] if n_inputs == 1 else [f"src{i + 1}" for i in range(n_inputs)]
        mats = [src_mat(_func(self.name), a, nm) for a, nm in zip(args[:n_inputs], names)]
        return mats, names, args[n_inputs:]

    def _check_depths(self, mats, names):
        if self._in_depths is None:
            return
        for m, nm in zip(mats, names):
            if m._depth not in self._in_depths:
                want = "/".join(DEPTH_NAME[d] for d in sorted(self._in_depths))
                raise cv_error(_func(self.name), f"op '{self.name}': unsupported depth of {nm}: expected "
                                                 f"{want}, got {DEPTH_NAME[m._depth]}", StsUnsupportedFormat)


class ElementOp(UserOp):
    def __init__(self, opdef, fn, n_args, inputs, in_channels, per_channel, out_depth, out_channels,
                 param_kinds, in_depths, defaults):
        super().__init__(opdef, fn, None, defaults, param_kinds, "op")
        self._n_args, self._inputs, self._in_channels = n_args, inputs, in_channels
        self._per_channel, self._out_depth, self._out_channels = per_channel, out_depth, out_channels
        self._in_depths = in_depths

    def __call__(self, *args, dst=None, stream=None, **params):
        with STATE.lock:
            return self._call(args, dst, stream, params)

    def _call(self, args, dst, stream, by_name=None):
        name, func = self.name, _func(self.name)
        mats, names, values = self._split_args(args, self._inputs)
        for m, nm in zip(mats[1:], names[1:]):
            check_same(func, mats[0], m, (names[0], nm), type_too=False)
        if self._in_channels is not None:
            for m, nm, want in zip(mats, names, self._in_channels):
                if m._cn != want:
                    raise cv_error(func, f"op '{name}': {nm} must have {want} channel(s), got {m._cn}",
                                   StsUnsupportedFormat)
        self._check_depths(mats, names)
        if self._per_channel:
            cn = mats[0]._cn
            for m, nm in zip(mats[1:], names[1:]):
                if m._cn != cn:
                    raise cv_error(func, f"op '{name}': per-channel inputs must have the same channel count "
                                         f"({names[0]}: {cn}, {nm}: {m._cn})", StsUnsupportedFormat)
            n_params = self._n_args - len(mats)
        else:
            total = sum(m._cn for m in mats)
            n_params = self._n_args - total
            if n_params < 0:
                raise cv_error(func, f"op '{name}': {self.fn.__name__}() takes {self._n_args} argument(s), but its "
                                     f"input(s) have {total} channel(s) (one argument per input channel, "
                                     f"then the parameters)", StsBadArg)
        if self._per_channel:
            why = f" ({self.fn.__name__}() takes {self._n_args} argument(s): one per image input, then the parameters)"
        else:
            why = f" ({self.fn.__name__}() takes {self._n_args} argument(s) and its input(s) have " \
                  f"{sum(m._cn for m in mats)} channel(s), one argument each)"
        values, kinds = self._params(values, n_params, why, by_name)
        in_types = tuple((m._depth, m._cn) for m in mats)
        tkey = (in_types, kinds)
        info = self._types.get(tkey)
        if info is None:
            if self._per_channel:
                argtypes = [_value_type(m._depth) for m in mats]
            else:
                argtypes = [_value_type(m._depth) for m in mats for _ in range(m._cn)]
            argtypes += [_kind_type(k) for k in kinds]
            rkinds, tup, _ = _infer(name, self.fn, "the function", argtypes)
            if self._per_channel:
                if len(rkinds) != 1:
                    raise cv_error(func, f"op '{name}': a per_channel function returns one value, "
                                         f"{self.fn.__name__}() returns {len(rkinds)}", StsBadArg)
                cn = mats[0]._cn
            else:
                cn = len(rkinds)
                _check_out_channels(func, name, self.fn.__name__, cn, self._out_channels)
            info = self._types[tkey] = (tuple(rkinds), tup, cn)
        rkinds, tup, cn = info
        depth = self._out_depth if self._out_depth is not None else mats[0]._depth
        first = mats[0]
        nd = Node(self.opdef, tuple(m._value(func, nm) for m, nm in zip(mats, names)),
                  (self.opdef.key, kinds, rkinds, tup), tuple(values),
                  first._rows, first._cols, depth, cn)
        return result(func, nd, dst, stream)


class GatherOp(UserOp):
    def __init__(self, opdef, coords, pixel, n_params, defaults, param_kinds, out_depth, out_channels,
                 out_size, in_depths, n_pixel_args):
        super().__init__(opdef, coords, n_params, defaults, param_kinds, "gather_op")
        self.pixel = pixel
        self._out_depth, self._out_channels, self._out_size = out_depth, out_channels, out_size
        self._in_depths, self._n_pixel_args = in_depths, n_pixel_args

    def __call__(self, src, *params, dsize=None, dst=None, stream=None, **by_name):
        with STATE.lock:
            return self._call(src, params, dsize, dst, stream, by_name)

    def _call(self, src, params, dsize, dst, stream, by_name=None):
        name, func = self.name, _func(self.name)
        m = src_mat(func, src)
        self._check_depths([m], ["src"])
        values, kinds = self._params(params, self._n_params, f" (coords {self.fn.__name__}() takes y, x, h, w "
                                                             "and the parameters)", by_name)
        if dsize is None and self._out_size is not None:
            try:
                dsize = self._out_size(m._rows, m._cols, *values)
            except Exception as e:
                raise cv_error(func, f"op '{name}': out_size({m._rows}, {m._cols}, ...) failed: {e}", StsBadArg)
        if dsize is None:
            ow, oh = m._cols, m._rows
        else:
            try:
                ow, oh = int(dsize[0]), int(dsize[1])
            except Exception:
                raise cv_error(func, f"op '{name}': dsize must be (width, height), got {dsize!r}", StsBadArg)
            if ow <= 0 or oh <= 0:
                raise cv_error(func, f"op '{name}': the output size must be positive, got {(ow, oh)}",
                               StsUnmatchedSizes)
        tkey = ((m._depth, m._cn), kinds)
        info = self._types.get(tkey)
        if info is None:
            from numba import types
            ptypes = [_kind_type(k) for k in kinds]
            ck, ctup, crt = _infer(name, self.fn, "coords", [types.int64] * 4 + ptypes)
            if not ctup or len(ck) < 2:
                raise cv_error(func, f"op '{name}': coords {self.fn.__name__}() must return a tuple "
                                     f"(sy, sx) or (sy, sx, *extra)", StsBadArg)
            fcoord = tuple(k == "f" for k in ck[:2])
            n_extra = len(ck) - 2
            pass_params = False
            if self.pixel is None:
                if n_extra:
                    raise cv_error(func, f"op '{name}': coords returns {n_extra} extra value(s) but there is "
                                         "no pixel function to receive them", StsBadArg)
                rkinds, tup, cn = (), False, m._cn
            else:
                base = len(self.opdef.footprint) * m._cn + n_extra
                pass_params = bool(kinds) and self._n_pixel_args == base + len(kinds)
                if self._n_pixel_args != base + (len(kinds) if pass_params else 0):
                    also = f" (or {base + len(kinds)} with the parameters)" if kinds else ""
                    raise cv_error(func, f"op '{name}': pixel {self.pixel.__name__}() takes {self._n_pixel_args} "
                                         f"argument(s); for a {m._cn}-channel input, "
                                         f"{len(self.opdef.footprint)} tap(s) and {n_extra} extra value(s) "
                                         f"it must take {base}{also}", StsBadArg)
                argtypes = [_value_type(m._depth)] * (len(self.opdef.footprint) * m._cn) + \
                    list(crt.types[2:]) + (ptypes if pass_params else [])
                rk, tup, _ = _infer(name, self.pixel, "pixel", argtypes)
                cn = len(rk)
                _check_out_channels(func, name, self.pixel.__name__, cn, self._out_channels)
                rkinds = tuple(rk)
            info = self._types[tkey] = (fcoord, n_extra, rkinds, tup, cn, pass_params)
        fcoord, n_extra, rkinds, tup, cn, pass_params = info
        depth = self._out_depth if self._out_depth is not None else m._depth
        nd = Node(self.opdef, (m._value(func),),
                  (self.opdef.key, kinds, fcoord, n_extra, rkinds, tup, pass_params),
                  (m._rows, m._cols) + tuple(values), oh, ow, depth, cn)
        return result(func, nd, dst, stream)


# ---------------------------------------------------------------- the decorators

def _common_args(name, out_depth, out_channels, in_depths, param_types):
    od, ocn = _depth_of(name, "out_depth", out_depth)
    if ocn is not None:
        if out_channels is not None and int(out_channels) != ocn:
            raise cv_error(_func(name), f"op '{name}': out_depth is a type with {ocn} channel(s) but "
                                        f"out_channels={out_channels}", StsBadArg)
        out_channels = ocn
    oc = _channels_arg(name, "out_channels", out_channels)
    ids = None
    if in_depths is not None:
        if isinstance(in_depths, (int, np.integer, str, type, np.dtype)):
            in_depths = (in_depths,)
        ids = frozenset(_depth_of(name, "in_depths", d)[0] for d in in_depths)
    return od, oc, ids, _kinds_arg(name, param_types)


def _name_arg(name, fn):
    if name is None:
        name = getattr(getattr(fn, "py_func", fn), "__name__", None)
    if not isinstance(name, str) or not name or name == "<lambda>":
        raise cv_error("lazycv::op", f"an op needs a name: pass name=... (got {name!r})", StsBadArg)
    return name


def op(fn=None, *, name=None, out_depth=None, out_channels=None, inputs=1, in_channels=None,
       per_channel=False, param_types=None, in_depths=None):
    """Turn a per-pixel function into a fusable op (see the module docstring).

    ``out_depth``: cv2.CV_* depth or numpy dtype of the result (default: the first input's);
    ``out_channels``: checked against what the function returns (default: inferred from it);
    ``inputs``: number of image inputs; ``in_channels``: channels each input must have (an int,
    or one per input); ``per_channel``: apply the function to each channel separately;
    ``param_types``: the types of the scalar parameters (default: from the values passed);
    ``in_depths``: the input depths the op accepts (default: any).
    Usable as ``@op``, ``@op(...)`` or ``op(fn, ...)``.
    """
    if fn is None:
        return lambda f: op(f, name=name, out_depth=out_depth, out_channels=out_channels, inputs=inputs,
                            in_channels=in_channels, per_channel=per_channel, param_types=param_types,
                            in_depths=in_depths)
    name = _name_arg(name, fn)
    func = _func(name)
    py, params = _positional(name, fn, "the function")
    od, oc, ids, kinds = _common_args(name, out_depth, out_channels, in_depths, param_types)
    if not isinstance(inputs, (int, np.integer)) or isinstance(inputs, bool) or not 1 <= inputs <= 8:
        raise cv_error(func, f"op '{name}': inputs must be 1..8, got {inputs!r}", StsBadArg)
    inputs = int(inputs)
    if not isinstance(per_channel, (bool, np.bool_)) and per_channel not in (0, 1):
        raise cv_error(func, f"op '{name}': per_channel must be True or False, got {per_channel!r}", StsBadArg)
    ich = None
    if in_channels is not None:
        ich = (in_channels,) * inputs if isinstance(in_channels, (int, np.integer)) else tuple(in_channels)
        if len(ich) != inputs:
            raise cv_error(func, f"op '{name}': in_channels has {len(ich)} entries for {inputs} input(s)",
                           StsBadArg)
        ich = tuple(_channels_arg(name, "in_channels", c) for c in ich)
    n_args = len(params)
    defaults = tuple(p.default for p in params if p.default is not p.empty)
    if per_channel:
        if oc is not None:
            raise cv_error(func, f"op '{name}': a per_channel op has its inputs' channel count; "
                                 "do not pass out_channels", StsBadArg)
        fixed = inputs
        what = f"{inputs} input value(s) (one per image input)"
    else:
        fixed = sum(ich) if ich is not None else None
        what = f"{fixed} input channel(s)"
    if fixed is not None:
        if n_args < fixed:
            raise cv_error(func, f"op '{name}': {py.__name__}() takes {n_args} argument(s) but must receive "
                                 f"{what} before its parameters", StsBadArg)
        n_params = n_args - fixed
        if kinds is not None and len(kinds) != n_params:
            raise cv_error(func, f"op '{name}': param_types has {len(kinds)} entries but {py.__name__}() "
                                 f"takes {n_params} parameter(s)", StsBadArg)
        if len(defaults) > n_params:
            raise cv_error(func, f"op '{name}': only parameters may have defaults, not input channels",
                           StsBadArg)
    elif n_args == 0:
        raise cv_error(func, f"op '{name}': {py.__name__}() takes no arguments", StsBadArg)
    options = ("op", inputs, ich, per_channel, od, oc)
    fp = _function_fp(py)
    key = hashlib.sha1(repr((fp, options)).encode()).hexdigest()[:20]
    fname = f"uf_{_ident(name)}_{key[:10]}"
    fn_c = _canonical(fname, py)
    opdef = _make_opdef(_ElementOpDef, name, key,
                        dict(fn=staticmethod(fn_c), fname=fname, per_channel=bool(per_channel)))
    return ElementOp(opdef, py, n_args, inputs, ich, bool(per_channel), od, oc, kinds, ids, defaults)


def gather_op(coords=None, *, pixel=None, footprint=((0, 0),), name=None, out_depth=None,
              out_channels=None, out_size=None, border="replicate", border_value=0, param_types=None,
              in_depths=None):
    """Turn a coordinate function into a fusable gather op (see the module docstring).

    ``coords(y, x, h, w, *params) -> (sy, sx[, *extra])``: where output pixel (y, x) reads the
    input (integers; floats are floored). ``footprint``: the (dy, dx) offsets read around
    (sy, sx) — its size is the op's tap count, which the planner uses like a resize's.
    ``pixel(*taps, *extra[, *params])``: combines the fetched pixels (tap by tap, all channels of
    each, then coords' extra values, then the parameters if it takes them) into the output
    value(s); without it the output is the single fetched pixel.
    ``out_size(h, w, *params) -> (width, height)`` or the call's ``dsize=(width, height)``: the
    output size (default: the input's). ``border``: "replicate" (clamp to the input) or
    "constant" (``border_value`` outside). Usable as ``@gather_op(...)`` or ``gather_op(fn, ...)``.
    """
    if coords is None:
        return lambda f: gather_op(f, pixel=pixel, footprint=footprint, name=name, out_depth=out_depth,
                                   out_channels=out_channels, out_size=out_size, border=border,
                                   border_value=border_value, param_types=param_types, in_depths=in_depths)
    name = _name_arg(name, coords)
    func = _func(name)
    py, params = _positional(name, coords, "coords")
    if len(params) < 4:
        raise cv_error(func, f"op '{name}': coords {py.__name__}() must take (y, x, h, w, *params); "
                             f"it takes {len(params)} argument(s)", StsBadArg)
    n_params = len(params) - 4
    defaults = tuple(p.default for p in params if p.default is not p.empty)
    if len(defaults) > n_params:
        raise cv_error(func, f"op '{name}': only parameters may have defaults, not y, x, h, w", StsBadArg)
    od, oc, ids, kinds = _common_args(name, out_depth, out_channels, in_depths, param_types)
    if kinds is not None and len(kinds) != n_params:
        raise cv_error(func, f"op '{name}': param_types has {len(kinds)} entries but coords takes "
                             f"{n_params} parameter(s)", StsBadArg)
    try:
        fp_taps = tuple((int(dy), int(dx)) for dy, dx in footprint)
        ok = all(float(a) == int(a) and float(b) == int(b) for a, b in footprint)
    except Exception:
        ok = False
    if not ok or not fp_taps or len(fp_taps) > 64:
        raise cv_error(func, f"op '{name}': footprint must be a non-empty sequence of at most 64 integer "
                             f"(dy, dx) offsets, got {footprint!r}", StsBadArg)
    if border not in ("replicate", "constant"):
        raise cv_error(func, f"op '{name}': border must be 'replicate' or 'constant', got {border!r}", StsBadArg)
    if not isinstance(border_value, numbers.Real):
        raise cv_error(func, f"op '{name}': border_value must be a number, got {border_value!r}", StsBadArg)
    if out_size is not None and not callable(out_size):
        raise cv_error(func, f"op '{name}': out_size must be a function (h, w, *params) -> (width, height)",
                       StsBadArg)
    ppy, n_pixel_args = None, None
    if pixel is None:
        if len(fp_taps) != 1:
            raise cv_error(func, f"op '{name}': a footprint of {len(fp_taps)} taps needs a pixel function "
                                 "to combine them", StsBadArg)
        if od is not None or oc is not None:
            raise cv_error(func, f"op '{name}': without a pixel function the output is the fetched pixel; "
                                 "out_depth/out_channels need a pixel function", StsBadArg)
    else:
        ppy, pparams = _positional(name, pixel, "pixel")
        n_pixel_args = len(pparams)
        if n_pixel_args < len(fp_taps):
            raise cv_error(func, f"op '{name}': pixel {ppy.__name__}() takes {n_pixel_args} argument(s), fewer "
                                 f"than the {len(fp_taps)} tap(s) it receives", StsBadArg)
    options = ("gather", fp_taps, border, float(border_value), od, oc)
    fp = _function_fp(py) + ":" + (_function_fp(ppy) if ppy is not None else "-")
    key = hashlib.sha1(repr((fp, options)).encode()).hexdigest()[:20]
    cname = f"uc_{_ident(name)}_{key[:10]}"
    pname = f"up_{_ident(name)}_{key[:10]}"
    attrs = dict(coords=staticmethod(_canonical(cname, py)),
                 pixel=staticmethod(_canonical(pname, ppy)) if ppy is not None else None,
                 cname=cname, pname=pname, footprint=fp_taps, border=border, border_value=float(border_value))
    opdef = _make_opdef(_GatherOpDef, name, key, attrs)
    return GatherOp(opdef, py, ppy, n_params, defaults, kinds, od, oc, out_size, ids, n_pixel_args)
