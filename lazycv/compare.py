"""Eager vs fused: record what a piece of cv2.cuda code hands out, compare two recordings, and
describe the differences. No pytest here; the pytest plugin (``lazycv.pytest_plugin``) and
its ``lazycv_compare`` fixture are built on it.

* :class:`Recorder` — while active, records every array that leaves lazycv (each
  ``GpuMat.download`` and each export to foreign code, via ``lazycv.runtime.observe``) with its
  call site and ``lazycv.explain`` of the pending work it forced.
* :func:`compare_records` — pairs two recordings in order and compares them with a
  :class:`Tolerance` (integers exact by default, floats within 1e-6 relative).
* :meth:`Comparison.report` — the text of a mismatch, in the style of pytest-regressions.
"""
import contextlib
import linecache
import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

import lazycv
from lazycv import runtime as _runtime

__all__ = ["Tolerance", "Record", "ArrayDiff", "Comparison", "Recorder", "compare_arrays",
           "compare_records", "mode", "record_value"]

_PKG_DIR = os.path.dirname(os.path.abspath(lazycv.__file__)) + os.sep
_MISSING = object()


# ------------------------------------------------------------------ tolerances and records

@dataclass(frozen=True)
class Tolerance:
    """Integers (and bools): ``|fused - eager| <= int_atol`` (exact by default).
    Floats: ``|fused - eager| <= atol + rtol * |eager|``; equal infinities are equal, and NaN
    equals NaN at the same position when ``equal_nan``."""
    rtol: float = 1e-6
    atol: float = 0.0
    int_atol: int = 0
    equal_nan: bool = True

    def describe(self, kind=None):
        ints = "integers exact" if not self.int_atol else f"integers within {self.int_atol}"
        floats = f"floats rtol={self.rtol:g} atol={self.atol:g}"
        if kind is not None:
            return floats[len("floats "):] if kind in "fc" else ints[len("integers "):]
        return f"{ints}, {floats}"


@dataclass
class Record:
    """One array that left lazycv: the ``index``-th (1-based) of its run."""
    index: int
    kind: str                 # "download", "export" or "result" (a fixture's return value)
    phase: str                # "setup", "call", "teardown" or "" (outside a pytest phase)
    stack: Tuple[Tuple[str, int, str, str], ...]   # (file, line, function, source), innermost first
    array: np.ndarray
    plan: Optional[str] = None    # lazycv.explain of the work this hand-out forced

    @property
    def site(self):
        """Where the data left, innermost user frame: ``file:line in function``."""
        if not self.stack:
            return "<unknown>"
        f, line, fn, _ = self.stack[0]
        return f"{f}:{line} in {fn}"

    def where(self):
        """The call chain from the innermost user frame out to the test."""
        if not self.stack:
            return "<unknown>"
        return " <- ".join(f"{f}:{line} in {fn}" for f, line, fn, _ in self.stack)


# ------------------------------------------------------------------ array comparison

@dataclass
class ArrayDiff:
    eager_shape: tuple
    fused_shape: tuple
    eager_dtype: np.dtype
    fused_dtype: np.dtype
    size: int = 0
    n_diff: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    nonfinite: int = 0           # mismatches involving NaN or an infinity
    first: list = field(default_factory=list)   # (index, eager value, fused value, |diff|)
    reason: str = ""             # "" (equal within tolerance), "shape", "dtype" or "values"

    @property
    def ok(self):
        return not self.reason

    def summary(self):
        if self.reason == "shape":
            return f"shapes differ: {self.eager_shape} vs {self.fused_shape}"
        if self.reason == "dtype":
            return f"dtypes differ: {self.eager_dtype} vs {self.fused_dtype}"
        if self.reason == "values":
            share = 100.0 * self.n_diff / max(self.size, 1)
            return (f"{self.n_diff} of {self.size} elements differ ({share:.2f}%), "
                    f"max abs error {_num(self.max_abs)}")
        return "equal"


def _num(x):
    if isinstance(x, (float, np.floating)):
        if np.isfinite(x) and float(x).is_integer() and abs(x) < 1e15:
            return str(int(x))
        return f"{float(x):.9g}"
    return str(x)


def compare_arrays(eager, fused, tol=Tolerance(), max_items=10):
    """Element-wise comparison of two arrays under ``tol``; see :class:`Tolerance`."""
    a, b = np.asarray(eager), np.asarray(fused)
    d = ArrayDiff(a.shape, b.shape, a.dtype, b.dtype, size=int(a.size))
    if a.shape != b.shape:
        d.reason = "shape"
        return d
    if a.dtype != b.dtype:
        d.reason = "dtype"
        return d
    kind = a.dtype.kind
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if kind == "b":
            err = (a != b).astype(np.float64)
            bad = err > 0
            mag = np.ones(a.shape)
        elif kind in "iu":
            if kind == "u":
                err = (np.maximum(a, b) - np.minimum(a, b)).astype(np.float64)
            else:
                err = np.abs(a.astype(np.int64) - b.astype(np.int64)).astype(np.float64)
            bad = err > tol.int_atol
            mag = np.abs(a.astype(np.float64))
        elif kind in "fc":
            a64 = a.astype(np.complex128 if kind == "c" else np.float64)
            b64 = b.astype(a64.dtype)
            err = np.abs(a64 - b64)
            mag = np.abs(a64)
            finite = np.isfinite(a64) & np.isfinite(b64)
            bad = ~finite | ~(err <= tol.atol + tol.rtol * mag)
            bad &= ~(a64 == b64)                           # equal infinities are equal
            if tol.equal_nan:
                bad &= ~(np.isnan(a64) & np.isnan(b64))
        else:
            bad = a != b
            err = bad.astype(np.float64)
            mag = np.ones(a.shape)
        bad = np.asarray(bad)
        d.n_diff = int(bad.sum())
        if not d.n_diff:
            return d
        d.reason = "values"
        finite = bad & np.isfinite(err)
        d.nonfinite = int(d.n_diff - finite.sum())
        if finite.any():
            e = err[finite]
            d.max_abs = float(e.max())
            m = mag[finite]
            rel = np.where(m > 0, e / np.where(m > 0, m, 1), np.where(e > 0, np.inf, 0.0))
            d.max_rel = float(rel.max())
        elif d.nonfinite:
            d.max_abs = d.max_rel = float("nan")
        flat = np.flatnonzero(bad)[:max_items]
        for i in flat:
            idx = np.unravel_index(int(i), a.shape)
            d.first.append((tuple(int(j) for j in idx), a.flat[i], b.flat[i], err.flat[i]))
    return d


# ------------------------------------------------------------------ recordings

@dataclass
class Comparison:
    """Two recordings paired in order."""
    a: List[Record]
    b: List[Record]
    tol: Tolerance
    labels: Tuple[str, str] = ("eager", "fused")
    diffs: list = field(default_factory=list)        # (a record, b record, ArrayDiff), failing only
    sites: list = field(default_factory=list)        # (a record, b record): same index, other call site
    compared: int = 0

    @property
    def count_differs(self):
        return len(self.a) != len(self.b)

    @property
    def ok(self):
        return not (self.diffs or self.sites or self.count_differs)

    def headline(self):
        """One line: the first difference."""
        la, lb = self.labels
        if self.sites:
            ra, rb = self.sites[0]
            return (f"{lb} run took another path: hand-out #{ra.index} came from {rb.site} "
                    f"instead of {ra.site}")
        if self.diffs:
            ra, rb, d = self.diffs[0]
            return f"{ra.kind} #{ra.index} at {ra.site}: {d.summary()}"
        if self.count_differs:
            return (f"the {la} run handed out {len(self.a)} array(s), "
                    f"the {lb} run {len(self.b)}")
        return f"{self.compared} array(s) equal"

    def report(self, max_detailed=3, max_plan_lines=40, plans=True):
        """Multi-line description of every difference (the first ``max_detailed`` in full)."""
        la, lb = self.labels
        w = max(len(la), len(lb))
        out = []
        if self.count_differs:
            n = min(len(self.a), len(self.b))
            longer, label = (self.a, la) if len(self.a) > len(self.b) else (self.b, lb)
            out.append(f"number of arrays handed out differs: {la} {len(self.a)}, {lb} {len(self.b)}")
            out.append(f"  first one only the {label} run handed out: #{n + 1} ({longer[n].kind}) "
                       f"at {longer[n].where()}")
            out.append("")
        for ra, rb in self.sites:
            out.append(f"hand-out #{ra.index} came from different places:")
            out.append(f"  {la:<{w}}: {ra.where()}")
            out.append(f"  {lb:<{w}}: {rb.where()}")
            out.append("")
        for k, (ra, rb, d) in enumerate(self.diffs):
            if k >= max_detailed:
                rest = self.diffs[k:]
                out.append(f"{len(rest)} more differing array(s): " +
                           ", ".join(f"#{r.index} ({r.site})" for r, _, _ in rest))
                break
            out.extend(self._detail(ra, rb, d, w, max_plan_lines, plans))
            out.append("")
        if not out:
            out.append(f"all {self.compared} array(s) equal within tolerance")
        return "\n".join(out).rstrip()

    def _detail(self, ra, rb, d, w, max_plan_lines, plans):
        la, lb = self.labels
        total = max(len(self.a), len(self.b))
        phase = f" ({ra.phase})" if ra.phase else ""
        lines = [f"{ra.kind} #{ra.index} of {total}{phase} at {ra.where()}"]
        src = ra.stack[0][3] if ra.stack else ""
        if src:
            lines.append(f"    {src}")
        lines.append(f"  {la:<{w}}: shape {d.eager_shape}, dtype {d.eager_dtype}")
        lines.append(f"  {lb:<{w}}: shape {d.fused_shape}, dtype {d.fused_dtype}")
        if d.reason in ("shape", "dtype"):
            lines.append(f"  {d.summary()}")
        else:
            share = 100.0 * d.n_diff / max(d.size, 1)
            lines.append(f"  differing elements: {d.n_diff} of {d.size} ({share:.2f}%), "
                         f"tolerance: {self.tol.describe(d.eager_dtype.kind)}")
            lines.append(f"  max abs error: {_num(d.max_abs)}")
            lines.append(f"  max rel error: {_num(d.max_rel)}")
            if d.nonfinite:
                lines.append(f"  mismatches involving NaN/inf: {d.nonfinite}")
            lines.append(f"  first {len(d.first)} mismatch(es):")
            rows = [("index", la, lb, "abs diff")]
            rows += [(str(i), _num(x), _num(y), _num(e)) for i, x, y, e in d.first]
            widths = [max(len(r[c]) for r in rows) for c in range(4)]
            for r in rows:
                lines.append("    " + "  ".join(r[c].rjust(widths[c]) for c in range(4)).rstrip())
        if plans:
            lines.append(f"  {lb} plan (lazycv.explain of this result before it left):")
            lines.extend("    " + s for s in _plan_lines(rb, max_plan_lines))
            if ra.plan == rb.plan:
                lines.append(f"  {la} plan: the same")
            else:
                lines.append(f"  {la} plan:")
                lines.extend("    " + s for s in _plan_lines(ra, max_plan_lines))
        return lines


def _plan_lines(rec, limit):
    if rec.plan is None:
        if rec.kind == "result":
            return ["(returned array; no pending lazycv work)"]
        return ["(nothing was pending: computed earlier, e.g. with another result of the same flush)"]
    lines = rec.plan.splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more line(s)"]
    return lines


def compare_records(a, b, tol=Tolerance(), labels=("eager", "fused"), max_items=10):
    """Pair two recordings in order and compare each pair. Pairs whose innermost call sites
    differ mean the two runs took different paths: they are reported, not compared."""
    c = Comparison(list(a), list(b), tol, tuple(labels))
    for ra, rb in zip(c.a, c.b):
        if ra.site != rb.site or ra.kind != rb.kind:
            c.sites.append((ra, rb))
            continue
        d = compare_arrays(ra.array, rb.array, tol, max_items)
        c.compared += 1
        if not d.ok:
            c.diffs.append((ra, rb, d))
    return c


# ------------------------------------------------------------------ recording a run

def _user_stack(stop_file=None, limit=4):
    """The caller's frames outside the lazycv package, innermost first, up to the frame in
    ``stop_file`` (the test module) or ``limit`` frames."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    out = []
    cwd = os.getcwd()
    while f is not None and len(out) < limit:
        path = f.f_code.co_filename
        if not path.startswith(_PKG_DIR) and not path.startswith("<frozen"):
            shown = path
            if os.path.isabs(path) and path.startswith(cwd + os.sep):
                shown = os.path.relpath(path, cwd)
            out.append((shown, f.f_lineno, f.f_code.co_name, linecache.getline(path, f.f_lineno).strip()))
            if stop_file is not None and os.path.abspath(path) == stop_file:
                break
        f = f.f_back
    return tuple(out)


def _explain_pending(mat):
    node = getattr(mat, "_node", _MISSING)
    if node is None:
        return None                       # already computed: nothing to explain
    try:
        return lazycv.explain(mat)
    except Exception as exc:              # never let the instrumentation break the test
        return f"(lazycv.explain failed: {exc!r})"


class Recorder:
    """Records every array leaving lazycv while active (use as a context manager)."""

    # Where data leaves a GpuMat: capture the plan before the original runs.
    _METHODS = ("download", "__dlpack__")
    _PROPERTIES = ("__array_interface__", "__cuda_array_interface__")

    def __init__(self, stop_file=None, plans=True):
        self.records = []
        self.phase = ""
        self.kind_override = None
        self.stop_file = os.path.abspath(stop_file) if stop_file else None
        self.plans = plans
        self._pending_plans = {}
        self._undo = []

    # -- observer
    def _observe(self, kind, mat, array):
        plan = self._pending_plans.pop(id(mat), None)
        self.add(self.kind_override or kind, array, plan, _user_stack(self.stop_file))

    def add(self, kind, array, plan=None, stack=None):
        if stack is None:
            stack = _user_stack(self.stop_file)
        self.records.append(Record(len(self.records) + 1, kind, self.phase, stack,
                                   np.array(array, copy=True), plan))

    def _before_leave(self, mat):
        if self.plans:
            self._pending_plans[id(mat)] = _explain_pending(mat)

    # -- activation
    def __enter__(self):
        self._undo.append(_runtime.observe(self._observe))
        if self.plans:
            cls = lazycv.GpuMat
            for name in self._METHODS:
                orig = cls.__dict__.get(name)
                if callable(orig):
                    setattr(cls, name, self._wrap_method(orig))
                    self._undo.append(lambda n=name, o=orig: setattr(cls, n, o))
            for name in self._PROPERTIES:
                orig = cls.__dict__.get(name)
                if isinstance(orig, property) and orig.fget is not None:
                    setattr(cls, name, self._wrap_property(orig))
                    self._undo.append(lambda n=name, o=orig: setattr(cls, n, o))
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()
        self._pending_plans.clear()
        return False

    def _wrap_method(self, orig):
        rec = self

        def wrapper(mat, *args, **kw):
            rec._before_leave(mat)
            return orig(mat, *args, **kw)
        wrapper.__name__ = orig.__name__
        wrapper.__doc__ = orig.__doc__
        wrapper.__wrapped__ = orig
        return wrapper

    def _wrap_property(self, orig):
        rec = self

        def fget(mat):
            rec._before_leave(mat)
            return orig.fget(mat)
        return property(fget, orig.fset, orig.fdel, orig.__doc__)


def _current_mapping():
    import lazycv
    return lazycv.settings()["resize_mapping"]


@contextlib.contextmanager
def mode(fuse, backend=None):
    """``lazycv.enabled(backend, fuse=fuse)``, keeping the current backend (when enabled and
    ``backend`` is None) and the current resize mapping."""
    if backend is None and lazycv.is_enabled():
        backend = lazycv.backend()
    mapping = _current_mapping() if lazycv.is_enabled() else "opencv-cpu"
    with lazycv.enabled(backend=backend, fuse=fuse, resize_mapping=mapping):
        yield


def record_value(value, recorder):
    """Record the arrays in a (nested list/tuple/dict) return value, in order, as kind
    "result": GpuMats are downloaded (inside the caller's mode), arrays and numbers copied.
    Returns the value with GpuMats replaced by their downloads."""
    def conv(v):
        if isinstance(v, lazycv.GpuMat):
            if v.empty():
                return None
            recorder.kind_override = "result"
            try:
                return v.download()
            finally:
                recorder.kind_override = None
        if isinstance(v, np.ndarray):
            recorder.add("result", v)
            return v
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return type(v)(*(conv(x) for x in v))
        if isinstance(v, (list, tuple)):
            return type(v)(conv(x) for x in v)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (bool, int, float, complex, np.generic)):
            recorder.add("result", np.asarray(v))
        return v
    return conv(value)
