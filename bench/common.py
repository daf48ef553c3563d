"""Timing, bandwidth, table and JSON helpers shared by the lazycv benchmarks.

GPU timing uses CUDA events (torch if it sees a GPU, else cupy), so it
measures device time rather than Python's view of it; CPU timing uses
``time.perf_counter``. Both return the same summary dict so results from
either land in one table and one JSON schema.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

IN_H, IN_W = 1080, 1920
OUT_H, OUT_W = 640, 640

DEFAULT_OUT_DIR = Path(__file__).resolve().parent / "out"


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

def summarize(ms: Sequence[float]) -> dict:
    """Median, p50/p99, mean, min and max of per-iteration times in milliseconds."""
    a = np.asarray(ms, dtype=np.float64)
    return {
        "median_ms": float(np.median(a)),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "mean_ms": float(a.mean()),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
        "iters": int(a.size),
    }


def _gpu_backend(prefer: str | None = None):
    """Pick 'torch' or 'cupy' for CUDA events: torch if it sees a GPU, else cupy."""
    order = [prefer] if prefer else ["torch", "cupy"]
    for name in order:
        try:
            if name == "torch":
                import torch

                if torch.cuda.is_available():
                    return "torch"
            elif name == "cupy":
                import cupy

                if cupy.cuda.runtime.getDeviceCount() > 0:
                    return "cupy"
        except Exception:
            continue
    raise RuntimeError("time_gpu needs torch or cupy with a visible CUDA device")


def time_gpu(fn: Callable[[], Any], warmup: int = 10, iters: int = 100,
             sync_each: bool = True, backend: str | None = None) -> dict:
    """Time a zero-argument GPU callable with CUDA events on the current stream.

    ``sync_each=True`` synchronises after every iteration, so each sample is
    the latency of one call starting from an idle GPU, launch overhead
    included (what a B=1 pipeline sees). ``False`` records all events and
    synchronises once, letting launches overlap (a throughput view).
    Returns :func:`summarize` of the per-iteration milliseconds plus the backend.
    """
    be = _gpu_backend(backend)
    if be == "torch":
        import torch

        make_event = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
        sync = torch.cuda.synchronize
        elapsed = lambda s, e: s.elapsed_time(e)  # noqa: E731
    else:
        import cupy

        make_event = cupy.cuda.Event
        sync = cupy.cuda.Device().synchronize
        elapsed = cupy.cuda.get_elapsed_time

    for _ in range(warmup):
        fn()
    sync()
    starts = [make_event() for _ in range(iters)]
    ends = [make_event() for _ in range(iters)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
        if sync_each:
            e.synchronize()
    sync()
    res = summarize([elapsed(s, e) for s, e in zip(starts, ends)])
    res["timer"] = f"cuda_events:{be}"
    return res


def time_cpu(fn: Callable[[], Any], warmup: int = 3, iters: int = 50) -> dict:
    """Time a zero-argument CPU callable with perf_counter; returns :func:`summarize` (median first)."""
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    res = summarize(ms)
    res["timer"] = "perf_counter"
    return res


# --------------------------------------------------------------------------
# Bandwidth
# --------------------------------------------------------------------------

def host_phases(record: Callable[[int], Sequence[Any]], n: int, sync: Callable[[], Any],
                names: Sequence[str], unit: str = "us") -> str:
    """Where a loop's host time goes, frame by frame: ``record(i)`` (the recorded calls of frame
    i, returning its pending results), their ``lazycv.materialize`` and their release, over
    ``n`` frames back to back (``sync`` once at the end). One line: the wall time a frame and
    each phase's p50 (p99) in ``unit`` ("us" or "ms"), ``names`` the phases' names."""
    import lazycv
    scale, digits = (1e6, 1) if unit == "us" else (1e3, 3)
    t = np.zeros((n, 3))
    clock = time.perf_counter
    t_all = clock()
    for i in range(n):
        t0 = clock()
        results = record(i)
        t1 = clock()
        lazycv.materialize(*results)
        t2 = clock()
        del results
        t[i] = (t1 - t0, t2 - t1, clock() - t2)
    sync()
    wall = (clock() - t_all) / n * scale
    t *= scale
    return (f"{wall:.{digits}f} {unit}/frame wall; per frame p50 (p99) {unit}: "
            + ", ".join(f"{k} {np.percentile(t[:, j], 50):.{digits}f} ({np.percentile(t[:, j], 99):.{digits}f})"
                        for j, k in enumerate(names)))


def w1_bytes(batch: int) -> int:
    """Compulsory DRAM traffic of W1: read the uint8 BGR frames once, write the float32 planes once."""
    return batch * (IN_H * IN_W * 3 + 3 * OUT_H * OUT_W * 4)


def effective_bandwidth(nbytes: float, ms: float) -> float:
    """GB/s (1e9 bytes/s) achieved if ``nbytes`` moved in ``ms`` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


class Table:
    """Aligned plain-text table: text left-aligned, numbers right-aligned.

    >>> t = Table(["peer", "ms"]); t.add("cv2", 1.5); print(t)  # doctest: +SKIP
    """

    def __init__(self, columns: Iterable[str], float_fmt: str = "{:.3f}"):
        self.columns = list(columns)
        self.float_fmt = float_fmt
        self.rows: list[list[Any]] = []

    def add(self, *values: Any) -> "Table":
        if len(values) != len(self.columns):
            raise ValueError(f"expected {len(self.columns)} values, got {len(values)}")
        self.rows.append(list(values))
        return self

    def _cell(self, v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, (float, np.floating)):
            return self.float_fmt.format(float(v))
        return str(v)

    def render(self) -> str:
        cells = [[self._cell(v) for v in row] for row in self.rows]
        numeric = [bool(self.rows) and all(_is_number(r[i]) or r[i] is None for r in self.rows)
                   for i in range(len(self.columns))]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]

        def line(vals):
            return "  ".join(v.rjust(w) if num else v.ljust(w)
                             for v, w, num in zip(vals, widths, numeric)).rstrip()

        out = [line(self.columns), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in cells]
        return "\n".join(out)

    __str__ = render

    def print(self) -> None:
        print(self.render(), flush=True)


def out_dir() -> Path:
    """Where results go: $OUT if set (the device machine's return folder), else bench/out/."""
    env = os.environ.get("OUT")
    return Path(env) if env else DEFAULT_OUT_DIR


def _json_default(o: Any):
    """Let numpy scalars/arrays and paths through json.dump."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON; a bare file name goes into :func:`out_dir`.

    Parent folders are created. Returns the path written.
    """
    p = Path(path)
    if not p.is_absolute() and p.parent == Path("."):
        p = out_dir() / p
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w") as f:
        json.dump(obj, f, indent=2, default=_json_default)
        f.write("\n")
    return p


# --------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------

def _version(mod: str) -> str | None:
    try:
        m = __import__(mod)
        return getattr(m, "__version__", "unknown")
    except Exception:
        return None


def device_info() -> dict:
    """What the numbers were measured on: GPU name (via torch, else cupy), CPUs, library versions."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "gpu": None,
        "versions": {m: _version(m) for m in ("numpy", "numba", "cv2", "torch", "cupy")},
    }
    try:
        import torch

        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["cuda_torch"] = torch.version.cuda
    except Exception:
        pass
    if info["gpu"] is None:
        try:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else name
        except Exception:
            pass
    try:
        import cv2

        info["cv2_threads"] = cv2.getNumThreads()
    except Exception:
        pass
    try:
        import numba

        info["numba_threads"] = numba.get_num_threads()
    except Exception:
        pass
    return info


class HostWatch:
    """What else the host did while a block ran: time in Python's cyclic garbage collector
    (and how many full collections), and new device buffers lazycv's pool had to allocate.
    Benchmarks report it beside lazycv's times so a slow row can be explained."""

    def __init__(self):
        self.gc_ms, self.full_collections, self.pool_misses = 0.0, 0, 0

    def __enter__(self):
        import gc
        import time
        self._t0 = 0.0

        def on_gc(phase, info, self=self):
            if phase == "start":
                self._t0 = time.perf_counter()
            else:
                self.gc_ms += (time.perf_counter() - self._t0) * 1e3
                self.full_collections += info["generation"] == 2
        self._cb = on_gc
        gc.callbacks.append(on_gc)
        self._pool = None
        try:
            from lazycv.runtime import STATE
            self._pool = getattr(STATE.backend, "buffers", None)
        except Exception:  # noqa: BLE001 - lazycv not in use
            pass
        if self._pool is not None:
            new = self._new = self._pool._new

            def counting(shape, dtype, self=self):
                self.pool_misses += 1
                return new(shape, dtype)
            self._pool._new = counting
        return self

    def __exit__(self, *exc):
        import gc
        gc.callbacks.remove(self._cb)
        if self._pool is not None:
            self._pool._new = self._new
        return False

    def as_dict(self):
        return {"gc_ms": round(self.gc_ms, 3), "full_collections": self.full_collections,
                "pool_misses": self.pool_misses}
