"""Generate one Python kernel per fused group, compile it once per structure, cache it.

A kernel's identity is its *signature*: the ops, their static parameters, dtypes, channel
counts and the shape of the graph, never sizes, offsets, scalars or pointers. Those are
kernel arguments, gathered at launch time by the kernel's *recipe*, so a new frame size or a
new mean value reuses the compiled kernel.

The generated source is written to a file in the cache folder and imported, which lets
Numba's on-disk cache (``cache=True``) serve the next process.
"""
import glob
import hashlib
import importlib.util
import os
import re
import sys
import threading

import numpy as np

from . import diskcache
from ._types import DEPTH_DTYPE, is_float
from .backends.base import Backend
from .ir import resolved
from .log import note_compile

_FLOAT_T = {np.dtype(np.float32): "np.float32", np.dtype(np.float64): "np.float64"}


def typed(expr, depth):
    """Expression fixing ``expr`` to the C type of ``depth`` (floats are cast explicitly so
    fused code rounds exactly where eager code stores to memory)."""
    dt = DEPTH_DTYPE[depth]
    t = _FLOAT_T.get(dt)
    return f"{t}({expr})" if t else expr


class KernelLayout:
    """The canonical numbering of the values a kernel reads and computes.

    Built from the kernel's outputs by a depth-first walk over inputs in order; the same
    structure always yields the same numbering, so one compiled kernel fits every graph with
    the same signature.

    ``members`` (ids of the nodes the kernel computes; None = all pending ones) makes every other
    pending node an *input*: an earlier phase's output, read from memory like a source (its
    buffer is known only once that phase has run; :meth:`source` resolves it at launch).
    """
    __slots__ = ("values", "_index", "signature", "outputs", "inputs")

    def __init__(self, outputs, members=None):
        self.values, self._index, self.inputs = [], {}, []
        sig = []
        stack = [(resolved(v), False) for v, _ in reversed(outputs)]
        while stack:
            v, expanded = stack.pop()
            if id(v) in self._index:
                continue
            if v.is_source or (members is not None and id(v) not in members):
                self.inputs.append(len(self.values))
                self._add(v, sig, ("S", v.depth, v.cn))
                continue
            if not expanded:
                stack.append((v, True))
                for i in reversed(v.inputs):
                    i = resolved(i)
                    if id(i) not in self._index:
                        stack.append((i, False))
                continue
            ins = tuple(self._index[id(resolved(i))] for i in v.inputs)
            self._add(v, sig, (v.op.name, v.static, v.depth, v.cn, ins))
        self.outputs = [(self._index[id(resolved(v))], cut) for v, cut in outputs]
        sig.append(tuple((i, self.values[i].depth, self.values[i].cn) for i, _ in self.outputs))
        self.signature = tuple(sig)

    @property
    def index(self):
        """Value index by id (built on first use for a rebuilt layout: only code generation
        needs it, and a cached plan's kernels are usually compiled already)."""
        if self._index is None:
            self._index = {id(v): i for i, v in enumerate(self.values)}
        return self._index

    def _add(self, v, sig, key):
        self._index[id(v)] = len(self.values)
        self.values.append(v)
        sig.append(key)

    @classmethod
    def rebuilt(cls, values, signature, outputs, inputs):
        """A layout for new values of a known structure (the plan cache), without the walk."""
        lay = cls.__new__(cls)
        lay.values, lay.signature, lay.outputs, lay.inputs = values, signature, outputs, inputs
        lay._index = None
        return lay

    def source(self, vi):
        """The memory region input ``vi`` reads (an earlier phase's output once it has run)."""
        return resolved(self.values[vi])


class Emitter:
    """The context ops emit into: fresh names, kernel arguments, and reads of other values."""

    def __init__(self, layout, prefix="", spellings=None):
        self.layout = layout
        self.spellings = spellings or Backend.spellings   # target-specific forms (Backend.spellings)
        self.p = prefix             # keeps the names of several kernels in one launch apart
        self.lines = []
        self.params = ["H", "W"]
        self.recipe = []            # how to fetch each parameter after H, W at launch
        self._memo = {}
        self._exprs = {}
        self._named = {}
        self._n = 0
        self.source_reads = {}      # value index -> True when every read is at (y, x)
        self.input_set = set(layout.inputs) if layout is not None else set()
        self.globals = {}           # name -> (python function, fingerprint) the body calls

    def spell(self, name, *exprs):
        """``exprs`` through a target-specific operation (see Backend.spellings)."""
        return self.spellings[name].format(*exprs)

    def let(self, expr, prefix="t"):
        """A new name for ``expr``, or the name an identical expression already has: the body
        is straight-line code that assigns every name once and loads before it stores, so equal
        text is an equal value (a resize's four taps share their row and column offsets)."""
        name = self._exprs.get(expr)
        if name is not None:
            return name
        self._n += 1
        name = f"_{self.p}{prefix}{self._n}"   # "_" keeps temporaries apart from argument names
        self.lines.append(f"{name} = {expr}")
        self._exprs[expr] = name
        return name

    def use_function(self, name, fn, fingerprint):
        """Let the kernel body call ``name(...)``: ``fn`` (a plain Python function) is compiled
        as a device function of the backend. ``fingerprint`` (e.g. a hash of its code) goes into
        the kernel source, so a changed function never reuses a stale cached kernel."""
        have = self.globals.get(name)
        if have is not None and have[0] is not fn:
            from .errors import cv_error
            raise cv_error(name, f"two different functions are named {name!r} in one kernel")
        self.globals[name] = (fn, fingerprint)
        return name

    def dyn(self, node, k, kind):
        """Name of the kernel argument carrying ``node.dyn[k]`` (kind: 'i', 'f32' or 'f64')."""
        vi = self.layout.index[id(node)]
        key = ("d", vi, k)
        name = self._named.get(key)
        if name is None:
            name = f"{self.p}d{vi}_{k}"
            self._named[key] = name
            self.params.append(name)
            self.recipe.append(("dyn", vi, k, kind))
        return name

    def _source_args(self, vi):
        key = ("s", vi)
        if key not in self._named:
            s = f"{self.p}s{vi}"
            self._named[key] = s
            self.params += [s, f"{s}_y", f"{s}_x"]
            self.recipe.append(("src", vi))
        return self._named[key]

    def read(self, value, y, x):
        """Channel variables of ``value`` at pixel (y, x), computing it here if needed."""
        # the layout fixed what is computed and what is read when it was built; a kernel launched
        # since then may have computed a node this one recomputes, which changes nothing here
        vi = self.layout.index.get(id(value))
        if vi is None:
            vi = self.layout.index[id(resolved(value))]
        value = self.layout.values[vi]
        key = (vi, y, x)
        got = self._memo.get(key)
        if got is not None:
            return got
        if vi in self.input_set:
            s = self._source_args(vi)
            base = (y, x) == ("y", "x")
            self.source_reads[vi] = self.source_reads.get(vi, True) and base
            row = self.let(f"{s}_y + {y}", "r")
            col = self.let(f"({s}_x + {x}) * {value.cn}", "c")
            load = "{}" if is_float(value.depth) else self.spellings["int_load"]
            ix = self.spellings["index"]
            got = [self.let(load.format(f"{s}[{ix.format(row)}, {ix.format(f'{col} + {c}')}]"), "v")
                   for c in range(value.cn)]
        else:
            exprs = value.op.emit(self, value, y, x)
            assert len(exprs) == value.cn, (value, exprs)
            got = [self.let(typed(e, value.depth), "v") for e in exprs]
        self._memo[key] = got
        return got


class Compiled:
    """A compiled kernel and the recipe that turns a matching graph into its arguments.
    ``reduce``: None for a map kernel; a reduction's (kind, width) (:class:`Fold`), whose launch
    takes its partials buffer and its statistic after the recipe's arguments."""
    __slots__ = ("fn", "recipe", "source", "n_outputs", "source_reads", "name", "reduce")

    def __init__(self, fn, recipe, source, n_outputs, source_reads, name, reduce=None):
        self.fn, self.recipe, self.source = fn, recipe, source
        self.n_outputs, self.source_reads, self.name = n_outputs, source_reads, name
        self.reduce = reduce


def emit_body(layout, prefix="", spellings=None):
    """The straight-line per-pixel body for ``layout`` (names H, W, y, x, parameters free)."""
    em = Emitter(layout, prefix, spellings)
    p = prefix
    outs = []
    for vi, _ in layout.outputs:
        outs.append(em.read(layout.values[vi], "y", "x"))
    # every load happens before the first store, so an in-place op at (y, x) is safe
    for k, (vi, _) in enumerate(layout.outputs):
        v = layout.values[vi]
        o = f"{p}o{k}"
        em.params += [o, f"{o}_y", f"{o}_x"]
        em.lines.append(f"_{p}or{k} = {o}_y + y")
        em.lines.append(f"_{p}oc{k} = ({o}_x + x) * {v.cn}")
        ix = em.spellings["index"]
        for c, var in enumerate(outs[k]):
            em.lines.append(f"{o}[{ix.format(f'_{p}or{k}')}, {ix.format(f'_{p}oc{k} + {c}')}] = {var}")
    return em


class Fold:
    """What a reduction's kernel adds up per input pixel (a reducing op's ``fold`` returns it).

    ``kind`` "sum": ``terms`` are (accumulator, float64 expression) pairs, added in order;
    "minmax": ``terms`` are (float64 value, int index) pairs folded into (min, max, index of
    min, index of max) — smaller (larger) wins, then the smaller index; NaN never wins; an index
    of -1 means none. ``cond``: the pixel counts only where this expression is true (a mask);
    None: everywhere. ``width``: the statistic's channels (the accumulators; 4 for minmax)."""
    __slots__ = ("kind", "terms", "cond", "width")

    def __init__(self, kind, terms, width, cond=None):
        self.kind, self.terms, self.width, self.cond = kind, terms, width, cond

    def lines(self):
        """(a thread's or a row's start: accumulators at their empty values, the lines that fold
        one pixel in, the accumulators in the statistic's channel order). No Emitter name can
        be one of them (those end in a number >= 1 after a prefix no op spells "acc")."""
        if self.kind == "sum":
            accs = [f"_acc{k}" for k in range(self.width)]
            init = [f"{a} = 0.0" for a in accs]
            step = [f"_acc{k} += {t}" for k, t in self.terms]
        else:
            accs = ["_min", "_max", "_imin", "_imax"]
            init = ["_min = 0.0", "_max = 0.0", "_imin = -1", "_imax = -1"]
            step = []
            for v, i in self.terms:
                step += [f"if better_min({v}, {i}, _min, _imin):", f"    _min = {v}", f"    _imin = {i}",
                         f"if better_max({v}, {i}, _max, _imax):", f"    _max = {v}", f"    _imax = {i}"]
        if self.cond is not None:
            step = [f"if {self.cond}:"] + ["    " + ln for ln in step]
        return init, step, accs


def generate_reduce(layout, backend):
    """A reduction's kernel: one pass over its input's pixels (the kernel's H x W) with the
    pending chain that computes them fused in, each pixel folded into accumulators
    (:class:`Fold`) and the accumulators left as partials in ``P`` (backend.reduce_frame); the
    launch folds the partials into the statistic (backends/reduce_kernels.fold).
    Returns (emitter, source, (kind, width))."""
    from .backends import reduce_kernels
    em = Emitter(layout, spellings=backend.spellings)
    node = layout.values[layout.outputs[0][0]]
    fold = node.op.fold(em, node, "y", "x")
    if fold.kind == "minmax":
        em.use_function("better_min", reduce_kernels._better_min, "lazycv.reduce_kernels 1")
        em.use_function("better_max", reduce_kernels._better_max, "lazycv.reduce_kernels 1")
    em.params.append("P")
    frame = backend.reduce_frame(em.params, *split_row_invariant(em.lines), fold)
    return em, _with_header(em, frame, layout.signature), (fold.kind, fold.width)


_NAME = re.compile(r"[A-Za-z_]\w*")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*) = (.*)$")


def names(text):
    """The identifiers ``text`` mentions."""
    return set(_NAME.findall(text))


def assigned(line):
    """The name a generated line assigns (None for a store into an array or a control line)."""
    m = _ASSIGN.match(line)
    return m.group(1) if m else None


def split_row_invariant(lines, pixel_var="x"):
    """(row lines, pixel lines): assignments that do not depend on ``x`` (a resize's row
    coordinate and weights, a scalar cast) can run once per row instead of once per pixel.
    Relative order is kept, so each moved line still follows what it reads."""
    varying, row, pixel = {pixel_var}, [], []
    for ln in lines:
        m = _ASSIGN.match(ln)
        if m and not (set(_NAME.findall(m.group(2))) & varying):
            row.append(ln)
        else:
            if m:
                varying.add(m.group(1))
            pixel.append(ln)
    return row, pixel


def split_column_invariant(row_lines, lines):
    """(prologue, column lines): pixel-loop assignments that do not depend on ``y`` (a resize's
    column coordinates and weights) can be computed once per column into tables before the row
    loop. ``prologue`` is the row lines they may read that do not depend on ``y`` either."""
    varying, prologue = {"y"}, []
    for ln in row_lines:
        m = _ASSIGN.match(ln)
        if m and set(_NAME.findall(m.group(2))) & varying:
            varying.add(m.group(1))
        elif m:
            prologue.append(ln)
    columns, column_names = [], {"x"}
    for ln in lines:
        m = _ASSIGN.match(ln)
        if not m:
            continue
        reads = names(m.group(2))
        if reads & varying:
            varying.add(m.group(1))
        elif reads & column_names:
            columns.append((m.group(1), ln))
            column_names.add(m.group(1))
        else:
            prologue.append(ln)
    return prologue, columns


def _with_header(em, source, signature):
    """Prefix the source with what makes it unique: the signature it was generated for (the
    same text serves several dtypes, but one module per signature keeps each Numba dispatcher
    at one overload) and the fingerprints of user functions it calls."""
    digest = hashlib.sha1(repr(signature).encode()).hexdigest()[:16]
    header = f"# lazycv kernel, signature {digest}\n"
    header += "".join(f"# calls {n}: {fp}\n" for n, (_, fp) in sorted(em.globals.items()))
    return header + source


def generate(layout, frame, spellings=None):
    """Emit the body for ``layout`` and wrap it in the backend's kernel ``frame``."""
    em = emit_body(layout, spellings=spellings)
    return em, _with_header(em, frame(em.params, *split_row_invariant(em.lines)), layout.signature)


class BatchSpec:
    """How one kind of item in a batched launch binds its parameters.

    A batched launch runs many items, each a graph with the signature of its *kind* (the same
    chain over different ROIs, frames or scalars; several kinds when different chains read one
    frame). Scalars (sizes, offsets, dyn values) come from two per-item tables: ``TI`` (int64;
    columns 0-3 are H, W, the kind and the slot of the item's first output) and ``TF``
    (float64). A source buffer every item of the kind reads is one argument; sources that
    differ are passed as ``nsel`` arrays chosen per item by an index in ``TI`` (``nsel`` is
    rounded up to a power of two, so batch sizes do not each compile a kernel). Outputs are
    slabs (3-D arrays): item b writes output k into ``slab_k[TI[b, out_cols[k]]]`` — in a
    flush each output its own slab at slot b; in a batch program one slab holds every plane
    at slot b * planes + k, a (B, C, H, W) tensor (lazycv.program).
    """
    __slots__ = ("int_cols", "float_cols", "arrays", "outputs", "prefix",
                 "src_fetch", "int_fetch", "float_fetch", "out_cols")

    def __init__(self, em, shared, nsel, prefix):
        self.prefix = prefix
        self.int_cols, self.float_cols, self.arrays = {}, {}, []
        # what the launch copies into the tables per item, as plain column numbers
        self.src_fetch = []        # (value index, column of y0, column of x0, column of sel or -1)
        self.int_fetch = []        # (value index, dyn index, column)
        self.float_fetch = []      # (value index, dyn index, column, kind)
        col = 4
        for item in em.recipe:
            if item[0] == "src":
                vi = item[1]
                s = f"{prefix}s{vi}"
                self.int_cols[f"{s}_y"], self.int_cols[f"{s}_x"] = col, col + 1
                sel = -1
                col += 2
                if vi in shared:
                    self.arrays.append((s, vi, "shared", 1))
                else:
                    sel = self.int_cols[f"{s}_sel"] = col
                    col += 1
                    self.arrays.append((s, vi, "select", nsel[vi]))
                self.src_fetch.append((vi, col - 2 - (sel >= 0), col - 1 - (sel >= 0), sel))
            else:
                _, vi, k, kind = item
                name = f"{prefix}d{vi}_{k}"
                if kind == "i":
                    self.int_cols[name] = col
                    self.int_fetch.append((vi, k, col))
                    col += 1
                else:
                    self.float_cols[name] = (len(self.float_cols), kind)
                    self.float_fetch.append((vi, k, len(self.float_cols) - 1, kind))
        self.outputs = [f"{prefix}O{k}" for k in range(len(em.layout.outputs))]
        self.out_cols = [3] + list(range(col, col + len(self.outputs) - 1))

    @property
    def n_int(self):
        return 4 + len(self.int_cols) + len(self.outputs) - 1

    def preamble(self):
        pre, params = [], []
        for name, col in self.int_cols.items():
            if not name.endswith("_sel"):
                pre.append(f"{name} = TI[b, {col}]")
        for name, (col, kind) in self.float_cols.items():
            cast = "np.float32" if kind == "f32" else "np.float64"
            pre.append(f"{name} = {cast}(TF[b, {col}])")
        for name, vi, how, n in self.arrays:
            if how == "shared":
                params.append(name)
                continue
            params += [f"{name}__{j}" for j in range(n)]
            if n == 1:
                pre.append(f"{name} = {name}__0")
                continue
            sel = f"_{self.prefix}sel{vi}"
            pre.append(f"{sel} = TI[b, {self.int_cols[name + '_sel']}]")
            pre += _select_tree(sel, name, 0, n)
        for k, slab in enumerate(self.outputs):
            o = f"{self.prefix}o{k}"
            params.append(slab)
            pre += [f"{o} = {slab}[TI[b, {self.out_cols[k]}]]", f"{o}_y = 0", f"{o}_x = 0"]
        return pre, params


def _select_tree(sel, name, lo, hi):
    """Lines setting ``name`` to ``name__<sel>`` for sel in [lo, hi): a balanced tree of tests
    (log2 of the choices deep; a chain of elifs would cost every thread up to n tests)."""
    if hi - lo == 1:
        return [f"{name} = {name}__{lo}"]
    mid = (lo + hi) // 2
    return ([f"if {sel} < {mid}:"] + ["    " + ln for ln in _select_tree(sel, name, lo, mid)]
            + ["else:"] + ["    " + ln for ln in _select_tree(sel, name, mid, hi)])


def generate_batched(kinds, frame, spellings=None):
    """One kernel running items of several kinds; ``kinds`` is a list of (layout, shared, nsel)."""
    ems, specs, branches, params = [], [], [], []
    for j, (layout, shared, nsel) in enumerate(kinds):
        prefix = f"k{j}_" if len(kinds) > 1 else ""
        em = emit_body(layout, prefix, spellings)
        spec = BatchSpec(em, shared, nsel, prefix)
        pre, ps = spec.preamble()
        ems.append(em)
        specs.append(spec)
        branches.append((pre,) + split_row_invariant(em.lines))
        params += ps
    merged = Emitter(None)
    for em in ems:
        merged.globals.update(em.globals)
    key = tuple((lay.signature, tuple(sorted(sh)), tuple(sorted(ns.items()))) for lay, sh, ns in kinds)
    return ems, specs, _with_header(merged, frame(params, branches), key)



class BatchedCompiled:
    """A compiled batched kernel: per kind, how its items bind (``BatchSpec``)."""
    __slots__ = ("fn", "specs", "name")

    def __init__(self, fn, specs, name):
        self.fn, self.specs, self.name = fn, specs, name


class KernelCache:
    """signature -> Compiled, in memory; generated sources on disk for Numba's cache."""

    def __init__(self, backend):
        self.backend = backend
        self._kernels = {}
        self._lock = threading.Lock()

    def get(self, layout, stats):
        hit = self._kernels.get(layout.signature)
        if hit is not None:
            stats["cache_hits"] += 1
            return hit
        with self._lock:
            hit = self._kernels.get(layout.signature)
            if hit is not None:
                return hit
            reduce, out = None, layout.values[layout.outputs[0][0]]
            if not out.is_source and out.op.reduces:
                em, source, reduce = generate_reduce(layout, self.backend)
            else:
                em, source = generate(layout, self.backend.kernel_frame, self.backend.spellings)
            fn, name, from_disk = _load(source, self.backend.name,
                                        {n: self.backend.device_function(f) for n, (f, _) in em.globals.items()})
            self.backend.debug_source(name, source)
            hit = Compiled(fn, tuple(em.recipe), source, len(layout.outputs),
                           dict(em.source_reads), name, reduce)
            self._kernels[layout.signature] = hit
            stats["disk_cache_hits" if from_disk else "compiles"] += 1
            note_compile(layout.signature, from_disk)
            return hit

    def compiled(self, layout):
        """The kernel already compiled for ``layout``, or None (compiles nothing, counts nothing)."""
        return self._kernels.get(layout.signature)

    def get_batched(self, kinds, stats):
        """The batched kernel for ``kinds``: a list of (layout, shared, nsel)."""
        key = ("batch",) + tuple((lay.signature, tuple(sorted(sh)), tuple(sorted(ns.items())))
                                 for lay, sh, ns in kinds)
        hit = self._kernels.get(key)
        if hit is not None:
            stats["cache_hits"] += 1
            return hit
        with self._lock:
            hit = self._kernels.get(key)
            if hit is not None:
                return hit
            ems, specs, source = generate_batched(kinds, self.backend.batched_frame,
                                                  self.backend.spellings)
            injected = {}
            for em in ems:
                injected.update({n: self.backend.device_function(f) for n, (f, _) in em.globals.items()})
            fn, name, from_disk = _load(source, self.backend.name, injected)
            self.backend.debug_source(name, source)
            hit = BatchedCompiled(fn, specs, name)
            self._kernels[key] = hit
            stats["disk_cache_hits" if from_disk else "compiles"] += 1
            note_compile(key, from_disk)
            return hit


def cache_dir():
    d = os.environ.get("LAZYCV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lazycv")
    os.makedirs(d, exist_ok=True)
    return d


def _load(source, target, injected=None):
    """Write ``source`` to a file named by its hash (never rewritten, so Numba's cache index,
    which is keyed on the file's timestamp, stays valid) and import it. ``injected`` globals
    (device functions the body calls) are set before the first call compiles the kernel.
    Returns (kernel, module name, whether a compiled kernel for it is on disk already)."""
    digest = hashlib.sha1((target + "\n" + source).encode()).hexdigest()[:24]
    name = f"lazycv_{target.replace('-', '_')}_{digest}"
    path = os.path.join(cache_dir(), name + ".py")
    for attempt in range(3):
        from_disk = _write_or_touch(path, source)
        mod = sys.modules.get(name)
        if mod is not None:
            break
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod         # (before it runs, as an import does: a cfunc compiled as
        try:                            # the module runs is cached only if its module is found)
            spec.loader.exec_module(mod)
        except Exception:
            sys.modules.pop(name, None)
            # another process evicted the entry between the check and the import (Numba's
            # cache then finds no file: "no locator available"): write it again
            if attempt < 2 and not os.path.exists(path):
                continue
            raise
        break
    for k, v in (injected or {}).items():
        setattr(mod, k, v)
    return mod.kernel, name, from_disk


def _write_or_touch(path, source):
    """The module file holds ``source`` after this (written when missing, truncated or
    corrupt: its new timestamp makes Numba's index stale, so the kernel compiles —
    lazycv/diskcache.py); returns whether a compiled kernel for it was on disk."""
    whole = diskcache.source_matches(path, source)
    from_disk = whole and _compiled_on_disk(path)
    if whole:
        diskcache.touch(path)
    else:
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
        diskcache.written(os.path.dirname(path))
    return from_disk


def _compiled_on_disk(path):
    """True when the module at ``path`` has a compiled kernel on disk: Numba's cache index
    (``__pycache__/<module>.kernel-<line>.py<ver>.nbi``) or lazycv's CUDA cubin record
    (backends/cubins.py); the first launch then loads it instead of compiling."""
    folder, file = os.path.split(os.path.splitext(path)[0])
    return bool(glob.glob(os.path.join(folder, "__pycache__", glob.escape(file) + ".*.nbi"))
                or glob.glob(os.path.join(folder, glob.escape(file) + ".sm*.json")))
