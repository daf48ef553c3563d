"""The pytest plugin (lazycv.pytest_plugin): --lazycv, --lazycv-compare, the lazycv_compare
marker and fixture, report header and terminal summary; plus the pure comparison logic
(lazycv.compare).

Inner pytest sessions run in this process (``pytester.runpytest_inprocess``), so they share
lazycv's in-memory kernel cache: every inner suite uses the same tiny pipeline (uint8 add, then
convertTo float32), compiled once by the ``warm`` fixture. A fusion bug is simulated by a test
that changes its input only in the fused run; nondeterminism by an unseeded generator.
"""
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points

import cv2
import numpy as np
import pytest

import lazycv
import lazycv.pytest_plugin as plugin_module
from lazycv.compare import Record, Tolerance, compare_arrays, compare_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Pytester points HOME at a temporary folder; keep the kernel cache where it already is, so
# inner (and subprocess) sessions find the compiled kernels.
CACHE_DIR = os.environ.get("LAZYCV_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lazycv")


def _entry_point_installed():
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.value == "lazycv.pytest_plugin" for ep in entry_points(group="pytest11"))


ENTRY_POINT = _entry_point_installed()
VERSION = re.escape(lazycv.__version__)
# Without the installed entry point (e.g. a bare PYTHONPATH checkout), load the plugin by name.
PLUGIN_ARGS = [] if ENTRY_POINT else ["-p", "lazycv.pytest_plugin"]
# Other installed plugins the inner sessions do not need (hypothesis' terminal summary imports
# libcst afresh in every in-process session: seconds each).
QUIET_ARGS = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark"]
pytest_plugins = ["pytester"] + ([] if ENTRY_POINT else ["lazycv.pytest_plugin"])

DEMO = '''
import cv2
import numpy as np
import lazycv

A = (np.arange(96, dtype=np.uint8).reshape(8, 12) * 3)


def fused():
    """True in the fused run (lets a test simulate a fusion bug)."""
    return lazycv.settings()["fuse"]


def pipeline(a, alpha=0.5, floats=True):
    g = cv2.cuda_GpuMat()
    g.upload(a)
    s = cv2.cuda.add(g, g)
    f = s.convertTo(cv2.CV_32F, alpha=alpha)
    if not floats:
        return s.download()
    return s.download(), f.download()
'''


@pytest.fixture(autouse=True)
def lazy():
    """Overrides the suite's autouse fixture: the inner sessions decide whether lazycv is on."""
    yield


@pytest.fixture(scope="module")
def warm():
    """Compile the demo pipeline's eager and fused kernels once, in this process."""
    a = (np.arange(96, dtype=np.uint8).reshape(8, 12) * 3)
    for fuse in (False, True):
        with lazycv.enabled(backend="cpu", fuse=fuse):
            g = cv2.cuda_GpuMat()
            g.upload(a)
            s = cv2.cuda.add(g, g)
            f = s.convertTo(cv2.CV_32F, alpha=0.5)
            s.download(), f.download()
            cv2.cuda.add(g, g).download()


@pytest.fixture
def suite(pytester, warm, monkeypatch):
    monkeypatch.setenv("LAZYCV_CACHE_DIR", CACHE_DIR)
    monkeypatch.delenv("LAZYCV_BACKEND", raising=False)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    pytester.makepyfile(demo_pipeline=DEMO)
    return pytester


def run(pytester, *args):
    assert not lazycv.is_enabled()
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, *QUIET_ARGS, *args)
    assert not lazycv.is_enabled(), "an inner session left lazycv enabled"
    return result


def failure(result, name):
    """The FAILURES block of test ``name``."""
    text = result.stdout.str()
    m = re.search(rf"_{{3,}} {re.escape(name)} _{{3,}}\n(.*?)(?=\n_{{3,}} \w|\n-{{5,}} lazycv compare \(|\n={{5,}})",
                  text, re.S)
    assert m, f"no failure block for {name} in:\n{text}"
    return m.group(1)


def summary_row(result, name):
    m = re.search(rf"::{re.escape(name)}\s+(\S+(?: \S+)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$",
                  result.stdout.str(), re.M)
    assert m, f"no summary row for {name} in:\n{result.stdout.str()}"
    return m.group(1), tuple(int(g) for g in m.groups()[1:])


# ------------------------------------------------------------------ compare mode, whole suites

COMPARE_SUITE = '''
import numpy as np
import pytest
from demo_pipeline import A, fused, pipeline


def test_equal():
    s, f = pipeline(A)
    assert s[0, 1] == 6 and f[0, 1] == 3.0


def test_seeded():
    pipeline(np.random.default_rng(7).integers(0, 100, (8, 12), dtype=np.uint8))


def test_int_bug():
    a = A.copy()
    if fused():
        a[1, 2] += 1
    pipeline(a, floats=False)


def test_unseeded():
    pipeline(np.random.default_rng().integers(0, 100, (8, 12), dtype=np.uint8))


def test_fused_raises():
    pipeline(A)
    if fused():
        raise ValueError("only when fused")


def test_eager_fails_too():
    pipeline(A)
    assert 1 == 2, "a plain failing test"


@pytest.mark.skip(reason="not today")
def test_skipped():
    raise AssertionError("never runs")


@pytest.mark.xfail(reason="known", strict=True)
def test_xfail():
    pipeline(A)
    assert False


def test_count_differs():
    pipeline(A, floats=False)
    if fused():
        pipeline(A, floats=False)


@pytest.fixture
def downloaded_in_setup():
    a = A.copy()
    if fused():
        a[0, 0] = 1
    return pipeline(a, floats=False)


def test_setup_download(downloaded_in_setup):
    pass
'''


def test_compare_suite_outcomes_reports_and_summary(suite):
    suite.makepyfile(test_suite=COMPARE_SUITE)
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu", "-p", "no:randomly")
    r.assert_outcomes(passed=2, failed=6, skipped=1, xfailed=1)
    out = r.stdout.str()

    # a fusion mismatch: call site, shapes and dtypes, counts, errors, first mismatches, plan
    bug = failure(r, "test_int_bug")
    assert "lazycv compare: fused != eager: download #1 at demo_pipeline.py:" in bug
    assert "A second eager run matched the first" in bug
    assert "download #1 of 1 (call) at demo_pipeline.py:" in bug and "in pipeline <- test_suite.py:" in bug
    assert "return s.download()" in bug                           # the source line
    assert "eager: shape (8, 12), dtype uint8" in bug and "fused: shape (8, 12), dtype uint8" in bug
    assert "differing elements: 1 of 96 (1.04%), tolerance: exact" in bug
    assert "max abs error: 2" in bug and "max rel error: 0.0238" in bug
    assert re.search(r"\(1, 2\)\s+84\s+86\s+2", bug)               # index, eager, fused, diff
    assert "fused plan (lazycv.explain of this result before it left):" in bug
    assert "lazycv plan: 1 kernel(s)" in bug
    assert "kernels launched: eager 2, fused 1" in bug

    # nondeterminism is told apart from fusion
    nd = failure(r, "test_unseeded")
    assert "this test looks nondeterministic: two eager runs of it handed out different data" in nd
    assert "not attributable to fusion" in nd and "eager run vs eager re-run:" in nd
    assert "fused != eager" not in nd

    # the fused run raising: the fused traceback, plus what the eager run did
    fr = failure(r, "test_fused_raises")
    assert "ValueError: only when fused" in fr
    assert "passed in the eager run (one kernel per op) and failed in the fused run" in fr
    assert "the 2 array(s) the fused run handed out before failing equal the eager run's" in fr

    # a test failing by itself is reported once, as is
    plain = failure(r, "test_eager_fails_too")
    assert "AssertionError: a plain failing test" in plain and "lazycv compare" not in plain

    cnt = failure(r, "test_count_differs")
    assert "fused != eager: the eager run handed out 1 array(s), the fused run 2" in cnt
    assert "A second eager run matched the first" in cnt
    assert "number of arrays handed out differs: eager 1, fused 2" in cnt
    assert "first one only the fused run handed out: #2 (download)" in cnt

    setup = failure(r, "test_setup_download")
    assert "download #1 of 1 (setup) at demo_pipeline.py:" in setup
    assert "in downloaded_in_setup" in setup

    # short summary lines carry the reason
    assert re.search(r"FAILED test_suite.py::test_int_bug - Failed: lazycv compare: fused != eager", out)

    # terminal summary: per test eager vs fused kernels, fallbacks, downloads
    assert "lazycv compare (backend cpu)" in out
    assert "10 test(s) ran eager and fused: 3 differs, 2 equal, 1 failed, 1 fused failed, " \
           "1 nondeterministic, 1 skipped, 1 xfailed" in out
    assert summary_row(r, "test_equal") == ("equal", (2, 1, 0, 2))
    assert summary_row(r, "test_int_bug") == ("differs", (2, 1, 0, 1))
    assert summary_row(r, "test_unseeded") == ("nondeterministic", (2, 1, 0, 2))
    assert summary_row(r, "test_count_differs") == ("differs", (2, 2, 0, 2))
    assert re.search(r"total kernels launched: eager \d+, fused \d+", out)


def test_header_and_fixture_scopes_and_mode_forcing(suite):
    suite.makeconftest('''
import lazycv
import pytest

CREATED = {"module": 0, "function": 0}


@pytest.fixture(autouse=True)
def user_enables_lazycv():
    # like a suite's own conftest: enables lazycv (fuse=True by default) around every test
    with lazycv.enabled(backend="cpu"):
        yield
''')
    suite.makepyfile(test_scopes='''
import pytest
import lazycv
from conftest import CREATED
from demo_pipeline import A, fused, pipeline

MODES = []


@pytest.fixture(scope="module")
def per_module():
    CREATED["module"] += 1
    return CREATED["module"]


@pytest.fixture
def per_function():
    CREATED["function"] += 1
    return CREATED["function"]


def test_runs_both_modes(per_module, per_function):
    MODES.append(fused())
    pipeline(A)


def test_check():
    # eager then fused for each test (the body is forced eager although the autouse fixture
    # enabled lazycv with fuse=True); function fixtures made per run, module fixtures once
    assert MODES == [False, True]
    assert CREATED == {"module": 1, "function": 2}
''')
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu", "-v")
    r.assert_outcomes(passed=2)
    r.stdout.re_match_lines([rf"lazycv {VERSION}: backend cpu, device: CPU, \d+ core\(s\) "
                             r"\(cv2.cuda sees 1 virtual CUDA device\)",
                             r"lazycv compare: every test runs eager \(one kernel per op\), then fused; "
                             r"integers exact, floats rtol=1e-06 atol=0"])
    assert summary_row(r, "test_runs_both_modes") == ("equal", (2, 1, 0, 2))


# ------------------------------------------------------------------ tolerances: marker and ini

TOLERANCE_SUITE = '''
import pytest
from demo_pipeline import A, fused, pipeline


def bumped(rel):
    return 0.5 * (1 + rel) if fused() else 0.5


def test_float_within_default():
    pipeline(A, alpha=bumped(1e-7))


def test_float_beyond_default():
    pipeline(A, alpha=bumped(1e-4))


@pytest.mark.lazycv_compare(rtol=1e-3)
def test_float_marker_rtol():
    pipeline(A, alpha=bumped(1e-4))


@pytest.mark.lazycv_compare(int_atol=2)
def test_int_marker_atol():
    a = A.copy()
    if fused():
        a[0, 0] += 1
    pipeline(a, floats=False)
'''


def test_tolerances_default_marker_and_ini(suite):
    suite.makepyfile(test_tol=TOLERANCE_SUITE)
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu", "--strict-markers")
    r.assert_outcomes(passed=3, failed=1)
    text = failure(r, "test_float_beyond_default")
    assert "download #2 of 2 (call)" in text and "dtype float32" in text
    assert "tolerance: rtol=1e-06 atol=0" in text
    assert "max rel error: 0.0001" in text
    assert "download #1" not in text.split("A second eager run")[1]   # the uint8 result is equal

    # session defaults from the ini file; the markers still win where they are stricter
    suite.makeini('''
[pytest]
lazycv_compare_rtol = 1e-3
lazycv_compare_int_atol = 0
''')
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=4)
    suite.makeini('''
[pytest]
lazycv_compare_rtol = 1e-9
''')
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=2, failed=2)
    assert "tolerance: rtol=1e-09 atol=0" in failure(r, "test_float_within_default")


def test_marker_alone_compares_only_marked_tests(suite):
    suite.makeini('''
[pytest]
lazycv_backend = cpu
''')
    suite.makepyfile(test_marker='''
import pytest
import lazycv
from demo_pipeline import A, pipeline

RUNS = []


@pytest.mark.lazycv_compare
def test_marked():
    RUNS.append(lazycv.settings()["fuse"])
    pipeline(A)


def test_plain():
    RUNS.append("plain")
    assert not lazycv.is_enabled()      # no --lazycv: the plugin leaves other tests alone


def test_check():
    assert RUNS == [False, True, "plain"]
''')
    r = run(suite, "-v")
    r.assert_outcomes(passed=3)
    out = r.stdout.str()
    assert f"lazycv {lazycv.__version__}:" not in out                     # no header without --lazycv
    assert "1 test(s) ran eager and fused: 1 equal" in out
    assert summary_row(r, "test_marked") == ("equal", (2, 1, 0, 2))


def test_marker_opt_out_and_bad_options(suite):
    suite.makepyfile(test_optout='''
import pytest
from demo_pipeline import A, pipeline

RUNS = []


@pytest.mark.lazycv_compare(False)
def test_once():
    RUNS.append(1)
    pipeline(A)


def test_check():
    assert RUNS == [1]
''')
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=2)
    assert "1 test(s) ran eager and fused: 1 equal" in r.stdout.str()
    assert "1 test(s) ran fused: 1 kernel(s) launched, 2 op(s) fused" in r.stdout.str()

    suite.makepyfile(test_optout='''
import pytest

@pytest.mark.lazycv_compare(rtl=1e-3)
def test_typo():
    pass
''')
    r = run(suite)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_optout.py::test_typo: unknown lazycv_compare option(s) ['rtl']" in r.stderr.str()


def test_usage_errors_for_backend(suite):
    r = run(suite, "--lazycv", "--lazycv-backend=bogus")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid choice: 'bogus'" in r.stderr.str()
    suite.makeini('''
[pytest]
lazycv_backend = nope
lazycv = true
''')
    r = run(suite)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "lazycv_backend = 'nope'" in r.stderr.str()


# ------------------------------------------------------------------ -x and -k

def test_exitfirst_and_keyword_selection(suite):
    suite.makepyfile(test_xk='''
from demo_pipeline import A, fused, pipeline


def bug():
    a = A.copy()
    if fused():
        a[0, 0] += 1
    pipeline(a, floats=False)


def test_a_bug():
    bug()


def test_b_bug():
    bug()


def test_c_fine():
    pipeline(A)
''')
    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu", "-x")
    r.assert_outcomes(failed=1)
    assert "stopping after 1 failures" in r.stdout.str()
    assert "1 test(s) ran eager and fused: 1 differs" in r.stdout.str()

    r = run(suite, "--lazycv-compare", "--lazycv-backend=cpu", "-k", "c_fine or b_bug")
    r.assert_outcomes(passed=1, failed=1, deselected=1)
    out = r.stdout.str()
    assert "2 test(s) ran eager and fused: 1 differs, 1 equal" in out
    assert "test_a_bug" not in out


# ------------------------------------------------------------------ --lazycv session mode

def test_lazycv_session_mode_and_inert_default(suite):
    suite.makeconftest('''
import cv2
# a suite that decides at import time whether CUDA is there (before any test module)
HAVE_CUDA = cv2.cuda.getCudaEnabledDeviceCount() > 0
''')
    suite.makepyfile(test_session='''
import cv2
import lazycv
from conftest import HAVE_CUDA
from demo_pipeline import A, pipeline


def test_cuda_path():
    with open("enabled.txt", "w") as f:
        f.write(str(lazycv.is_enabled()))
    if not lazycv.is_enabled():
        return                                       # OpenCV's own cv2.cuda
    assert HAVE_CUDA                                 # conftest saw lazycv's device at import
    assert lazycv.backend() == "cpu"
    before = lazycv.stats()["kernels_launched"]
    pipeline(A)
    assert lazycv.stats()["kernels_launched"] - before == 1     # fused: one kernel
''')
    enabled = suite.path / "enabled.txt"
    r = run(suite, "--lazycv", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=1)
    assert enabled.read_text() == "True"
    out = r.stdout.str()
    assert re.search(rf"^lazycv {VERSION}: backend cpu, device: CPU", out, re.M)
    assert "lazycv: cv2.cuda runs fused for the whole session" in out
    assert "lazycv (backend cpu)" in out
    assert "1 test(s) ran fused: 1 kernel(s) launched, 2 op(s) fused, 0 fallback(s)" in out

    # Without any lazycv option (and no marker) the plugin does nothing: cv2.cuda is OpenCV's
    # own, and there is no header and no summary.
    r = run(suite)
    r.assert_outcomes(passed=1)
    assert enabled.read_text() == "False"
    assert not re.search(r"^lazycv|lazycv \(backend|lazycv compare", r.stdout.str(), re.M)

    # the ini option is the same as --lazycv
    suite.makeini('''
[pytest]
lazycv = true
lazycv_backend = cpu
''')
    r = run(suite)
    r.assert_outcomes(passed=1)
    assert enabled.read_text() == "True"
    assert "1 test(s) ran fused: 1 kernel(s) launched" in r.stdout.str()


# ------------------------------------------------------------------ the fixture

def test_fixture_returns_both_results(lazycv_compare, warm):
    a = (np.arange(96, dtype=np.uint8).reshape(8, 12) * 3)

    def chain(x):
        g = cv2.cuda_GpuMat()
        g.upload(x)
        s = cv2.cuda.add(g, g)
        return s, s.convertTo(cv2.CV_32F, alpha=0.5)     # GpuMats: downloaded and compared

    with lazycv.enabled(backend="cpu"):
        eager, fused = lazycv_compare(chain, a)
    assert isinstance(eager, tuple) and len(eager) == 2
    np.testing.assert_array_equal(eager[0], np.minimum(a.astype(int) * 2, 255))
    np.testing.assert_array_equal(fused[1], eager[1])
    assert lazycv_compare.kernels == (2, 1)
    assert lazycv_compare.last.ok and lazycv_compare.last.compared == 2


def test_fixture_reports_mismatch_and_nondeterminism(lazycv_compare, warm):
    a = (np.arange(96, dtype=np.uint8).reshape(8, 12) * 3)

    def buggy(x):
        x = x.copy()
        if lazycv.settings()["fuse"]:
            x[2, 3] += 1
        g = cv2.cuda_GpuMat()
        g.upload(x)
        return cv2.cuda.add(g, g).download()

    with lazycv.enabled(backend="cpu"):
        with pytest.raises(AssertionError) as exc:
            lazycv_compare(buggy, a)
        msg = str(exc.value)
        assert msg.startswith("lazycv compare: fused != eager: download #1 at ")
        assert "buggy; backend cpu" in msg and "1 of 96 (1.04%)" in msg
        assert re.search(r"\(2, 3\)\s+162\s+164\s+2", msg)

        calls = []

        def unseeded():
            calls.append(1)
            g = cv2.cuda_GpuMat()
            g.upload(np.random.default_rng().integers(0, 100, (8, 12), dtype=np.uint8))
            return cv2.cuda.add(g, g)

        with pytest.raises(AssertionError, match="looks nondeterministic") as exc:
            lazycv_compare(unseeded)
        assert len(calls) == 3                              # eager, fused, eager again
        assert "result #1" in str(exc.value)

        # per-call tolerance
        lenient = lazycv_compare.configure(int_atol=2)
        eager, fused = lenient(buggy, a)
        assert int(np.abs(eager.astype(int) - fused.astype(int)).max()) == 2
    assert not lazycv.is_enabled()


# ------------------------------------------------------------------ xdist

def test_xdist_workers_report_to_the_controller(suite, monkeypatch):
    pytest.importorskip("xdist")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    suite.makepyfile(test_x='''
import pytest
from demo_pipeline import A, fused, pipeline


@pytest.mark.parametrize("i", range(4))
def test_ok(i):
    pipeline(A)


def test_bug():
    a = A.copy()
    if fused():
        a[0, 0] += 1
    pipeline(a, floats=False)
''')
    r = suite.runpytest_subprocess(*PLUGIN_ARGS, *QUIET_ARGS, "-n", "2",
                                   "--lazycv-compare", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=4, failed=1)
    out = r.stdout.str()
    assert "fused != eager: download #1" in out
    assert "5 test(s) ran eager and fused: 1 differs, 4 equal" in out
    assert summary_row(r, "test_ok[0]") == ("equal", (2, 1, 0, 2))


# ------------------------------------------------------------------ registration and cost

def test_registered_as_pytest11_entry_point(pytestconfig):
    """Registered under its module's name, so ``-p lazycv.pytest_plugin`` and a conftest's
    ``pytest_plugins = ["lazycv.pytest_plugin"]`` find it loaded already (under another name
    pytest refuses the second registration and stops)."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    assert re.search(r'^\[project\.entry-points\.pytest11\]\s*\n"lazycv\.pytest_plugin" = "lazycv\.pytest_plugin"',
                     text, re.M)
    if ENTRY_POINT:
        ep = [e for e in entry_points(group="pytest11") if e.name == "lazycv.pytest_plugin"]
        assert ep and ep[0].load() is plugin_module
    assert pytestconfig.pluginmanager.get_plugin("lazycv.pytest_plugin") is plugin_module


def test_naming_the_plugin_again_is_harmless(suite):
    """The usual ways of loading a plugin by hand, on top of the installed entry point."""
    suite.makepyfile(test_one="def test_x():\n    assert True\n")
    r = run(suite, "-p", "lazycv.pytest_plugin", "--lazycv", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=1)
    suite.makeconftest('pytest_plugins = ["lazycv.pytest_plugin"]\n')
    r = run(suite, "--lazycv", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=1)


def test_plugin_import_is_cheap():
    # The plugin is imported by every pytest session once lazycv is installed: beyond lazycv
    # itself it must not pull in Numba, a backend or the comparison machinery.
    code = ("import sys, lazycv; before = set(sys.modules); import lazycv.pytest_plugin; "
            "added = set(sys.modules) - before; "
            "print(sorted(m for m in added if m.split('.')[0] in ('numba', 'llvmlite') "
            "or m.startswith(('lazycv.backends', 'lazycv.compare'))))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ lazycv.compare (pure logic)

def test_compare_arrays_integers_exact_and_with_tolerance():
    a = np.array([[0, 10, 255]], np.uint8)
    b = np.array([[0, 12, 254]], np.uint8)
    d = compare_arrays(a, b)
    assert (d.reason, d.n_diff, d.size, d.max_abs) == ("values", 2, 3, 2.0)
    assert [(i, int(x), int(y)) for i, x, y, _ in d.first] == [((0, 1), 10, 12), ((0, 2), 255, 254)]
    assert d.max_rel == pytest.approx(0.2)
    assert compare_arrays(a, b, Tolerance(int_atol=2)).ok
    assert compare_arrays(np.array([-5], np.int16), np.array([5], np.int16)).max_abs == 10
    assert compare_arrays(a, a).ok


def test_compare_arrays_floats_nan_inf_shape_dtype():
    e = np.array([1.0, 0.0, np.nan, np.inf, 100.0], np.float32)
    f = e.copy()
    f[4] = 100.00005                                   # 5e-7 relative: within 1e-6
    assert compare_arrays(e, f).ok
    f[1] = 1e-30                                        # 0 vs tiny: no relative slack at zero
    d = compare_arrays(e, f)
    assert d.n_diff == 1 and d.first[0][0] == (1,) and d.max_rel == float("inf")
    assert compare_arrays(e, f, Tolerance(atol=1e-20)).ok
    g = e.copy()
    g[2] = 1.0
    g[3] = -np.inf
    d = compare_arrays(e, g)
    assert d.n_diff == 2 and d.nonfinite == 2
    assert not compare_arrays(e, e, Tolerance(equal_nan=False)).ok
    assert compare_arrays(e, e[:4]).reason == "shape"
    assert compare_arrays(e, e.astype(np.float64)).reason == "dtype"


def _rec(i, arr, site=("t.py", 3, "f", "x.download()"), kind="download"):
    return Record(i, kind, "call", (site,), np.asarray(arr), plan="lazycv plan: 1 kernel(s)")


def test_compare_records_report_text():
    a = [_rec(1, np.zeros((2, 2), np.uint8)), _rec(2, np.ones(3, np.float32))]
    b = [_rec(1, np.zeros((2, 2), np.uint8)), _rec(2, np.array([1, 1, 1.5], np.float32))]
    c = compare_records(a, b)
    assert not c.ok and c.compared == 2 and len(c.diffs) == 1
    assert c.headline() == "download #2 at t.py:3 in f: 1 of 3 elements differ (33.33%), max abs error 0.5"
    text = c.report()
    for needle in ("download #2 of 2 (call) at t.py:3 in f", "    x.download()",
                   "eager: shape (3,), dtype float32", "differing elements: 1 of 3 (33.33%)",
                   "max rel error: 0.5", "fused plan (lazycv.explain", "eager plan: the same"):
        assert needle in text
    assert re.search(r"\(2,\)\s+1\s+1\.5\s+0\.5", text)

    # other call site at the same position: the runs took different paths
    c = compare_records(a, [a[0], _rec(2, np.ones(3, np.float32), site=("t.py", 9, "g", ""))])
    assert not c.ok and not c.diffs and "took another path" in c.headline()
    # different counts
    c = compare_records(a, a[:1], labels=("eager", "eager re-run"))
    assert c.headline() == "the eager run handed out 2 array(s), the eager re-run run 1"
    assert "number of arrays handed out differs: eager 2, eager re-run 1" in c.report()


def test_a_test_that_disables_lazycv_does_not_unpatch_the_rest_of_the_session(suite):
    suite.makepyfile(test_two='''
import cv2
import numpy as np
import lazycv


def test_1_disable():
    lazycv.disable()


def test_2_uses_cv2_cuda():
    g = cv2.cuda_GpuMat()
    g.upload(np.zeros((2, 2), np.uint8))
    assert (cv2.cuda.add(g, 1).download() == 1).all()
''')
    r = run(suite, "--lazycv", "--lazycv-backend=cpu")
    r.assert_outcomes(passed=2)
