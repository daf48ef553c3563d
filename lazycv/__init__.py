"""lazycv: unchanged cv2.cuda code, recorded lazily and run as fused Numba kernels.

    import cv2, lazycv
    lazycv.enable()            # or: with lazycv.enabled(): ...
    ... ordinary cv2.cuda code ...
"""
import contextlib

from . import ops as _ops  # noqa: F401  (registers every op and cv2.cuda function)
from . import recipes as _recipes
from . import runtime as _runtime
from .facade import Event, GpuMat, Stream  # noqa: F401
from .facade import patch as _patch
from .runtime import STATE as _STATE
from .errors import StsBadArg as _StsBadArg, cv_error as _cv_error
# layer 2 (pipelines) and layer 3 (user ops); docs/layer2-compose.md, docs/layer3-ops.md
from .compose import (Pipeline, compose, convert, crop, cvt_color, normalize, read, resize,  # noqa: F401
                      to_planar, write)
from .userops import gather_op, op  # noqa: F401
from .ops.fallback import FallbackWarning  # noqa: F401
from .errors import PerformanceWarning  # noqa: F401
from . import log as _log  # noqa: F401  (the "lazycv" logger's NullHandler; docs/observability.md)
from .facade.patch import supported  # noqa: F401
# media patterns: streams, the streamed frame loop, delay buffers, graphs (docs/media.md)
from .media import DelayBuffer, StreamedLoop, on_stream  # noqa: F401
from .graphs import Graph, capture  # noqa: F401
from .streams import tracing as trace_streams  # noqa: F401

__version__ = "0.1.0"
RESIZE_MAPPINGS = ("opencv-cpu", "opencv-cuda")
__all__ = ["enable", "disable", "enabled", "is_enabled", "settings", "backend", "materialize", "stats",
           "reset_stats", "explain", "GpuMat", "Stream", "Event",
           "compose", "Pipeline", "read", "crop", "resize", "cvt_color", "convert", "normalize",
           "to_planar", "write", "op", "gather_op", "FallbackWarning", "PerformanceWarning", "supported",
           "StreamedLoop", "DelayBuffer", "on_stream", "capture", "Graph", "trace_streams"]


def _configure(backend, fuse, resize_mapping):
    if resize_mapping not in RESIZE_MAPPINGS:
        raise ValueError(f"lazycv: resize_mapping must be one of {RESIZE_MAPPINGS}, got {resize_mapping!r}")
    _runtime.flush(everyone=True)       # pending work runs under the settings it was recorded with
    _runtime.select_backend(backend)
    _STATE.fuse = bool(fuse)
    _STATE.resize_mapping = resize_mapping
    _recipes.forget()                   # (op functions read these settings)


def enable(backend=None, fuse=True, resize_mapping="opencv-cpu"):
    """Install lazycv as cv2.cuda. backend: None (auto: "cuda" when a GPU is usable, else
    "cpu"), "cuda", "cpu" or "cuda-sim". fuse=False runs one kernel per op (eager), with the
    same numerics. Calling it again only changes the settings."""
    with _STATE.lock:
        _configure(backend, fuse, resize_mapping)
        if not _STATE.enabled:
            _patch.install()
            _STATE.enabled = True


def disable():
    """Compute pending work and restore cv2 exactly as it was before enable()."""
    with _STATE.lock:
        _runtime.flush(everyone=True)
        while _patch.depth():
            _patch.uninstall()
        _STATE.enabled = False


@contextlib.contextmanager
def enabled(backend=None, fuse=True, resize_mapping="opencv-cpu"):
    """Context manager form of enable(); nests, and restores the previous state on exit, also
    when the block raises."""
    with _STATE.lock:
        prev = (_STATE.enabled, _STATE.backend_name, _STATE.fuse, _STATE.resize_mapping)
        enable(backend, fuse, resize_mapping)
    try:
        yield
    finally:
        with _STATE.lock:
            was_enabled, name, fuse_, mapping = prev
            if was_enabled:
                _configure(name, fuse_, mapping)
            else:
                disable()
                _configure(name, fuse_, mapping) if name else None


def is_enabled():
    return _STATE.enabled


def settings():
    """The active settings: {"enabled", "backend", "fuse", "resize_mapping"}."""
    return {"enabled": _STATE.enabled, "backend": _STATE.backend_name, "fuse": _STATE.fuse,
            "resize_mapping": _STATE.resize_mapping}


def backend():
    """The active backend's name: "cuda", "cpu" or "cuda-sim"."""
    _runtime.backend()
    return _STATE.backend_name


def materialize(*mats):
    """Compute these pending results now (planned together with the calling thread's other
    pending sinks)."""
    with _STATE.lock:
        hot = _runtime.HOTPATH
        # (in C: the loop below, and runtime.flush's C path too unless an NVTX range marks it)
        pend = None if hot is None else hot.pending_of(mats) if _log.NVTX_ON else hot.flush_mats(mats)
        if pend is not None:
            if pend:
                _runtime.flush(pend)
            return mats[0] if len(mats) == 1 else mats
        flat, stack = [], list(reversed(mats))
        while stack:                       # nested lists: e.g. a batch of split planes
            m = stack.pop()
            if isinstance(m, (list, tuple)):
                stack.extend(reversed(m))
            else:
                flat.append(m)
        pend = _runtime.pending_for([m for m in flat if isinstance(m, GpuMat)])
        if pend:
            _runtime.flush(pend)
    return mats[0] if len(mats) == 1 else mats


def stats():
    """Counters since the last reset_stats(): kernels_launched, ops_recorded, ops_fused,
    compiles, disk_cache_hits, cache_hits, fallbacks, bytes_h2d, bytes_d2h, flushes, plan_hits,
    program_hits — what each counts: docs/observability.md."""
    with _STATE.lock:
        _runtime.count_recorded()
        return dict(_STATE.stats)


def reset_stats():
    with _STATE.lock:
        _runtime.count_recorded()
        for k in _STATE.stats:
            _STATE.stats[k] = 0
        _STATE.fused_after = _STATE.seq_counted


def explain(*mats, format="text"):
    """The kernels that computing these pending results would launch (nothing runs).
    format: "text", "dot" (Graphviz source) or "svg" (a picture, laid out without Graphviz)."""
    from . import planner
    from .report import explain_dot, explain_plan, explain_svg
    if format not in ("text", "dot", "svg"):
        raise ValueError("lazycv.explain: format must be 'text', 'dot' or 'svg'")
    with _STATE.lock:
        flat, todo = [], list(mats)
        while todo:                           # nested lists too (a batch of split planes)
            m = todo.pop(0)
            if isinstance(m, (list, tuple)):
                todo[:0] = list(m)
            elif isinstance(m, GpuMat):
                flat.append(m)
            else:                             # (merge without dst returns a numpy array)
                raise _cv_error("lazycv::explain", f"expected GpuMats (or lists of them), got "
                                                   f"{type(m).__name__}", _StsBadArg)
        pend = _runtime.pending_for(flat)
        index = {id(m): i for i, m in enumerate(flat)}
        values, names = [], {}
        for m in pend:
            if id(m._node) not in names:
                i = index.get(id(m))
                names[id(m._node)] = f"result {i}" if i is not None else "a write into a result's memory"
                values.append(m._node)
        kernels = planner.plan(values, _STATE.fuse) if pend else []
        if format == "dot":
            return explain_dot(kernels, names)
        if format == "svg":
            return explain_svg(kernels, names)
        by_node = {id(m._node): [m] for m in pend}
        launches = sum(len(phase) for phase in _runtime.launch_plan(kernels, by_node)) if kernels else 0
        return explain_plan(kernels, names, launches)
