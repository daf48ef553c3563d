"""Where the host's time goes in the media loops: W5's streamed loop (plain and graph=True) and
W6's delay loop under
cProfile (the 25 functions of most own time each), to direct work on their host path.

    python bench/profile_media.py [--frames 128] [--size 1920x1080] [--top 25]

Writes $OUT/profile_media.txt (or bench/out/profile_media.txt).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import w5  # noqa: E402
import w6  # noqa: E402


def profiled(what, fn, top):
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return f"==== {what}\n{out.getvalue()}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=128)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    import cv2
    import lazycv
    lazycv.enable()
    w, h = (int(v) for v in args.size.split("x"))
    frames = w5.pinned_frames(args.frames, args.size)
    base = frames[0].createMatHeader()                           # (frame 0 is not shifted)
    w5.streamed(frames[:5], 3)                                   # compile and warm
    w5.streamed(frames[:5], 3, graph=True)
    gray = []
    for i in range(args.frames):
        g = cv2.cuda_GpuMat()
        g.upload(base[:, :, i % 3].copy())
        gray.append(g)
    like = cv2.cuda.calcSum(gray[0])
    w6.delay_loop(gray[:8], 5, like)
    w6.download_loop(gray[:8], 5)
    report = [f"backend {lazycv.backend()}, {args.frames} frames {w}x{h}"]
    report.append(profiled("W5 streamed loop", lambda: w5.streamed(frames, 3), args.top))
    report.append(profiled("W5 streamed loop, graph=True", lambda: w5.streamed(frames, 3, graph=True), args.top))
    report.append(profiled("W6 delay loop", lambda: (lazycv.materialize(*w6.delay_loop(gray, 5, like)), w6.sync()),
                           args.top))
    report.append(profiled("W6 download loop", lambda: w6.download_loop(gray, 5), args.top))
    text = "\n".join(report)
    print(text)
    path = common.out_dir() / "profile_media.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


if __name__ == "__main__":
    main()
