"""Draw the W1 benchmark as PNG: effective bandwidth per call against batch size, and the
per-frame time at one frame (W2), lazycv next to its peers from the same run.

    python bench/plot.py path/to/w1.json [--out w1.png]     (needs matplotlib: lazycv[bench])
"""
import argparse
import json
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("w1_json")
    ap.add_argument("--out", default=None, help="PNG path (default: beside the JSON)")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(args.w1_json).read_text())
    rows = data["rows"]
    by_name = {}
    for r in rows:
        by_name.setdefault(r["contestant"], []).append(r)
    fig, (ax_bw, ax_b1) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.get_cmap("tab20").colors                     # one colour per contestant (> 10)
    for k, (name, rs) in enumerate(sorted(by_name.items())):
        rs = sorted(rs, key=lambda r: r["batch"])
        style = "--" if "kernels only" in name else "-"       # device time only, no host
        ax_bw.plot([r["batch"] for r in rs], [r["tb_per_s"] for r in rs], style, marker="o", label=name,
                   color=colors[(2 * k) % 20 + (2 * k) // 20 % 2])
    ax_bw.set_xscale("log", base=2)
    ax_bw.set_yscale("log")
    ax_bw.set_xlabel("frames per call (B)")
    ax_bw.set_ylabel("effective TB/s (bytes read + written once / time)")
    ax_bw.set_title("W1: 1080p BGR -> 640x640 normalised CHW")
    ax_bw.grid(True, which="both", alpha=0.3)
    ax_bw.legend(fontsize=7)
    one = sorted((r for r in rows if r["batch"] == 1 and "kernels only" not in r["contestant"]),
                 key=lambda r: r["median_ms"])
    names = [r["contestant"] for r in one]
    ax_b1.barh(names, [r["median_ms"] * 1e3 for r in one], color="#4c72b0")
    ax_b1.set_xscale("log")
    ax_b1.set_xlabel("µs per frame, one frame per call (W2), host included")
    ax_b1.set_title("W2: per-frame time")
    ax_b1.grid(True, axis="x", which="both", alpha=0.3)
    dev = data.get("device", {})
    fig.suptitle(f"{dev.get('gpu', '?')} — lazycv backend {data.get('lazycv_backend')}", fontsize=9)
    fig.tight_layout()
    out = Path(args.out) if args.out else Path(args.w1_json).with_suffix(".png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
