"""Shared fixtures: every test runs with lazycv enabled on the backend named by LAZYCV_BACKEND
(cpu by default; cuda-sim under NUMBA_ENABLE_CUDASIM=1), and compares with CPU OpenCV."""
import os
import threading
import zlib

import cv2
import numpy as np
import pytest

import lazycv

BACKEND = os.environ.get("LAZYCV_BACKEND", "cpu")
SIM = BACKEND == "cuda-sim"

DEPTHS = {cv2.CV_8U: np.uint8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16, cv2.CV_32F: np.float32}


def pytest_collection_modifyitems(config, items):
    # Under the simulator only tests marked `sim` are meant to run (they use tiny images).
    if SIM:
        for item in items:
            if "sim" not in item.keywords:
                item.add_marker(pytest.mark.skip(reason="CPU-backend test; the simulator run selects -m sim"))


@pytest.fixture(autouse=True)
def lazy():
    """lazycv enabled on the test backend, eager=False; restored afterwards."""
    with lazycv.enabled(backend=BACKEND):
        lazycv.reset_stats()
        yield lazycv


@pytest.fixture
def rng(request):
    """A generator seeded by the test's id: the same data in every run (``hash`` of a string
    changes from process to process, which made a failure unrepeatable)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def rand_image(rng, rows, cols, cn, dtype):
    """Random pixels covering the depth's range (floats in [-1, 2))."""
    dt = np.dtype(dtype)
    shape = (rows, cols) if cn == 1 else (rows, cols, cn)
    if dt.kind == "f":
        return (rng.random(shape) * 3 - 1).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dt)


def run_in_threads(work, n, timeout=120):
    """``work(i)`` for i in range(n), each in a thread of its own, at once; the first exception
    one of them raised is raised here, and a thread still running after ``timeout`` fails."""
    errors = []

    def guarded(i):
        try:
            work(i)
        except BaseException as e:      # noqa: BLE001 - raised by the caller
            errors.append(e)
    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]


def upload(arr):
    g = cv2.cuda_GpuMat()
    g.upload(np.ascontiguousarray(arr))
    return g


def assert_close(got, ref, tol=0, rel=None, what=""):
    """Integers: |got - ref| <= tol. Floats: within ``tol`` absolute or ``rel`` relative."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} != {ref.dtype}"
    if ref.dtype.kind == "f":
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        same_nan = np.isnan(g64) == np.isnan(r64)
        assert same_nan.all(), f"{what}: NaN positions differ"
        finite = np.isfinite(r64)
        assert (g64[~finite] == r64[~finite]).all() if (~finite & ~np.isnan(r64)).any() else True
        err = np.abs(g64[finite] - r64[finite])      # (inf - inf outside them would warn)
        bound = tol + (rel or 0) * np.abs(r64)[finite]
        assert (err <= bound).all(), f"{what}: max abs err {err.max() if err.size else 0} (tol {tol}, rel {rel})"
    else:
        err = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        assert err.max(initial=0) <= tol, f"{what}: max err {err.max()} > {tol} ({(err > tol).sum()} pixels)"


def run_both(fn):
    """Run ``fn()`` (which records cv2.cuda calls and downloads) fused and eager; both results."""
    with lazycv.enabled(backend=BACKEND, fuse=True):
        fused = fn()
    with lazycv.enabled(backend=BACKEND, fuse=False):
        eager = fn()
    return fused, eager


def assert_fused_equals_eager(fused, eager):
    """SPEC §3: integer outputs bit-exact, float outputs within 1e-6 relative."""
    if isinstance(fused, (list, tuple)):
        assert len(fused) == len(eager)
        for f, e in zip(fused, eager):
            assert_fused_equals_eager(f, e)
        return
    f, e = np.asarray(fused), np.asarray(eager)
    assert f.dtype == e.dtype and f.shape == e.shape
    if f.dtype.kind == "f":
        np.testing.assert_allclose(f, e, rtol=1e-6, atol=1e-30, equal_nan=True)
    else:
        np.testing.assert_array_equal(f, e)
