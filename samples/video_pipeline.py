"""A video pipeline with the media patterns: read a video, and per frame upload, correct its
exposure with the brightness measured k frames earlier (a delay buffer: no host sync), prepare a
model input, download, and write the corrected video. The frames go through
``lazycv.StreamedLoop`` (upload, compute and download of consecutive frames overlap on CUDA);
the result is checked against the same steps run one frame at a time.

    python samples/video_pipeline.py [--frames 24] [--size 128x96] [--delay 3]
"""
import argparse
import os
import tempfile
import time

import cv2
import numpy as np

import lazycv

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def make_video(path, n, w, h):
    """A small MJPG video whose brightness drifts (something for the exposure loop to correct)."""
    out = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 25, (w, h))
    x = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
    y = np.linspace(0, 255, h, dtype=np.float32)[:, None, None]
    for i in range(n):
        level = 0.4 + 0.5 * (i % 12) / 11
        frame = np.concatenate([x + 0 * y, y + 0 * x, (x + y + 8 * i) % 256], axis=2) * level
        out.write(frame.astype(np.uint8))
    out.release()


def read_video(path):
    cap, frames = cv2.VideoCapture(path), []
    while True:
        ok, frame = cap.read()
        if not ok:
            return frames
        frames.append(frame)


def frame_steps(delay, size):
    """One frame: exposure from the brightness of k frames ago, then the model's input."""
    def steps(g):
        w, h = g.size()
        gray = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY)
        mean = cv2.cuda.multiply(cv2.cuda.calcSum(gray), 1.0 / (w * h))
        gain = delay.push(cv2.cuda.divide(118.0, mean))            # this frame's, frame n-k's back
        corrected = cv2.cuda.multiply(g, gain)
        r = cv2.cuda.resize(corrected, size, interpolation=cv2.INTER_LINEAR)
        f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
        planes = cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), STD))
        return [corrected] + list(planes)
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--size", default="128x96")
    ap.add_argument("--delay", type=int, default=3)
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    lazycv.enable()
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.avi"), os.path.join(tmp, "out.avi")
        make_video(src, args.frames, w, h)
        frames = read_video(src)
        like = cv2.cuda.calcSum(cv2.cuda.cvtColor(cv2.cuda_GpuMat(frames[0]), cv2.COLOR_BGR2GRAY))
        model_size = (64, 64)

        steps = frame_steps(lazycv.DelayBuffer(args.delay, like, initial=1.0), model_size)
        writer = cv2.VideoWriter(dst, cv2.VideoWriter_fourcc(*"MJPG"), 25, (w, h))
        streamed = []
        t0 = time.perf_counter()
        for i, (corrected, *planes) in lazycv.StreamedLoop(frames, steps, depth=3):
            writer.write(corrected)
            streamed.append([corrected.copy()] + [p.copy() for p in planes])
        seconds = time.perf_counter() - t0
        writer.release()

        # the same steps one frame at a time, without streams
        serial_steps = frame_steps(lazycv.DelayBuffer(args.delay, like, initial=1.0), model_size)
        for i, frame in enumerate(frames):
            want = [m.download() for m in serial_steps(cv2.cuda_GpuMat(frame))]
            for got, ref in zip(streamed[i], want):
                if not np.array_equal(got, ref):
                    raise SystemExit(f"frame {i}: the streamed loop differs from the serial one")
        written = len(read_video(dst))
    print(f"{len(frames)} frames {w}x{h} on {lazycv.backend()}: {len(frames) / seconds:.1f} frames/s "
          f"(streamed loop, delay {args.delay}, first compiles included); equal to the serial loop; {written} frames written")
    print(lazycv.stats())


if __name__ == "__main__":
    main()
