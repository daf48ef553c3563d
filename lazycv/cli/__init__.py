"""``lazycv`` / ``python -m lazycv``: info, ops, demo, bench, explain, cache.

Every command reports an error as one line on stderr (``lazycv <command>: error: ...``) and a
non-zero exit status, never a traceback (``LAZYCV_DEBUG=1`` shows it): what a user pastes into
a bug report is ``lazycv info``.
"""
import argparse
import os
import sys


class CliError(Exception):
    """An error to print as one line (a bad argument, a missing GPU, a failing script)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line instead of the usage block."""

    def error(self, message):
        raise CliError(message)


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def int_list(text):
    values = [positive_int(t) for t in text.split(",") if t.strip()]
    if not values:
        raise argparse.ArgumentTypeError("expected numbers separated by commas, e.g. 1,8")
    return values


BACKENDS = ("cuda", "cpu", "cuda-sim")


def prepare_backend(name):
    """Check a requested backend before anything imports numba.cuda: the simulator must be
    switched on first, and "cuda" needs a usable GPU (one clear line otherwise)."""
    if name == "cuda-sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    elif name == "cuda":
        from ..backends import cuda_usable
        if not cuda_usable():
            from .info import gpu_problem
            raise CliError(f"--backend cuda needs a usable NVIDIA GPU, and {gpu_problem()}; "
                           "use --backend cpu (or leave --backend out to choose automatically)")
    return name


def _parser():
    from . import bench, demo, explain, info
    ap = _Parser(prog="lazycv", description="lazycv: unchanged cv2.cuda code, fused into Numba kernels.")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    for mod in (info, demo, bench, explain):
        mod.add_commands(sub)
    return ap


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    cmd = next((a for a in argv if not a.startswith("-")), "lazycv")
    try:
        ap = _parser()
        args = ap.parse_args(argv)
        if args.cmd is None:
            ap.print_help()
            return 2
        return args.run(args) or 0
    except CliError as e:
        print(f"lazycv {cmd}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"lazycv {cmd}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:                  # one line; the traceback only when debugging
        if os.environ.get("LAZYCV_DEBUG", "0") not in ("", "0"):
            raise
        text = str(e).strip().splitlines()
        print(f"lazycv {cmd}: error: {type(e).__name__}: {text[-1] if text else ''} "
              "(LAZYCV_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1
