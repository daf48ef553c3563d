"""The python examples of the README and the three layer pages run and their assertions hold
(docs stay true).

Each page's ```python blocks run in order in one namespace, in a temporary folder (an example may
write a file), on the test backend."""
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["quickstart.md", "layer1-opencv.md", "layer2-compose.md", "layer3-ops.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page):
    return BLOCK.findall((ROOT / "docs" / page).read_text())


@pytest.mark.parametrize("page", PAGES)
def test_page_has_a_runnable_example(page, tmp_path, monkeypatch, capsys):
    blocks = python_blocks(page)
    assert blocks, f"docs/{page} has no python example"
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": f"docs_{page.split('.')[0].replace('-', '_')}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/{page} [block {i + 1}]", "exec"), ns)
        except Exception as e:
            raise AssertionError(f"docs/{page}, python block {i + 1} failed: {e!r}\n{code}") from e
    assert "kernels_launched" in capsys.readouterr().out       # every page prints lazycv.stats()


def test_readme_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's example, exactly as written (it defines what it uses), gives CPU OpenCV's
    answer, with the one fused kernel it promises (and the setTo fill, the first time)."""
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "readme"}
    exec(compile(blocks[0], "README.md [example]", "exec"), ns)
    out = capsys.readouterr().out
    assert "lazycv plan: 1 kernel(s)" in out and "kernels_launched" in out
    assert "resize(640x640, INTER_LINEAR) -> cvtColor(BGR2RGB)" in out
    x, y, w, h = ns["x"], ns["y"], ns["w"], ns["h"]
    r = cv2.resize(np.ascontiguousarray(ns["frame"][y:y + h, x:x + w]), (640, 640), interpolation=cv2.INTER_LINEAR)
    ref = (cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) / np.float32(255)
           - np.float32([0.485, 0.456, 0.406])) / np.float32([0.229, 0.224, 0.225])
    for c, plane in enumerate(ns["chw"]):
        np.testing.assert_allclose(plane, ref[..., c], rtol=1e-5, atol=1e-5)


def test_op_table_is_generated_from_the_current_code():
    """docs/op-table.md is what docs/gen_ops.py writes now (run it after adding an op)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_ops", ROOT / "docs" / "gen_ops.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    committed = (ROOT / "docs" / "op-table.md").read_text()
    assert committed == gen.op_table(), "docs/op-table.md is stale: run python docs/gen_ops.py"
