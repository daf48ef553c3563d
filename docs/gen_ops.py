"""Write docs/op-table.md (every cv2.cuda name and what lazycv does with it) and docs/img/plan.svg
(the picture on the how-it-works page) from the code.

    python docs/gen_ops.py

tests/test_docs_examples.py fails when the committed op table is not what this writes.
"""
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATUS = {"fused": "fused", "fallback": "CPU OpenCV", "unsupported": "raises cv2.error"}


def _summary(obj):
    """The first paragraph of ``obj``'s docstring on one line, as Markdown table text."""
    doc = inspect.getdoc(obj) if obj is not None else None
    if not doc:
        return ""
    text = " ".join(doc.split("\n\n")[0].split())
    return text.replace("``", "`").replace("|", "\\|")


def op_table():
    import lazycv
    from lazycv.facade import cuda_names
    from lazycv.ops import API
    from lazycv.ops.algorithms import FALLBACK_API
    from lazycv.ops.video import CODEC_API
    table = lazycv.supported()
    counts = {s: sum(1 for v in table.values() if v == s) for s in STATUS}
    lines = [
        "# Op table",
        "",
        "<!-- written by docs/gen_ops.py from lazycv.supported() and the functions' docstrings; "
        "do not edit by hand -->",
        "",
        f"Every function and class of OpenCV's CUDA modules, and what lazycv does with it: "
        f"**{counts['fused']} fused** (recorded lazily and compiled into fused kernels), "
        f"**{counts['fallback']} through CPU OpenCV** (correct results; the data goes to the host and back, "
        f"counted in `stats()[\"fallbacks\"]`, a `FallbackWarning` once per function), "
        f"**{counts['unsupported']} raise `cv2.error`** saying why. The same list: `lazycv ops`, or "
        "`lazycv.supported()` in Python; numerics and limits per family: [the op reference](ops.md).",
        "",
        "| cv2.cuda name | under lazycv | what it is |",
        "|---|---|---|",
    ]
    for name, status in table.items():
        if name.startswith("cudacodec."):
            short = name.split(".", 1)[1]
            obj = CODEC_API.get(short)
            why = "needs NVIDIA's video codec SDK" if status == "unsupported" else ""
        else:
            obj = API.get(name) or FALLBACK_API.get(name)
            cls = name.rpartition("_")[0]
            why = (cuda_names.NO_CPU_EQUIVALENT.get(name) or cuda_names.NO_CPU_EQUIVALENT.get(cls)
                   or "needs a CUDA build of OpenCV") if status == "unsupported" else ""
        what = _summary(obj) or (f"not available: {why}" if why else "")
        lines.append(f"| `{name}` | {STATUS[status]} | {what} |")
    return "\n".join(lines) + "\n"


def plan_picture():
    """The how-it-works picture: a cv2.cuda preprocessing chain with a named intermediate that
    a second consumer reads through a resize (two kernels)."""
    import cv2
    import numpy as np

    import lazycv
    with lazycv.enabled(backend="cpu"):
        frame = np.zeros((1080, 1920, 3), np.uint8)
        gpu = cv2.cuda_GpuMat()
        gpu.upload(frame)
        r = cv2.cuda.resize(cv2.cuda_GpuMat(gpu, (240, 60, 1440, 960)), (640, 640))
        rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
        f = cv2.cuda.subtract(rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255), (0.485, 0.456, 0.406))
        planes = cv2.cuda.split(f)
        thumb = cv2.cuda.resize(rgb, (160, 160))
        return lazycv.explain(planes, thumb, format="svg")


def main():
    with open(os.path.join(HERE, "op-table.md"), "w") as f:
        f.write(op_table())
    os.makedirs(os.path.join(HERE, "img"), exist_ok=True)
    with open(os.path.join(HERE, "img", "plan.svg"), "w") as f:
        f.write(plan_picture())
    print("wrote docs/op-table.md and docs/img/plan.svg")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    main()
