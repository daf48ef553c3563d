"""Nsight Compute on W1's kernels at 64 frames: lazycv's batched kernel (the cv2.cuda loop and
the compose pipeline) and the hand-written CUDA C++ peer (bit-exact), one profiled launch each —
DRAM throughput, L1/L2 hit rates, achieved occupancy and where warps stall. Run under ncu:

    ncu --target-processes all -k regex:'^(kernel|w1_fused)' --section SpeedOfLight \\
        --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \\
        python bench/ncu_w1.py

(each contestant runs twice: the first launch compiles; profile the later ones with
--launch-skip). Without ncu it just runs the three once more each.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    import peers
    import w1
    frames = peers.make_frames(64, seed=64)
    loop = w1.lazycv_setup(frames, True)
    compose = w1.lazycv_compose_setup(frames, True)
    import cupy as cp
    cpp = peers.cupy_rawkernel(bitexact=True)
    x = cp.asarray(frames)
    for _ in range(2):
        loop()
        compose()
        cpp(x)
        cp.cuda.runtime.deviceSynchronize()
        w1.sync()
    print("ran: lazycv loop, lazycv compose, C++ bit-exact (x2)")


if __name__ == "__main__":
    main()
