"""samples/ and the demo run unchanged (each in its own process, as a user runs them, on small inputs)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "samples").glob("*.py"))


def _run(args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("LAZYCV_BACKEND", "cpu")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


# each checks its own result against CPU OpenCV and exits non-zero (an AssertionError) if it differs
CHECKED = {"preprocess_for_model.py", "detector_crops.py", "thumbnails.py", "histogram_threshold.py",
           "align_filters_warps.py", "nv12_to_planar.py", "multi_gpu.py", "ray_preprocess.py"}


@pytest.mark.parametrize("script", SAMPLES, ids=[s.name for s in SAMPLES])
def test_sample_runs(script):
    p = _run([str(script)])
    assert p.returncode == 0, p.stderr
    assert "kernels_launched" in p.stdout
    if script.name in CHECKED:
        assert "equal to CPU OpenCV" in p.stdout and "Warning" not in p.stderr, p.stdout + p.stderr


def test_the_real_world_samples_are_all_here():
    assert CHECKED <= {s.name for s in SAMPLES}


def test_demo_runs_and_matches_cpu_opencv():
    p = _run(["-m", "lazycv", "demo", "--frames", "2"])
    assert p.returncode == 0, p.stderr
    lines = [ln.split() for ln in p.stdout.splitlines() if ln.startswith(("eager", "fused"))]
    assert [ln[0] for ln in lines] == ["eager", "fused"]
    eager_kernels, fused_kernels = float(lines[0][1]), float(lines[1][1])
    assert fused_kernels == 1.0 and eager_kernels == 8.0
    assert all(float(ln[4]) <= 1e-5 for ln in lines)       # max error vs CPU OpenCV
