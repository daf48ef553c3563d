"""Layer 2: a reusable, batch-aware pipeline object (lazycv.compose) — the same IR, planner,
kernel cache and backends as cv2.cuda calls, and the same results.

    python samples/layer2_compose.py [--batch 8] [--svg plan.svg]

docs/layer2-compose.md lists the steps and the input/output forms.
"""
import sys
import time

import cv2
import numpy as np

import lazycv

batch_size = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 4
svg_path = sys.argv[sys.argv.index("--svg") + 1] if "--svg" in sys.argv else None

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def centre(w, h):
    """A centre square, for frames of any size."""
    s = min(w, h)
    return (w - s) // 2, (h - s) // 2, s, s


preprocess = lazycv.compose(
    lazycv.read(),
    lazycv.crop(centre),
    lazycv.resize((224, 224)),
    lazycv.cvt_color(cv2.COLOR_BGR2RGB),
    lazycv.convert(np.float32, 1 / 255),
    lazycv.normalize(MEAN, STD),
    lazycv.to_planar(),
    lazycv.write(),
)
print(preprocess)

rng = np.random.default_rng(0)
frames = rng.integers(0, 256, (batch_size, 480, 640, 3), dtype=np.uint8)    # (B, H, W, C) BGR
stream = lazycv.Stream()                               # cv2.cuda.Stream once lazycv.enable()d

print(preprocess.explain(frames[:2]))                  # what a run launches (nothing runs)
if svg_path:
    with open(svg_path, "w") as fh:
        fh.write(preprocess.explain(frames[:2], format="svg"))
    print("plan picture written to", svg_path)

t = time.perf_counter()
nchw = preprocess(frames, stream=stream)               # first call compiles
t1 = time.perf_counter()
out = np.empty_like(nchw)
preprocess(frames, stream=stream, out=out)             # later calls reuse the kernel
t2 = time.perf_counter()
print("batch", nchw.shape, nchw.dtype, "first call %.3f s, second %.3f s" % (t1 - t, t2 - t1))



def by_hand(frame):
    """The same steps through cv2.cuda (layer 1): the same kernels, the same numbers."""
    with lazycv.enabled():
        g = cv2.cuda_GpuMat()
        g.upload(frame)
        r = cv2.cuda.resize(cv2.cuda_GpuMat(g, centre(640, 480)), (224, 224))
        f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32F, alpha=1 / 255)
        f = cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), STD)
        del r                                          # only the planes are wanted
        planes = cv2.cuda.split(f)
        del f
        return np.stack([p.download() for p in planes])


by_hand = by_hand(frames[0])
print("compose == cv2.cuda:", bool(np.array_equal(by_hand, nchw[0])))
print(lazycv.stats())
assert np.array_equal(by_hand, nchw[0]) and np.array_equal(out, nchw)

# For a model: the whole batch as one device array, (B, 3, 224, 224). From the second batch of
# a shape on, the pipeline is one launch (a batch program); torch.as_tensor(t, device="cuda")
# or cupy.asarray(t) take it without a copy on CUDA (a numpy array on the CPU backend).
fixed = lazycv.compose(lazycv.crop((80, 0, 480, 480)), lazycv.resize((224, 224)),
                       lazycv.cvt_color(cv2.COLOR_BGR2RGB), lazycv.convert(np.float32, 1 / 255),
                       lazycv.normalize(MEAN, STD), lazycv.to_planar(), lazycv.write(tensor=True))
fixed(frames)                                          # records, plans and captures the program
lazycv.reset_stats()
tensor = fixed(frames)
host = tensor if isinstance(tensor, np.ndarray) else tensor.copy_to_host()
print("tensor", tuple(tensor.shape), "ops recorded by the second batch:", lazycv.stats()["ops_recorded"])
assert np.array_equal(host, nchw) and lazycv.stats()["ops_recorded"] == 0
