"""What lazycv tells a user while it runs: the "lazycv" logger, PerformanceWarning (recompile
storms, fallbacks in hot loops), stats() counters that mean what they say, explain() in the
user's words and order, NVTX ranges."""
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import cv2
import numpy as np
import pytest

import lazycv
from lazycv import log

from .conftest import rand_image, upload

ROOT = Path(__file__).resolve().parents[1]


def test_logger_is_silent_by_default_and_lazycv_debug_goes_through_it(rng, monkeypatch, caplog):
    logger = logging.getLogger("lazycv")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    g = upload(rand_image(rng, 5, 7, 3, np.uint8))
    monkeypatch.setenv("LAZYCV_DEBUG", "1")
    with caplog.at_level(logging.DEBUG, logger="lazycv"):
        cv2.cuda.cvtColor(cv2.cuda.add(g, 1), cv2.COLOR_BGR2RGB).download()
    plans = [r.getMessage() for r in caplog.records if r.name == "lazycv" and "lazycv plan" in r.getMessage()]
    assert plans and "add(scalar 1) -> cvtColor(BGR2RGB)" in plans[0]


def test_a_recompile_storm_warns_once(rng, monkeypatch):
    monkeypatch.setattr(log, "_compiles", log._Burst(2, 60.0))

    @lazycv.op(name="storm_probe_op")
    def storm_probe(v):
        return v + 1
    with pytest.warns(lazycv.PerformanceWarning, match="storm_probe_op") as got:
        for depth in (np.uint8, np.uint16, np.int16, np.float32):       # a new kernel each time
            storm_probe(upload(rand_image(rng, 3, 4, 1, depth))).download()
    assert len([w for w in got if issubclass(w.category, lazycv.PerformanceWarning)]) == 1
    assert got[0].filename == __file__                   # points at the user's line


def test_a_fallback_in_a_hot_loop_warns(rng, monkeypatch):
    monkeypatch.setattr(log, "_fallbacks", log._Burst(3, 10.0))
    img = upload((rand_image(rng, 6, 8, 1, np.uint8) > 128).astype(np.uint8) * 255)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for _ in range(5):
            cv2.cuda.connectedComponents(img)
    perf = [w for w in got if issubclass(w.category, lazycv.PerformanceWarning)]
    assert len(perf) == 1 and "connectedComponents" in str(perf[0].message)
    assert lazycv.stats()["fallbacks"] == 5


def w1(g, std):
    r = cv2.cuda.resize(g, (8, 6))
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.divide(cv2.cuda.subtract(f, (0.5, 0.5, 0.5)), std)
    return cv2.cuda.split(f)


@pytest.mark.sim
def test_ops_fused_never_exceeds_ops_recorded(rng):
    g = upload(rand_image(rng, 10, 12, 3, np.uint8))
    std = cv2.cuda_GpuMat(6, 8, cv2.CV_32FC3)
    std.setTo((0.2, 0.3, 0.4))
    for _ in range(4):                                   # first flush, plan cache, flush program
        lazycv.reset_stats()
        [p.download() for p in w1(g, std)]
        st = lazycv.stats()
        # resize, cvtColor, convertTo, subtract, divide, 3 planes (and, recorded but not counted
        # as fused, the read of setTo's constant as values once it is known)
        assert st["ops_fused"] == 8 and st["ops_recorded"] in (8, 9), st
    # an op two kernels both recompute (a cheap producer of two multi-tap consumers) counts once
    lazycv.reset_stats()
    a = cv2.cuda.add(g, 3)
    outs = [cv2.cuda.resize(a, (5, 4)), cv2.cuda.resize(a, (7, 3))]
    [o.download() for o in outs]
    st = lazycv.stats()
    assert st["ops_fused"] <= st["ops_recorded"] == 3, st
    # a call that records several ops (a separable filter's row and column passes) counts each
    lazycv.reset_stats()
    blur = cv2.cuda.createGaussianFilter(cv2.CV_8UC1, cv2.CV_8UC1, (3, 3), 1.0)
    gray = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY)
    blur.apply(cv2.cuda.add(gray, 1)).download()
    st = lazycv.stats()
    assert 0 < st["ops_fused"] <= st["ops_recorded"], st


def _run_py(code, env):
    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env)
    p = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


COUNT = """
import cv2, numpy as np, lazycv
lazycv.enable(backend="cpu")
g = cv2.cuda_GpuMat(); g.upload(np.full((5, 6, 3), 7, np.uint8))
cv2.cuda.multiply(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY), 2.5).download()
s = lazycv.stats()
print(s["compiles"], s["disk_cache_hits"])
"""


def test_disk_cache_hits_are_told_apart_from_compiles(tmp_path):
    env = {"LAZYCV_CACHE_DIR": str(tmp_path / "kernels"), "LAZYCV_BACKEND": "cpu"}
    assert _run_py(COUNT, env).split() == ["1", "0"]        # a new cache: compiled
    assert _run_py(COUNT, env).split() == ["0", "1"]        # a new process: from the disk


def test_nvtx_ranges_around_flushes_and_launches(tmp_path):
    (tmp_path / "nvtx.py").write_text(
        "import contextlib\nRANGES = []\n"
        "@contextlib.contextmanager\ndef annotate(message=None, domain=None, **kw):\n"
        "    RANGES.append((domain, message))\n    yield\n")
    code = COUNT + "import nvtx; print(sorted(set(nvtx.RANGES)))"
    out = _run_py(code, {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "LAZYCV_BACKEND": "cpu",
                         "LAZYCV_CACHE_DIR": str(tmp_path / "kernels")})
    assert "('lazycv', 'lazycv flush')" in out and "('lazycv', 'lazycv launch')" in out


@pytest.mark.sim
def test_explain_in_execution_order_with_cv2_names(rng):
    g = upload(rand_image(rng, 20, 24, 3, np.uint8))
    r = cv2.cuda.resize(cv2.cuda.resize(g, (11, 9)), (8, 6))
    out = cv2.cuda.threshold(cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY), 100, 255, cv2.THRESH_BINARY)[1]
    text = lazycv.explain(out)
    k0, k1 = text.index("kernel 0:"), text.index("kernel 1:")
    assert k0 < text.index("resize(11x9, INTER_LINEAR)") < k1
    assert k1 < text.index("resize(8x6, INTER_LINEAR) -> cvtColor(BGR2GRAY) -> threshold(100, 255, THRESH_BINARY)")
    assert "(kernel 0 output)" in text and "[" not in text.split("ops:")[1].split("\n")[0]
