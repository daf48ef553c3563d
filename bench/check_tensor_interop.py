"""On the GPU: a compose batch tensor (write(tensor=True)) taken by torch and cupy without a
copy equals CPU OpenCV, and keeps its memory when lazycv's own reference is dropped (the next
batches must not reuse it while torch or cupy holds it).

    python bench/check_tensor_interop.py
"""
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def main():
    import lazycv
    lazycv.enable(backend="cuda")
    p = lazycv.compose(lazycv.resize((64, 48)), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                       lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                       lazycv.to_planar(), lazycv.write(tensor=True))
    held, failures = [], 0
    for call in range(4):
        frames = peers.make_frames(4, seed=call, h=120, w=160)
        ref = np.stack([_reference(f) for f in frames])
        t = p(list(frames))
        if call % 2:
            import cupy
            foreign, name = cupy.asarray(t), "cupy"
            same = foreign.data.ptr == t.__cuda_array_interface__["data"][0]
        else:
            import torch
            foreign, name = torch.as_tensor(t, device="cuda"), "torch"
            same = foreign.data_ptr() == t.__cuda_array_interface__["data"][0]
        del t                                   # only the foreign array refers to it now
        held.append((name, foreign, ref, same))
    for name, foreign, ref, same in held:     # after every later batch ran
        got = foreign.cpu().numpy() if name == "torch" else foreign.get()
        err = float(np.abs(got - ref).max())
        ok = same and err <= 1e-5          # float tolerance of the test suite (a reused buffer: O(1))
        failures += not ok
        print(f"{name}: zero-copy {same}, max error vs CPU OpenCV after later batches {err:.3g}"
              f" -> {'ok' if ok else 'FAILED'}")
    print(f"program batches: {sum(v is not None for v in p._programs.values())}")
    sys.exit(1 if failures else 0)


def _reference(frame):
    r = cv2.resize(frame, (64, 48), interpolation=cv2.INTER_LINEAR)
    f = cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    f = (f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return f.transpose(2, 0, 1)


if __name__ == "__main__":
    main()
