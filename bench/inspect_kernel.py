"""Look at W1's generated CUDA kernel on the device: registers and local memory per thread,
the PTX (written to $OUT), and its device time at several block shapes.

    python bench/inspect_kernel.py [--batch 64]
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def opcode_histogram(sass, top=24):
    """(total instructions, the most frequent opcodes) of a SASS listing: generic ``LD`` where
    ``LDG`` was expected, select trees (``ISETP``/``BRA``) or division slow paths show here."""
    import collections
    import re
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if m:
            ops[m.group(1)] += 1
    return sum(ops.values()), ops.most_common(top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    # a cache folder of its own: a kernel from another process's kept cubin has no numba
    # overload to inspect (lazycv/backends/cubins.py), so this run compiles it
    import tempfile
    os.environ["LAZYCV_CACHE_DIR"] = tempfile.mkdtemp(prefix="lazycv-inspect-")
    import lazycv
    from lazycv.backends import cuda as cuda_backend
    import w1
    frames = [np.random.default_rng(i).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
              for i in range(args.batch)]
    run = w1.lazycv_setup(frames, True)
    run()
    w1.sync()
    be = lazycv.runtime.STATE.backend
    out = os.environ.get("OUT", "bench/out")
    os.makedirs(out, exist_ok=True)
    for fn, direct in be._direct.items():
        k = direct.kernel
        regs = k.get_regs_per_thread() if hasattr(k, "get_regs_per_thread") else k.regs_per_thread
        local = k.get_local_mem_per_thread() if hasattr(k, "get_local_mem_per_thread") else "?"
        name = fn.py_func.__module__
        print(f"{name}: {len(k.argument_types)} args, {regs} registers/thread, local mem {local} B/thread")
        try:
            ptx = k.inspect_asm(cc=(9, 0))
            with open(os.path.join(out, f"{name[-12:]}.ptx"), "w") as f:
                f.write(ptx)
        except Exception as e:  # noqa: BLE001
            print("  no PTX:", e)
        try:
            sass = k.inspect_sass()
            with open(os.path.join(out, f"{name[-12:]}.sass"), "w") as f:
                f.write(sass)
            print("  SASS opcodes:", opcode_histogram(sass))
        except Exception as e:  # noqa: BLE001
            print("  no SASS:", e)
    default = cuda_backend.BLOCK
    for block in [default, (32, 8, 1), (64, 4, 1)]:
        cuda_backend.BLOCK = block
        for d in be._direct.values():
            d.configs.clear()
        ms, n = w1.kernel_only(run, 10)
        print(f"block {block}: kernels only {ms:.3f} ms per batch of {args.batch} ({n} launch)")
    cuda_backend.BLOCK = default


if __name__ == "__main__":
    main()
