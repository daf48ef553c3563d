"""W5: page-locked host frames -> H2D -> W1 -> D2H, with streams (lazycv.StreamedLoop) vs one
serial stream, in frames/s, beside the copy-engine bound.

The serial loop uploads, computes and downloads each frame before the next (what a loop without
streams does). The streamed loop overlaps the three stages of consecutive frames on a copy
stream each way and a compute stream. The graph form (``graph=True``) is timed twice: a new
StreamedLoop a run (three captures and allocations before the first frame, in the time), and
one loop iterated again (a service feeding clip after clip through one loop: its later passes
capture nothing).

The copy-engine bound is the frame rate if the busier copy direction never stopped:
1 / max(H2D time, D2H time) per frame, each timed alone on page-locked memory; beside it, the
rate of a frame's upload and download issued together on two streams with no compute (what the
engines reach when they share the bus). Targets (BENCHMARKS.md): >= 1.8x serial and >= 90 % of
the bound.

    python bench/w5.py [--frames 256] [--size 1920x1080] [--depth 3] [--repeats 3]

Runs on every backend (the backend is printed beside the numbers; on the CPU nothing overlaps).
Writes $OUT/w5.json (or bench/out/w5.json).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from w1 import MEAN, STD  # noqa: E402


def w1_frame(g):
    """W1 on one frame: resize 640x640, BGR2RGB, x 1/255, - mean, / std, planar."""
    import cv2
    r = cv2.cuda.resize(g, (640, 640), interpolation=cv2.INTER_LINEAR)
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), STD))


def serial(frames, outs):
    """One frame at a time on one stream: upload, compute, download, wait."""
    import cv2
    s = cv2.cuda_Stream()
    g = cv2.cuda_GpuMat()
    for host in frames:
        g.upload(host, s)
        with __import__("lazycv").on_stream(s):
            planes = w1_frame(g)
        for p, o in zip(planes, outs):
            p.download(o, s)
        s.waitForCompletion()


def streamed(frames, depth, graph=False):
    import lazycv
    n = 0
    for _ in lazycv.StreamedLoop(frames, w1_frame, depth=depth, graph=graph):
        n += 1
    return n


def pinned_frames(n, size):
    """``n`` page-locked 1080p-like BGR frames (``size`` "WxH"), each the last one shifted."""
    import cv2
    w, h = (int(v) for v in size.split("x"))
    base = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return [cv2.cuda_HostMem(np.roll(base, i, axis=1)) for i in range(n)]


def copy_time(frame, outs, repeats=20):
    """(H2D ms, D2H ms, both at once ms) per frame on page-locked memory, device-timed: the
    frame's upload and its three planes' download, each direction alone, then both at once
    on two streams (what a pipeline can reach when the two copy engines share the bus).

    The copies are issued through the backend's lane (lazycv/backends/lanes.py, a few µs an
    issue against ~40 µs a plane's copy), so the copy engines never wait for the host: a
    facade call a copy can cost as much as the copy on a slow host and would understate the
    engines (inflate the bound's time)."""
    import cv2
    import lazycv.runtime
    ops = lazycv.runtime.backend().lane()
    s, s2 = cv2.cuda_Stream(), cv2.cuda_Stream()
    g = cv2.cuda_GpuMat()
    g.upload(frame)
    planes = [cv2.cuda_GpuMat(640, 640, cv2.CV_32FC1) for _ in range(3)]
    src, dev = frame.createMatHeader(), g.cudaPtr()
    host_in, nbytes_in = src.__array_interface__["data"][0], src.nbytes
    copies_out = [(o.__array_interface__["data"][0], p.cudaPtr(), o.nbytes) for o, p in zip(outs, planes)]
    h1, h2 = ops.stream(s._handle()), ops.stream(s2._handle())

    def upload(h):
        for _ in range(repeats):
            ops.copy_in(dev, host_in, nbytes_in, h)

    def download(h):
        for _ in range(repeats):
            for dst, src_addr, n in copies_out:
                ops.copy_out(dst, src_addr, n, h)

    def timed(*work):
        """ms a frame of ``work`` ((issue, stream) pairs started together)."""
        a = cv2.cuda_Event()
        a.record(s)
        ends = []
        for issue, stream in work:
            stream.waitEvent(a)
            issue(h1 if stream is s else h2)
            e = cv2.cuda_Event()
            e.record(stream)
            ends.append(e)
        for e in ends:
            e.waitForCompletion()
        return max(cv2.cuda.Event.elapsedTime(a, e) for e in ends) / repeats

    timed((upload, s), (download, s2))                 # (warm)
    return timed((upload, s)), timed((download, s)), timed((upload, s), (download, s2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    lazycv.enable()
    w, h = (int(v) for v in args.size.split("x"))
    frames = pinned_frames(args.frames, args.size)
    outs = [cv2.cuda_HostMem(640, 640, cv2.CV_32FC1).createMatHeader() for _ in range(3)]
    streamed(frames[:args.depth + 2], args.depth)          # compile and warm
    streamed(frames[:args.depth + 2], args.depth, graph=True)
    serial(frames[:2], outs)
    kept = lazycv.StreamedLoop(frames, w1_frame, depth=args.depth, graph=True)
    sum(1 for _ in kept)                 # its first pass captures; the timed ones reuse it
    rows = {}
    for name, run in (("serial", lambda: serial(frames, outs)), ("streamed", lambda: streamed(frames, args.depth)),
                      ("graph", lambda: streamed(frames, args.depth, graph=True)),
                      ("graph_again", lambda: sum(1 for _ in kept))):
        best = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run()
            best.append(time.perf_counter() - t0)
        rows[name] = args.frames / min(best)
    h2d, d2h, both = copy_time(frames[0], outs)
    bound = 1e3 / max(h2d, d2h) if max(h2d, d2h) > 0 else float("inf")
    shared = 1e3 / both if both > 0 else float("inf")
    backend = lazycv.backend()
    print(f"W5 on {backend}: {args.frames} frames {w}x{h} -> W1 -> 3x640x640 f32, depth {args.depth}")
    print(f"  serial   {rows['serial']:9.1f} frames/s")
    print(f"  streamed {rows['streamed']:9.1f} frames/s  ({rows['streamed'] / rows['serial']:.2f}x serial)")
    print(f"  graph    {rows['graph']:9.1f} frames/s  ({rows['graph'] / rows['serial']:.2f}x serial; "
          "StreamedLoop(graph=True): each slot replays its captured W1)")
    print(f"  graph, the loop iterated again {rows['graph_again']:9.1f} frames/s  ({rows['graph_again'] / rows['serial']:.2f}x "
          "serial; one StreamedLoop object's later passes: its graphs, lanes and buffers kept)")
    print(f"  copy-engine bound {bound:9.1f} frames/s (H2D {h2d:.3f} ms, D2H {d2h:.3f} ms per frame; "
          f"streamed at {100 * rows['streamed'] / bound:.0f} %, graph at {100 * rows['graph'] / bound:.0f} %, iterated again at "
          f"{100 * rows['graph_again'] / bound:.0f} %)")
    print(f"  both copies at once {shared:9.1f} frames/s ({both:.3f} ms a frame's upload and download issued "
          f"together on two streams; graph at {100 * rows['graph'] / shared:.0f} %, iterated again at "
          f"{100 * rows['graph_again'] / shared:.0f} %)")
    common.write_json(common.out_dir() / "w5.json", {
        "backend": backend, "frames": args.frames, "size": [w, h], "depth": args.depth,
        "serial_fps": rows["serial"], "streamed_fps": rows["streamed"], "graph_fps": rows["graph"], "graph_again_fps": rows["graph_again"],
        "h2d_ms": h2d, "d2h_ms": d2h,
        "copy_bound_fps": bound, "both_copies_ms": both, "both_copies_fps": shared, "stats": lazycv.stats()})


if __name__ == "__main__":
    main()
