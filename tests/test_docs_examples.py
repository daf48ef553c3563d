"""The python examples of the three layer pages run and their assertions hold (docs stay true).

Each page's ```python blocks run in order in one namespace, in a temporary folder (an example may
write a file), on the test backend."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["layer1-opencv.md", "layer2-compose.md", "layer3-ops.md"]
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
