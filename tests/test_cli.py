"""The command line (`python -m lazycv ...`), run as a user runs it: each command in its own
process; every error is one line on stderr, no traceback, a non-zero exit."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, env=None, cwd=None, timeout=240):
    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("NUMBA_ENABLE_CUDASIM", None)
    e.pop("LAZYCV_BACKEND", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "lazycv", *args], cwd=cwd or ROOT, env=e, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(p, *words):
    assert p.returncode != 0, p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("lazycv ") and "error" in lines[0], lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_info_has_what_a_bug_report_needs():
    p = cli("info", "--json")
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)
    for key in ("lazycv", "numpy", "numba", "numba-cuda", "opencv", "backend", "device", "kernel cache"):
        assert facts[key], key
    import cv2
    assert facts["opencv"].startswith(cv2.__version__)
    assert "CUDA" in facts["opencv"]                       # with or without CUDA, said either way
    assert facts["backend"].split()[0] in ("cpu", "cuda") and "(" in facts["backend"]   # and why
    text = cli("info")
    assert text.returncode == 0 and "backend:" in text.stdout and "kernel cache:" in text.stdout


def test_ops_lists_each_cv2_cuda_name_with_its_status():
    p = cli("ops", "--json")
    assert p.returncode == 0, p.stderr
    table = json.loads(p.stdout)
    assert table["resize"] == "fused" and table["cvtColor"] == "fused"
    assert set(table.values()) <= {"fused", "fallback", "unsupported"}
    import lazycv
    assert table == lazycv.supported()                     # from the code, not a list kept by hand
    fused = cli("ops", "--status", "fused")
    assert "  resize" in fused.stdout and "unsupported (" not in fused.stdout


@pytest.mark.parametrize("args, words", [
    (("demo", "--frames", "0"), ("--frames", "1 or more")),
    (("demo", "--frames", "-5"), ("--frames", "1 or more")),
    (("demo", "--frames", "many"), ("whole number",)),
    (("demo", "--backend", "tpu"), ("--backend",)),
    (("frobnicate",), ("invalid choice",)),
    (("explain", "no_such_script.py"), ("no such script",)),
    (("bench", "--workloads", "w9"), ("unknown w9",)),
    (("bench", "--backend", "cuda-sim"), ("simulator",)),
    (("cache", "wipe"), ("invalid choice",)),
])
def test_bad_arguments_are_one_clear_line(args, words):
    assert_one_line_error(cli(*args), *words)


def test_cuda_backend_without_a_gpu_is_one_line():
    from lazycv.backends import cuda_usable
    if cuda_usable():
        pytest.skip("a GPU is usable here")
    assert_one_line_error(cli("demo", "--backend", "cuda"), "GPU", "--backend cpu")


def test_demo_in_the_simulator_is_bounded_and_exact():
    """The simulator runs tiny frames (it runs each GPU thread in Python), without the user
    setting NUMBA_ENABLE_CUDASIM."""
    p = cli("demo", "--backend", "cuda-sim", timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {ln.split()[0]: ln.split() for ln in p.stdout.splitlines() if ln.startswith(("eager", "fused"))}
    assert float(rows["fused"][1]) == 1.0 and float(rows["eager"][1]) == 8.0
    assert all(float(r[4]) <= 1e-5 for r in rows.values())


SCRIPT = """
import sys
import cv2, numpy as np
frame = np.random.default_rng(0).integers(0, 256, (24, 32, 3), dtype=np.uint8)
g = cv2.cuda_GpuMat(); g.upload(frame)
small = cv2.cuda.resize(g, (12, 10))
rgb = cv2.cuda.cvtColor(small, cv2.COLOR_BGR2RGB)
out = cv2.cuda.multiply(rgb, 0.5).download()
ref = cv2.multiply(cv2.cvtColor(cv2.resize(frame, (12, 10)), cv2.COLOR_BGR2RGB), 0.5)
assert np.abs(out.astype(int) - ref).max() <= 1
if len(sys.argv) > 1 and sys.argv[1] == "fail":
    cv2.cuda.add(g, g).download()
    raise RuntimeError("the script's own error")
"""


def test_explain_runs_a_script_and_draws_its_last_flush(tmp_path):
    script = tmp_path / "pipeline.py"
    script.write_text(SCRIPT)
    p = cli("explain", str(script), "--out", str(tmp_path / "plan.svg"), "--backend", "cpu", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    svg = (tmp_path / "plan.svg").read_text()
    assert svg.startswith("<?xml") and "</svg>" in svg
    # cv2 names and parameters, in execution order
    assert "resize(12x10, INTER_LINEAR) -> cvtColor(BGR2RGB) -> multiply(scalar 0.5)" in p.stdout
    assert "cvtColor(BGR2RGB)" in svg


def test_explain_of_a_failing_script_writes_its_plans_then_one_line(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(SCRIPT)
    p = cli("explain", str(script), "fail", "--out", str(tmp_path / "plan.svg"), "--flushes", "2",
            "--backend", "cpu", cwd=tmp_path)
    assert_one_line_error(p, "RuntimeError", "the script's own error")
    assert (tmp_path / "plan-1.svg").exists() and (tmp_path / "plan-2.svg").exists()
    assert "add(image, image)" in p.stdout


def test_cache_info_and_clear(tmp_path):
    env = {"LAZYCV_CACHE_DIR": str(tmp_path / "kernels")}
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "lazycv_cpu_0123.py").write_text("# a kernel\n")
    (tmp_path / "kernels" / "users_own_file.txt").write_text("kept")
    p = cli("cache", "info", env=env)
    assert p.returncode == 0 and "1 kernel(s)" in p.stdout and str(tmp_path) in p.stdout
    p = cli("cache", "clear", env=env)
    assert p.returncode == 0 and "removed 1 file(s)" in p.stdout
    assert sorted(os.listdir(tmp_path / "kernels")) == ["users_own_file.txt"]   # only lazycv's files


def test_bench_quick_writes_a_table_json_and_progress(tmp_path):
    p = cli("bench", "--quick", "--workloads", "w2,c1", "--repeats", "2", "--backend", "cpu",
            "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "bench [1/4]" in p.stderr and "bench [4/4]" in p.stderr          # progress
    data = json.loads((tmp_path / "lazycv-bench.json").read_text())
    assert data["meta"]["backend"] == "cpu"
    modes = {(r["workload"], r["mode"]) for r in data["results"]}
    assert modes == {("w2", "loop fused"), ("w2", "compose"), ("c1", "cpu opencv"), ("c1", "loop fused")}
    assert all(r["median_ms"] > 0 for r in data["results"])
    assert "median ms" in p.stdout
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "lazycv-bench.png").read_bytes()[:4] == b"\x89PNG"
