"""Instructions a W3 frame costs the host, per lazycv tree: a measure that a busy or throttled
machine does not move (wall times on shared hosts swing by 2x between processes, see
w3_spread.py). Each tree's W3 loop (w34's 50 crops, CPU backend, the batched launch stubbed out
after the warm-up, as ``w3_spread.py --stub-launch``) runs under Valgrind's callgrind with
instrumentation switched on only around the frames; the frames' cost is the difference of a
short and a long run, divided by the extra frames.

    python bench/w3_instructions.py --trees /tmp/old_tree,. [--frames 10,40]

Needs valgrind (callgrind_control). Prints a table, writes $OUT/w3_instructions.json (or
bench/out/); ``--profile DIR`` keeps each long run's callgrind.out for callgrind_annotate.
"""
import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_RUNS = itertools.count()


def child(n, flag):
    """Warm up, say so (flag.ready), run ``n`` frames once told (flag.go), say so (flag.done)
    and wait to be let go (flag.end): the parent switches the instrumentation around the frames."""
    sys.path.insert(0, str(HERE))
    import w34
    fn = w34.w3_lazycv(*w34.w3_inputs(), fuse=True)
    for _ in range(5):
        fn()
    from lazycv.backends import cpu
    cpu.CpuBackend.launch_batched = lambda self, *a, **k: None
    for _ in range(5):
        fn()
    import gc
    gc.collect()
    _touch(flag + ".ready")
    _wait(flag + ".go")
    for _ in range(n):
        fn()
    _touch(flag + ".done")
    _wait(flag + ".end")


def _touch(path):
    open(path, "w").close()


def _wait(path, timeout=1800):
    t0 = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(path)
        time.sleep(0.05)


def instructions(tree, n, work, keep=None):
    """Instructions callgrind counted over ``n`` W3 frames of ``tree``."""
    flag = str(work / f"f{next(_RUNS)}")                  # (each run its own flag files)
    out = work / f"callgrind.{n}.out"
    env = dict(os.environ, LAZYCV_BACKEND="cpu", PYTHONPATH=os.pathsep.join(
        [str(Path(tree).resolve())] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, __file__, "--child", str(n), flag]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(flag + ".ready")
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
        _touch(flag + ".go")
        _wait(flag + ".done")
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
        _touch(flag + ".end")
        log, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    for line in log.splitlines():
        if "Collected :" in line:
            if keep is not None:
                shutil.copy(out, keep)
            return int(line.split(":")[-1].replace(",", ""))
    raise RuntimeError(f"callgrind reported no count for {tree}:\n{log[-2000:]}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(int(sys.argv[2]), sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", default=".")
    ap.add_argument("--frames", default="10,40", help="the short and the long run's frames")
    ap.add_argument("--profile", help="a folder for each tree's callgrind.out of the long run")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("w3_instructions: needs valgrind and callgrind_control")
    sys.path.insert(0, str(HERE))
    import common
    n1, n2 = (int(x) for x in args.frames.split(","))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, tree in enumerate(args.trees.split(",")):
            keep = None
            if args.profile:
                os.makedirs(args.profile, exist_ok=True)
                keep = os.path.join(args.profile, f"callgrind.{i}.out")
            a = instructions(tree, n1, Path(tmp))
            b = instructions(tree, n2, Path(tmp), keep)
            rows.append({"tree": tree, "frames": [n1, n2], "instructions": [a, b],
                         "per_frame": (b - a) / (n2 - n1)})
    table = common.Table(["tree", "M instructions a frame", "vs first"])
    for r in rows:
        table.add(r["tree"], r["per_frame"] / 1e6, r["per_frame"] / rows[0]["per_frame"])
    print(table)
    print(f"wrote {common.write_json('w3_instructions.json', {'rows': rows})}")


if __name__ == "__main__":
    main()
