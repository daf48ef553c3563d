"""Generate one Python kernel per fused group, compile it once per structure, cache it.

A kernel's identity is its *signature*: the ops, their static parameters, dtypes, channel
counts and the shape of the graph, never sizes, offsets, scalars or pointers. Those are
kernel arguments, gathered at launch time by the kernel's *recipe*, so a new frame size or a
new mean value reuses the compiled kernel.

The generated source is written to a file in the cache folder and imported, which lets
Numba's on-disk cache (``cache=True``) serve the next process.
"""
import hashlib
import importlib.util
import os
import sys
import threading

import numpy as np

from ._types import DEPTH_DTYPE, is_float
from .ir import resolved

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
    """
    __slots__ = ("values", "index", "signature", "outputs")

    def __init__(self, outputs):
        self.values, self.index = [], {}
        sig = []
        stack = [(resolved(v), False) for v, _ in reversed(outputs)]
        while stack:
            v, expanded = stack.pop()
            if id(v) in self.index:
                continue
            if v.is_source:
                self._add(v, sig, ("S", v.depth, v.cn))
                continue
            if not expanded:
                stack.append((v, True))
                for i in reversed(v.inputs):
                    i = resolved(i)
                    if id(i) not in self.index:
                        stack.append((i, False))
                continue
            ins = tuple(self.index[id(resolved(i))] for i in v.inputs)
            self._add(v, sig, (v.op.name, v.static, v.depth, v.cn, ins))
        self.outputs = [(self.index[id(resolved(v))], cut) for v, cut in outputs]
        sig.append(tuple((i, self.values[i].depth, self.values[i].cn) for i, _ in self.outputs))
        self.signature = tuple(sig)

    def _add(self, v, sig, key):
        self.index[id(v)] = len(self.values)
        self.values.append(v)
        sig.append(key)


class Emitter:
    """The context ops emit into: fresh names, kernel arguments, and reads of other values."""

    def __init__(self, layout):
        self.layout = layout
        self.lines = []
        self.params = ["H", "W"]
        self.recipe = []            # how to fetch each parameter after H, W at launch
        self._memo = {}
        self._named = {}
        self._n = 0
        self.source_reads = {}      # value index -> True when every read is at (y, x)

    def let(self, expr, prefix="t"):
        self._n += 1
        name = f"_{prefix}{self._n}"          # "_" keeps temporaries apart from argument names
        self.lines.append(f"{name} = {expr}")
        return name

    def dyn(self, node, k, kind):
        """Name of the kernel argument carrying ``node.dyn[k]`` (kind: 'i', 'f32' or 'f64')."""
        vi = self.layout.index[id(node)]
        key = ("d", vi, k)
        name = self._named.get(key)
        if name is None:
            name = f"d{vi}_{k}"
            self._named[key] = name
            self.params.append(name)
            self.recipe.append(("dyn", vi, k, kind))
        return name

    def _source_args(self, vi):
        key = ("s", vi)
        if key not in self._named:
            self._named[key] = f"s{vi}"
            self.params += [f"s{vi}", f"s{vi}_y", f"s{vi}_x"]
            self.recipe.append(("src", vi))
        return f"s{vi}"

    def read(self, value, y, x):
        """Channel variables of ``value`` at pixel (y, x), computing it here if needed."""
        value = resolved(value)
        vi = self.layout.index[id(value)]
        key = (vi, y, x)
        got = self._memo.get(key)
        if got is not None:
            return got
        if value.is_source:
            s = self._source_args(vi)
            base = (y, x) == ("y", "x")
            self.source_reads[vi] = self.source_reads.get(vi, True) and base
            row = self.let(f"{s}_y + {y}", "r")
            col = self.let(f"({s}_x + {x}) * {value.cn}", "c")
            load = "{}" if is_float(value.depth) else "np.int64({})"
            got = [self.let(load.format(f"{s}[{row}, {col} + {c}]"), "v") for c in range(value.cn)]
        else:
            exprs = value.op.emit(self, value, y, x)
            assert len(exprs) == value.cn, (value, exprs)
            got = [self.let(typed(e, value.depth), "v") for e in exprs]
        self._memo[key] = got
        return got


class Compiled:
    """A compiled kernel and the recipe that turns a matching graph into its arguments."""
    __slots__ = ("fn", "recipe", "source", "n_outputs", "source_reads", "name")

    def __init__(self, fn, recipe, source, n_outputs, source_reads, name):
        self.fn, self.recipe, self.source = fn, recipe, source
        self.n_outputs, self.source_reads, self.name = n_outputs, source_reads, name


def generate(layout, frame):
    """Emit the body for ``layout`` and wrap it in the backend's kernel ``frame``."""
    em = Emitter(layout)
    outs = []
    for vi, _ in layout.outputs:
        outs.append(em.read(layout.values[vi], "y", "x"))
    # every load happens before the first store, so an in-place op at (y, x) is safe
    for k, (vi, _) in enumerate(layout.outputs):
        v = layout.values[vi]
        em.params += [f"o{k}", f"o{k}_y", f"o{k}_x"]
        em.lines.append(f"or{k} = o{k}_y + y")
        em.lines.append(f"oc{k} = (o{k}_x + x) * {v.cn}")
        for c, var in enumerate(outs[k]):
            em.lines.append(f"o{k}[or{k}, oc{k} + {c}] = {var}")
    return em, frame(em.params, em.lines)


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
            em, source = generate(layout, self.backend.kernel_frame)
            fn, name = _load(source, self.backend.name)
            self.backend.debug_source(name, source)
            hit = Compiled(fn, tuple(em.recipe), source, len(layout.outputs),
                           dict(em.source_reads), name)
            self._kernels[layout.signature] = hit
            stats["compiles"] += 1
            return hit


def cache_dir():
    d = os.environ.get("LAZYCV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lazycv")
    os.makedirs(d, exist_ok=True)
    return d


def _load(source, target):
    """Write ``source`` to a file named by its hash (never rewritten, so Numba's cache index,
    which is keyed on the file's timestamp, stays valid) and import it."""
    digest = hashlib.sha1((target + "\n" + source).encode()).hexdigest()[:24]
    name = f"lazycv_{target.replace('-', '_')}_{digest}"
    path = os.path.join(cache_dir(), name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return mod.kernel, name
