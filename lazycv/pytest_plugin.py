"""pytest plugin: run an existing cv2.cuda test suite through lazycv, and prove fused == eager.

Registered through the ``pytest11`` entry point (``"lazycv.pytest_plugin" = "lazycv.pytest_plugin"``), so it is
loaded in every pytest session once lazycv is installed. It does nothing unless asked:

``--lazycv``
    the session runs with lazycv enabled (fused), from before the conftest files load.
``--lazycv-backend=auto|cpu|cuda|cuda-sim``
    the backend for ``--lazycv``, ``--lazycv-compare`` and the marker (default: ini
    ``lazycv_backend``, else the backend already enabled, else lazycv's automatic choice).
``--lazycv-compare``
    implies ``--lazycv``; every test runs twice — eager (one kernel per op), then fused — and
    every array it downloads or hands to foreign code is compared pairwise.
``@pytest.mark.lazycv_compare(enabled=True, *, rtol, atol, int_atol, equal_nan, backend, recheck, max_mismatches)``
    compare one test (or opt one out with ``lazycv_compare(False)``), with its own tolerances.
``lazycv_compare`` fixture
    ``eager, fused = lazycv_compare(fn, *args, **kwargs)`` runs ``fn`` both ways and asserts.

See docs/testing.md.
"""
import os
from dataclasses import dataclass, replace

import pytest

import lazycv

BACKEND_CHOICES = ("auto", "cpu", "cuda", "cuda-sim")
MARKER_OPTIONS = ("rtol", "atol", "int_atol", "equal_nan", "backend", "recheck", "max_mismatches")
MARKER_DOC = ("lazycv_compare(enabled=True, *, rtol=1e-6, atol=0, int_atol=0, equal_nan=True, "
              "backend=None, recheck=True, max_mismatches=10): run this test eager and fused (lazycv) "
              "and compare every array it downloads; lazycv_compare(False) opts out of --lazycv-compare")
MAX_SUMMARY_ROWS = 30

_PLUGIN_KEY = pytest.StashKey()
_STATS_KEY = pytest.StashKey()


# ------------------------------------------------------------------ options

def pytest_addoption(parser):
    group = parser.getgroup("lazycv", "lazycv (cv2.cuda recorded lazily, run as fused kernels)")
    group.addoption("--lazycv", action="store_true", default=None,
                    help="run the session with lazycv enabled (cv2.cuda code runs fused)")
    group.addoption("--lazycv-backend", default=None, choices=BACKEND_CHOICES, metavar="NAME",
                    help="lazycv backend: auto (default), cpu, cuda or cuda-sim")
    group.addoption("--lazycv-compare", action="store_true", default=None,
                    help="run every test twice, eager then fused, and compare every array it "
                         "downloads (implies --lazycv)")
    parser.addini("lazycv", type="bool", default=False, help="lazycv: like --lazycv")
    parser.addini("lazycv_backend", default="", help="lazycv: default for --lazycv-backend")
    parser.addini("lazycv_compare", type="bool", default=False, help="lazycv: like --lazycv-compare")
    parser.addini("lazycv_compare_rtol", default="1e-6",
                  help="lazycv compare: relative tolerance for float arrays (default 1e-6)")
    parser.addini("lazycv_compare_atol", default="0",
                  help="lazycv compare: absolute tolerance for float arrays (default 0)")
    parser.addini("lazycv_compare_int_atol", default="0",
                  help="lazycv compare: tolerance for integer arrays (default 0: exact)")
    parser.addini("lazycv_compare_max_mismatches", default="10",
                  help="lazycv compare: how many differing elements a report lists (default 10)")
    parser.addini("lazycv_compare_recheck", type="bool", default=True,
                  help="lazycv compare: on a mismatch, run eager again to tell nondeterministic "
                       "tests from fusion bugs (default true)")


@dataclass(frozen=True)
class CompareOptions:
    rtol: float = 1e-6
    atol: float = 0.0
    int_atol: int = 0
    equal_nan: bool = True
    backend: object = None          # None: the plugin's / the enabled / lazycv's automatic choice
    recheck: bool = True
    max_mismatches: int = 10

    @property
    def tolerance(self):
        from .compare import Tolerance
        return Tolerance(self.rtol, self.atol, self.int_atol, self.equal_nan)

    def updated(self, where, **kw):
        """These options with ``kw`` applied (validated; errors name ``where``)."""
        unknown = sorted(set(kw) - set(MARKER_OPTIONS))
        if unknown:
            raise pytest.UsageError(f"{where}: unknown lazycv_compare option(s) {unknown}; "
                                    f"expected some of {list(MARKER_OPTIONS)}")
        conv = {"rtol": float, "atol": float, "int_atol": int, "max_mismatches": int}
        out = {}
        for k, v in kw.items():
            if k in conv:
                try:
                    v = conv[k](v)
                except (TypeError, ValueError):
                    raise pytest.UsageError(f"{where}: lazycv_compare {k}={v!r} is not a number") from None
                if v < 0:
                    raise pytest.UsageError(f"{where}: lazycv_compare {k}={v!r} must be >= 0")
            elif k in ("equal_nan", "recheck"):
                v = bool(v)
            elif k == "backend":
                if v == "auto":
                    v = None
                if v is not None and v not in BACKEND_CHOICES:
                    raise pytest.UsageError(f"{where}: lazycv_compare backend={v!r}; expected one of "
                                            f"{list(BACKEND_CHOICES)}")
            out[k] = v
        return replace(self, **out)


class Settings:
    """What the command line and the ini file ask for."""

    def __init__(self, config, namespace=None):
        ns = namespace if namespace is not None else config.option

        def opt(name):
            return getattr(ns, name, None)

        self.compare_all = bool(opt("lazycv_compare") or config.getini("lazycv_compare"))
        self.session = bool(opt("lazycv") or config.getini("lazycv") or self.compare_all)
        name = opt("lazycv_backend") or str(config.getini("lazycv_backend") or "").strip() or "auto"
        if name not in BACKEND_CHOICES:
            raise pytest.UsageError(f"lazycv_backend = {name!r}: expected one of {list(BACKEND_CHOICES)}")
        self.backend = None if name == "auto" else name
        ini = {k: config.getini(f"lazycv_compare_{k}") for k in ("rtol", "atol", "int_atol", "max_mismatches")}
        self.defaults = CompareOptions(backend=self.backend,
                                       recheck=bool(config.getini("lazycv_compare_recheck"))
                                       ).updated("ini file", **{k: str(v).strip() for k, v in ini.items()})

    def options_for(self, item):
        """Compare options for ``item`` (marker over ini over defaults), or None when the item
        is not to be compared."""
        marker = item.get_closest_marker("lazycv_compare")
        if marker is None:
            return self.defaults if self.compare_all else None
        if len(marker.args) > 1 or (marker.args and not isinstance(marker.args[0], bool)):
            raise pytest.UsageError(f"{item.nodeid}: lazycv_compare takes one positional argument, "
                                    f"enabled (True/False), and keyword options; got {marker.args!r}")
        opts = self.defaults.updated(item.nodeid, **marker.kwargs)
        return opts if (not marker.args or marker.args[0]) else None


# ------------------------------------------------------------------ configuration

def _plugin(config):
    return config.stash.get(_PLUGIN_KEY, None)


def pytest_load_initial_conftests(early_config, parser, args):
    """Enable lazycv before conftest files are imported, so a conftest that checks
    ``cv2.cuda.getCudaEnabledDeviceCount()`` sees the device."""
    settings = Settings(early_config, early_config.known_args_namespace)
    if settings.session:
        plugin = LazycvPlugin(early_config, settings)
        early_config.stash[_PLUGIN_KEY] = plugin
        plugin.start_session()


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER_DOC)
    plugin = _plugin(config)
    settings = Settings(config)
    if plugin is None:
        plugin = LazycvPlugin(config, settings)
        config.stash[_PLUGIN_KEY] = plugin
    else:
        plugin.settings = settings
    if settings.session:
        plugin.start_session()
    config.pluginmanager.register(plugin, "lazycv-plugin")


def pytest_unconfigure(config):
    plugin = _plugin(config)
    if plugin is not None:
        plugin.end_session()
        if config.pluginmanager.is_registered(plugin):
            config.pluginmanager.unregister(plugin)
        del config.stash[_PLUGIN_KEY]


def _device_description(name):
    try:
        if name == "cuda":
            from numba import cuda
            d = cuda.get_current_device()
            dev = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
            cc = getattr(d, "compute_capability", None)
            return f"{dev}" + (f" (compute capability {cc[0]}.{cc[1]})" if cc else "")
        if name == "cuda-sim":
            return "Numba CUDA simulator (no GPU; cv2.cuda sees 1 device)"
        return f"CPU, {os.cpu_count()} core(s) (cv2.cuda sees 1 virtual CUDA device)"
    except Exception as exc:                          # a header must never break a session
        return f"unknown ({exc})"


def _stats():
    return dict(lazycv.stats())


def _delta(before, after):
    """Counter differences; when the code under test called lazycv.reset_stats(), the counts
    since that reset (a lower bound)."""
    if before is None or any(after.get(k, 0) < v for k, v in before.items()):
        return dict(after)
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


# ------------------------------------------------------------------ one run of a test

class _Run:
    """One execution of a test's whole protocol (setup, call, teardown) in one lazycv mode."""

    def __init__(self, item, fuse, backend):
        from .compare import Recorder
        self.item = item
        self.fuse = fuse
        self.backend_opt = backend
        self.recorder = Recorder(stop_file=str(item.path))
        self.reports = []
        self.stats = {}
        self.backend = None

    @property
    def label(self):
        return "fused" if self.fuse else "eager"

    @property
    def records(self):
        return self.recorder.records

    def report(self, when):
        return next((r for r in self.reports if r.when == when), None)

    @property
    def passed(self):
        return self.report("call") is not None and all(r.passed for r in self.reports)

    @property
    def failed(self):
        return any(r.failed for r in self.reports)

    @property
    def skipped(self):
        return not self.failed and any(r.skipped for r in self.reports)

    def first_failure(self):
        return next((r for r in self.reports if r.failed), None)

    def failure_summary(self):
        rep = self.first_failure()
        if rep is None:
            return "it was skipped" if self.skipped else "it did not run"
        crash = getattr(getattr(rep, "longrepr", None), "reprcrash", None)
        msg = crash.message if crash is not None else str(rep.longrepr).strip().splitlines()[-1:]
        if isinstance(msg, list):
            msg = msg[0] if msg else ""
        msg = " ".join(str(msg).split())
        return f"its {rep.when} failed: {msg[:300] + ' ...' if len(msg) > 300 else msg}"


class LazycvPlugin:
    def __init__(self, config, settings):
        self.config = config
        self.settings = settings
        self._session_cm = None
        self._run = None
        self.rows = []

    # -- session mode
    def start_session(self):
        if self._session_cm is not None:
            return
        cm = lazycv.enabled(backend=self.settings.backend)
        try:
            cm.__enter__()
        except (ValueError, RuntimeError) as exc:
            raise pytest.UsageError(f"lazycv: cannot enable backend {self.settings.backend or 'auto'!r}: "
                                    f"{exc}") from None
        self._session_cm = cm

    def end_session(self):
        cm, self._session_cm = self._session_cm, None
        if cm is not None:
            cm.__exit__(None, None, None)

    def resume_session(self):
        """A test that called ``lazycv.disable()`` must not leave the rest of a --lazycv session
        running on unpatched cv2: lazycv is enabled again before the next test."""
        if self._session_cm is not None and not lazycv.is_enabled():
            self.end_session()
            self.start_session()

    # -- header and summary
    def pytest_report_header(self, config):
        if not self.settings.session:
            return None
        name = lazycv.backend() if lazycv.is_enabled() else "?"
        lines = [f"lazycv {lazycv.__version__}: backend {name}, device: {_device_description(name)}"]
        if self.settings.compare_all:
            lines.append("lazycv compare: every test runs eager (one kernel per op), then fused; "
                         f"{self.settings.defaults.tolerance.describe()}")
        else:
            lines.append("lazycv: cv2.cuda runs fused for the whole session")
        return lines

    def pytest_runtest_logreport(self, report):
        info = getattr(report, "lazycv_info", None)
        if isinstance(info, dict):
            self.rows.append(info)

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        compared = [r for r in self.rows if r.get("mode") == "compare"]
        fused = [r for r in self.rows if r.get("mode") == "fused"]
        if compared:
            self._compare_summary(tr, compared)
        if fused:
            backends = sorted({r.get("backend") or "?" for r in fused})
            tr.write_sep("-", f"lazycv (backend {', '.join(backends)})")
            tot = {k: sum(r.get(k, 0) for r in fused)
                   for k in ("kernels_launched", "ops_fused", "fallbacks", "compiles")}
            tr.write_line(f"{len(fused)} test(s) ran fused: {tot['kernels_launched']} kernel(s) launched, "
                          f"{tot['ops_fused']} op(s) fused, {tot['fallbacks']} fallback(s), "
                          f"{tot['compiles']} compile(s)")
            with_fb = [r for r in fused if r.get("fallbacks")]
            for r in with_fb[:MAX_SUMMARY_ROWS]:
                tr.write_line(f"  fallbacks in {r['nodeid']}: {r['fallbacks']}")

    def _compare_summary(self, tr, rows):
        backends = sorted({r.get("backend") or "?" for r in rows})
        tr.write_sep("-", f"lazycv compare (backend {', '.join(backends)})")
        counts = {}
        for r in rows:
            counts[r["result"]] = counts.get(r["result"], 0) + 1
        tr.write_line(f"{len(rows)} test(s) ran eager and fused: " +
                      ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        show = rows
        if len(rows) > MAX_SUMMARY_ROWS and tr.config.option.verbose < 1:
            bad = [r for r in rows if r["result"] != "equal"]
            show = (bad + [r for r in rows if r["result"] == "equal"])[:MAX_SUMMARY_ROWS]
        head = ("test", "result", "eager kernels", "fused kernels", "fallbacks", "downloads")
        table = [head] + [(r["nodeid"], r["result"], str(r["eager_kernels"]), str(r["fused_kernels"]),
                           str(r["fallbacks"]), str(r["downloads"])) for r in show]
        w = [max(len(t[c]) for t in table) for c in range(len(head))]
        for t in table:
            tr.write_line(f"{t[0]:<{w[0]}}  {t[1]:<{w[1]}}  " +
                          "  ".join(t[c].rjust(w[c]) for c in range(2, len(head))))
        if len(show) < len(rows):
            tr.write_line(f"... {len(rows) - len(show)} more equal test(s) (-v lists all)")
        e = sum(r["eager_kernels"] for r in rows)
        f = sum(r["fused_kernels"] for r in rows)
        ratio = f" ({e / f:.1f}x fewer fused)" if f else ""
        tr.write_line(f"total kernels launched: eager {e}, fused {f}{ratio}; "
                      f"fallbacks {sum(r['fallbacks'] for r in rows)}")

    # -- marker validation
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            if item.get_closest_marker("lazycv_compare") is not None:
                self.settings.options_for(item)          # raises a UsageError on bad options

    # -- per-test statistics in --lazycv mode (compare runs attach their own)
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        run = self._run
        if run is not None and run.item is item:
            run.recorder.phase = "setup"
        elif self.settings.session:
            self.resume_session()
            item.stash[_STATS_KEY] = _stats()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        run = self._run
        if run is None or run.item is not item:
            yield
            return
        from .compare import mode
        run.recorder.phase = "call"
        # Force this run's mode for the test body, also when a fixture enabled lazycv itself
        # (with its default fuse=True) during setup.
        with mode(run.fuse, run.backend_opt):
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        run = self._run
        if run is not None and run.item is item:
            run.recorder.phase = "teardown"
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when != "teardown" or self._run is not None:
            return
        before = item.stash.get(_STATS_KEY, None)
        if before is None:
            return
        rep = outcome.get_result()
        d = _delta(before, _stats())
        rep.lazycv_info = {"mode": "fused", "nodeid": item.nodeid,
                           "backend": lazycv.backend() if lazycv.is_enabled() else None,
                           **{k: int(d.get(k, 0)) for k in ("kernels_launched", "ops_fused",
                                                            "fallbacks", "compiles")}}

    # -- compare mode: the test's whole protocol, eager then fused
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not isinstance(item, pytest.Function):
            return None
        opt = item.config.option
        if getattr(opt, "setuponly", False) or getattr(opt, "setupplan", False) \
                or getattr(opt, "collectonly", False):
            return None
        opts = self.settings.options_for(item)
        if opts is None:
            return None
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        # The first run must leave the module/class fixtures in place for the second: it
        # tears down as if the next item were a sibling (only function-scoped fixtures go).
        eager = self._execute(item, False, opts, nextitem=item.parent)
        fused = self._execute(item, True, opts, nextitem=nextitem)
        reports = self._judge(item, opts, eager, fused, nextitem)
        for rep in reports:
            ihook.pytest_runtest_logreport(report=rep)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _execute(self, item, fuse, opts, nextitem):
        from _pytest.runner import runtestprotocol

        from .compare import mode
        run = _Run(item, fuse, opts.backend)
        sections = getattr(item, "_report_sections", None)
        if isinstance(sections, list):        # captured output of this run only
            del sections[:]
        if isinstance(getattr(item, "user_properties", None), list):
            del item.user_properties[:]
        self._run = run
        try:
            with run.recorder, mode(fuse, opts.backend):
                run.backend = lazycv.backend()
                before = _stats()
                run.reports = runtestprotocol(item, log=False, nextitem=nextitem)
            run.stats = _delta(before, _stats())
        finally:
            self._run = None
        return run

    def _judge(self, item, opts, eager, fused, nextitem):
        """The reports to log for a compared test."""
        from .compare import compare_records
        info = {"mode": "compare", "nodeid": item.nodeid, "backend": fused.backend,
                "eager_kernels": int(eager.stats.get("kernels_launched", 0)),
                "fused_kernels": int(fused.stats.get("kernels_launched", 0)),
                "fallbacks": int(fused.stats.get("fallbacks", 0)),
                "downloads": len(fused.records)}
        tol = opts.tolerance
        if not eager.passed:
            # The test fails or skips by itself: report its eager run (the fused run, which
            # also did the real teardown, only decides the teardown report).
            reports = [r for r in eager.reports if r.when != "teardown"]
            td = eager.report("teardown")
            reports.append(td if td is not None and td.failed else fused.report("teardown"))
            xfail = any(hasattr(r, "wasxfail") for r in eager.reports)
            info["result"] = "xfailed" if xfail and not eager.failed else \
                "skipped" if eager.skipped else "failed"
            failing = eager.first_failure()
            if failing is not None and fused.passed:
                failing.sections.append(("lazycv compare", (
                    "this test failed in the eager run (one kernel per op) and passed in the fused "
                    f"run (backend {fused.backend})")))
            reports[-1].lazycv_info = info
            return reports

        cmp = compare_records(eager.records, fused.records, tol, max_items=opts.max_mismatches)
        if fused.passed and cmp.ok:
            info["result"] = "equal"
            reports = list(fused.reports)
            reports[-1].lazycv_info = info
            return reports

        # Something differs. Is the test repeatable at all?
        nondet = again = None
        if opts.recheck:
            again = self._execute(item, False, opts, nextitem=nextitem)
            if not again.passed:
                nondet = f"a second eager run did not pass ({again.failure_summary()})"
            else:
                c2 = compare_records(eager.records, again.records, tol, ("eager", "eager re-run"),
                                     max_items=opts.max_mismatches)
                if not c2.ok:
                    nondet = c2
        context = (f"backend {fused.backend}; tolerance: {tol.describe()}; kernels launched: "
                   f"eager {info['eager_kernels']}, fused {info['fused_kernels']}")
        reports = list(fused.reports)
        if fused.passed:
            info["result"] = "nondeterministic" if nondet is not None else "differs"
            text = _mismatch_text(cmp, nondet, context, opts.recheck)
            call = fused.report("call")
            reports[reports.index(call)] = _failed_report(item, call, text)
        else:
            info["result"] = "nondeterministic" if nondet is not None else "fused failed"
            failing = fused.first_failure()
            failing.sections.append(("lazycv compare", _fused_failed_text(
                eager, fused, tol, opts, nondet, context)))
        if again is not None and again.report("teardown") is not None and again.report("teardown").failed:
            reports[-1] = again.report("teardown")
        reports[-1].lazycv_info = info
        return reports


NONDET_ADVICE = ("The differences are not attributable to fusion. Make the test repeatable: seed "
                 "every random generator (e.g. np.random.default_rng(0)), do not depend on time or "
                 "ordering, and do not let one run change state that the next run reads "
                 "(module/session-scoped fixtures, globals).")


def _nondet_text(nondet):
    if isinstance(nondet, str):
        return [f"lazycv compare: this test looks nondeterministic: {nondet}.", NONDET_ADVICE]
    return [f"lazycv compare: this test looks nondeterministic: two eager runs of it handed out "
            f"different data ({nondet.headline()}).", NONDET_ADVICE, "",
            "eager run vs eager re-run:", nondet.report(plans=False)]


def _mismatch_text(cmp, nondet, context, rechecked):
    if nondet is not None:
        lines = _nondet_text(nondet)
        lines += ["", f"({context})", "", "eager run vs fused run:", cmp.report(max_detailed=1, plans=False)]
        return "\n".join(lines)
    lines = [f"lazycv compare: fused != eager: {cmp.headline()}", context]
    if rechecked:
        lines.append("A second eager run matched the first: the test is repeatable, so the difference "
                     "comes from fusion.")
    lines += ["", cmp.report()]
    return "\n".join(lines)


def _fused_failed_text(eager, fused, tol, opts, nondet, context):
    from .compare import compare_records
    lines = []
    if nondet is not None:
        lines += _nondet_text(nondet) + [""]
    lines.append(f"the test passed in the eager run (one kernel per op) and failed in the fused run ({context})")
    n = len(fused.records)
    prefix = compare_records(eager.records[:n], fused.records, tol, max_items=opts.max_mismatches)
    if not n:
        lines.append(f"the fused run handed out no arrays before failing (the eager run handed out "
                     f"{len(eager.records)})")
    elif prefix.ok:
        lines.append(f"the {n} array(s) the fused run handed out before failing equal the eager run's "
                     f"(the eager run handed out {len(eager.records)})")
    else:
        lines += [f"arrays handed out before the failure differ: {prefix.headline()}", "", prefix.report()]
    return "\n".join(lines)


def _failed_report(item, base, text):
    """A failed call report carrying ``text``, with ``base``'s output and timing. (Built
    directly: makereport hook implementations may expect the item's fixtures, gone by now.)"""
    call = pytest.CallInfo.from_call(lambda: pytest.fail(text, pytrace=False), when="call")
    rep = pytest.TestReport.from_item_and_call(item, call)
    rep.sections = list(base.sections)
    for attr in ("duration", "start", "stop", "user_properties"):
        if hasattr(base, attr):
            setattr(rep, attr, getattr(base, attr))
    if hasattr(base, "wasxfail"):             # an xfail test that passed both runs: now xfailed
        rep.outcome = "skipped"
        rep.wasxfail = base.wasxfail
    return rep


# ------------------------------------------------------------------ the fixture

class CompareFailure(AssertionError):
    """Raised by the ``lazycv_compare`` fixture when the fused run differs from the eager run."""


class Comparer:
    """``lazycv_compare(fn, *args, **kwargs) -> (eager, fused)``: runs ``fn`` eager, then
    fused; downloads each GpuMat in its return value; compares everything it handed out and
    returned; raises :class:`CompareFailure` on a difference."""

    def __init__(self, options, stop_file=None):
        self.options = options
        self.stop_file = stop_file
        self.last = None          # the last Comparison
        self.kernels = None       # (eager, fused) kernels launched by the last call

    def configure(self, **kw):
        """A comparer with other options (rtol, atol, int_atol, equal_nan, backend, recheck,
        max_mismatches)."""
        return Comparer(self.options.updated("lazycv_compare.configure", **kw), self.stop_file)

    def _once(self, fuse, fn, args, kwargs):
        from .compare import Recorder, mode, record_value
        rec = Recorder(stop_file=self.stop_file)
        with rec, mode(fuse, self.options.backend):
            before = _stats()
            value = record_value(fn(*args, **kwargs), rec)
        return value, rec.records, _delta(before, _stats()).get("kernels_launched", 0)

    def __call__(self, fn, *args, **kwargs):
        __tracebackhide__ = True
        from .compare import compare_records
        name = getattr(fn, "__name__", repr(fn))
        tol = self.options.tolerance
        eager_val, eager, ek = self._once(False, fn, args, kwargs)
        try:
            fused_val, fused, fk = self._once(True, fn, args, kwargs)
        except Exception as exc:
            raise CompareFailure(f"lazycv compare: {name} returned in the eager run and raised "
                                 f"{type(exc).__name__}: {exc} in the fused run") from exc
        self.kernels = (ek, fk)
        cmp = self.last = compare_records(eager, fused, tol, max_items=self.options.max_mismatches)
        if cmp.ok:
            return eager_val, fused_val
        nondet = None
        if self.options.recheck:
            try:
                _, again, _ = self._once(False, fn, args, kwargs)
                c2 = compare_records(eager, again, tol, ("eager", "eager re-run"),
                                     max_items=self.options.max_mismatches)
                nondet = None if c2.ok else c2
            except Exception as exc:
                nondet = f"a second eager run of {name} raised {type(exc).__name__}: {exc}"
        backend = lazycv.backend() if lazycv.is_enabled() else (self.options.backend or "auto")
        context = f"{name}; backend {backend}; tolerance: {tol.describe()}; kernels launched: eager {ek}, fused {fk}"
        raise CompareFailure(_mismatch_text(cmp, nondet, context, self.options.recheck))


@pytest.fixture
def lazycv_compare(request):
    """``eager, fused = lazycv_compare(fn, *args, **kwargs)``: run ``fn`` eager (one kernel per
    op) and fused, and assert that every array it downloads or returns is equal within the
    tolerances (ini options, the test's ``lazycv_compare`` marker, or
    ``lazycv_compare.configure(rtol=...)``)."""
    plugin = _plugin(request.config)
    settings = plugin.settings if plugin is not None else Settings(request.config)
    opts = settings.defaults
    marker = request.node.get_closest_marker("lazycv_compare")
    if marker is not None:
        opts = opts.updated(request.node.nodeid, **marker.kwargs)
    path = getattr(request.node, "path", None)
    return Comparer(opts, stop_file=str(path) if path is not None else None)

