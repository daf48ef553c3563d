"""``lazycv explain SCRIPT [ARGS...]``: run a script under lazycv (as ``python SCRIPT ARGS``, with
``lazycv.enable()`` already called) and write the plan of its last flushes: what each flush
launched, as text on stdout and as SVG pictures (lazycv.explain(format="svg"))."""
import os
import runpy
import sys


class _Spy:
    """Wraps runtime.execute: each flush's plan, rendered before it runs (a flush then lets go of
    the graph), the last ``keep`` distinct ones."""

    def __init__(self, keep):
        self.keep, self.plans, self.flushes = keep, [], 0

    def install(self):
        from .. import runtime
        from ..report import explain_plan, explain_svg
        original = runtime.execute

        def execute(sinks, plan):
            def spied(values, by_node):
                kernels, phases = plan(values, by_node)
                names = {id(v): f"result {i}" for i, v in enumerate(values)}
                launches = sum(len(p) for p in phases)
                text = explain_plan(kernels, names, launches)
                self.flushes += 1
                if not self.plans or self.plans[-1][0] != text:
                    self.plans.append((text, explain_svg(kernels, names), self.flushes))
                    del self.plans[:-self.keep]
                return kernels, phases
            return original(sinks, spied)
        runtime.execute = execute
        return lambda: setattr(runtime, "execute", original)


def _run(args):
    from . import CliError, prepare_backend
    if not os.path.isfile(args.script):
        raise CliError(f"no such script: {args.script}")
    import lazycv
    backend = prepare_backend(args.backend)
    lazycv.enable(backend=backend, fuse=not args.eager)
    spy = _Spy(args.flushes)
    restore = spy.install()
    argv, path0 = sys.argv, sys.path[0]
    sys.argv = [args.script] + list(args.args)
    sys.path[0] = os.path.dirname(os.path.abspath(args.script))
    failure = None
    try:
        runpy.run_path(args.script, run_name="__main__")
        lazycv.materialize()
    except SystemExit as e:
        if e.code not in (None, 0):
            failure = f"{args.script} exited with {e.code}"
    except Exception as e:
        lines = str(e).strip().splitlines()
        failure = f"{args.script} raised {type(e).__name__}: {lines[-1] if lines else ''}"
    finally:
        sys.argv, sys.path[0] = argv, path0
        restore()
    _write(spy, args.out)
    if failure:
        raise CliError(failure)


def _write(spy, out):
    if not spy.plans:
        print(f"lazycv explain: the script ran no flush (nothing was computed on the device); no picture written")
        return
    stem, ext = os.path.splitext(out)
    many = len(spy.plans) > 1
    for j, (text, svg, flush) in enumerate(spy.plans, 1):
        path = f"{stem}-{j}{ext or '.svg'}" if many else (out if ext else out + ".svg")
        with open(path, "w") as f:
            f.write(svg)
        print(f"flush {flush} of {spy.flushes}: {path}")
        print(text)
        print()


def add_commands(sub):
    from . import BACKENDS, positive_int
    p = sub.add_parser("explain", help="run a script under lazycv and write the plan of its last flushes (SVG)")
    p.add_argument("script", help="a Python script using cv2.cuda")
    p.add_argument("args", nargs="*", help="the script's own arguments (after --)")
    p.add_argument("--out", default="lazycv-plan.svg", help="the picture's path (several: -1, -2, ... added)")
    p.add_argument("--flushes", type=positive_int, default=1,
                   help="how many of the last distinct flush plans to write (default 1)")
    p.add_argument("--backend", default=None, choices=BACKENDS)
    p.add_argument("--eager", action="store_true", help="one kernel per op (fuse=False)")
    p.set_defaults(run=_run)
