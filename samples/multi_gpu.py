"""Frames split across every GPU of the host: one thread per device, each selects its device
with ``cv2.cuda.setDevice`` and runs the usual preprocessing on its share of the frames. Memory,
kernels' launch state and streams are per device; the threads never mix their work.

    python samples/multi_gpu.py [frames]

Without GPUs the CPU backend presents ``LAZYCV_CPU_DEVICES`` virtual devices (default 1), so
the same code runs (and is tested) anywhere.
"""
import sys
import threading
import time

import cv2
import numpy as np

import lazycv

lazycv.enable()

N_FRAMES = int(sys.argv[1]) if len(sys.argv) > 1 else 24
rng = np.random.default_rng(0)
frames = [rng.integers(0, 256, (270, 480, 3), dtype=np.uint8) for _ in range(N_FRAMES)]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def preprocess(gpu, stream):
    """DNN preprocessing: resize, BGR->RGB, scale to [0, 1], normalise, planar."""
    r = cv2.cuda.resize(gpu, (224, 224), interpolation=cv2.INTER_LINEAR, stream=stream)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB, stream=stream)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255, stream=stream)
    f = cv2.cuda.subtract(f, MEAN, stream=stream)
    f = cv2.cuda.divide(f, STD, stream=stream)
    return cv2.cuda.split(f, stream=stream)


# ---- the usual multi-GPU cv2.cuda code: a worker thread per device ----
n_devices = cv2.cuda.getCudaEnabledDeviceCount()
outputs = [None] * N_FRAMES
errors = []


def worker(device):
    try:
        cv2.cuda.setDevice(device)                 # this thread's device from now on
        stream = cv2.cuda.Stream()
        gpu = cv2.cuda_GpuMat()
        for i in range(device, N_FRAMES, n_devices):
            gpu.upload(frames[i], stream=stream)
            planes = preprocess(gpu, stream)
            outputs[i] = np.stack([p.download(stream=stream) for p in planes])
        stream.waitForCompletion()
    except BaseException as e:                     # reported by the main thread
        errors.append(e)


lazycv.reset_stats()
start = time.perf_counter()
threads = [threading.Thread(target=worker, args=(d,)) for d in range(n_devices)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.perf_counter() - start
if errors:
    raise errors[0]
stats = lazycv.stats()

# ---- the same with CPU OpenCV, to check ----
for i, frame in enumerate(frames):
    rgb = cv2.cvtColor(cv2.resize(frame, (224, 224), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
    ref = ((rgb.astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)
    diff = float(np.abs(outputs[i] - ref).max())
    assert diff <= 1e-5, f"frame {i} differs from CPU OpenCV by {diff}"

print(f"{N_FRAMES} frames on {n_devices} device(s) ({lazycv.backend()} backend): "
      f"{N_FRAMES / elapsed:.1f} frames/s; kernels_launched={stats['kernels_launched']}; equal to CPU OpenCV")
