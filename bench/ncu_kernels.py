"""Nsight Compute on one workload's kernels, one contestant a run: lazycv's batched kernels for
W1 at 64 frames (the cv2.cuda loop, the compose pipeline), the hand-written CUDA C++ peer
(bit-exact), and W3 / W4 (bench/w34.py) — DRAM throughput, L1/L2 hit rates, achieved occupancy,
where warps stall, and each kernel's device time without the host's launch cost. Under ncu:

    ncu --target-processes all -k regex:'kernel|w1_fused' --launch-skip 1 --section SpeedOfLight \\
        --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \\
        python bench/ncu_kernels.py w1-loop        # or w1-compose, w1-cpp, w3, w3-compose, w4

Each contestant runs twice (the first run compiles and captures; --launch-skip 1 profiles the
second). Without ncu it just runs them.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def contestant(name):
    """A zero-argument callable running ``name`` once on fresh data (set up untimed)."""
    import peers
    import w1
    import w34
    if name.startswith("w1"):
        frames = peers.make_frames(64, seed=64)
        if name == "w1-loop":
            return w1.lazycv_setup(frames, True)
        if name == "w1-compose":
            return w1.lazycv_compose_setup(frames, True)
        import cupy as cp
        cpp, x = peers.cupy_rawkernel(bitexact=True), cp.asarray(frames)
        return lambda: cpp(x)
    rng = np.random.default_rng(3)
    if name.startswith("w3"):
        f4k = rng.integers(0, 256, (2160, 3840, 3), dtype=np.uint8)
        rois = w34.rois_for(50, 2160, 3840)
        return w34.w3_compose(f4k, rois) if name == "w3-compose" else w34.w3_lazycv(f4k, rois, True)
    f1080 = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    return w34.w4_lazycv(f1080, True)


def main():
    import w1
    names = sys.argv[1:] or ["w1-loop", "w1-compose", "w1-cpp"]
    for name in names:
        run = contestant(name)
        for _ in range(2):
            run()
            w1.sync()
        print(f"ran {name} twice")


if __name__ == "__main__":
    main()
