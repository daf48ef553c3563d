"""lazycv.explain: text, DOT and a pure-Python SVG picture of the plan — stable, meaningful
(kernel count, op names, bytes, dependencies), and nothing runs; LAZYCV_DEBUG logs plans and
generated source."""
import xml.etree.ElementTree as ET

import cv2
import numpy as np
import pytest

import lazycv

from .conftest import rand_image, upload

SVG = "{http://www.w3.org/2000/svg}"


def two_phase(rng):
    """resize(resize(a)) (a hard cut: 2 kernels) + a second input; returns the pending results."""
    a = upload(rand_image(rng, 20, 24, 3, np.uint8))
    b = upload(rand_image(rng, 6, 8, 3, np.uint8))
    r = cv2.cuda.resize(cv2.cuda.resize(a, (12, 10)), (8, 6))
    d = cv2.cuda.absdiff(r, b)
    return cv2.cuda.split(cv2.cuda.cvtColor(d, cv2.COLOR_BGR2RGB))


@pytest.mark.sim
def test_svg_is_a_picture_of_the_plan(rng):
    planes = two_phase(rng)
    text = lazycv.explain(*planes)
    svg = lazycv.explain(*planes, format="svg")
    assert lazycv.stats()["kernels_launched"] == 0          # nothing ran
    root = ET.fromstring(svg.split("?>", 1)[1])             # well-formed XML
    assert root.tag == SVG + "svg" and float(root.get("width")) > 0
    kernels = [g for g in root.iter(SVG + "g") if g.get("class") == "kernel"]
    assert len(kernels) == 2 and "2 kernel(s)" in text
    texts = " ".join(t.text for t in root.iter(SVG + "text"))
    for word in ("resize", "absdiff", "cvtColor(BGR2RGB)", "split", "kernel 0", "kernel 1", "m0: memory", "m1: memory",
                 "result 0", "result 2", "<- m0, m1", "reads", "writes"):
        assert word in texts, word
    # every op of the text plan is a box; memory inputs are ellipses; edges have arrows
    n_ops = sum(int(line.split(", ")[1].split()[0]) for line in text.splitlines() if line.startswith("kernel "))
    boxes = [r for r in root.iter(SVG + "rect") if r.get("class") == "op"]
    assert len(boxes) == n_ops
    assert len([e for e in root.iter(SVG + "ellipse")]) == 2
    edges = [p for p in root.iter(SVG + "path") if p.get("class") == "edge"]
    dashed = [p for p in edges if p.get("stroke-dasharray")]
    assert len(edges) >= n_ops and 3 <= len(dashed) < len(edges)   # memory reads vs fused edges
    # boxes of one kernel lie inside its frame
    for g in kernels:
        frame = g.find(SVG + "rect")
        fx, fy = float(frame.get("x")), float(frame.get("y"))
        fw, fh = float(frame.get("width")), float(frame.get("height"))
        for r in g.iter(SVG + "rect"):
            if r.get("class") == "op":
                x, y = float(r.get("x")), float(r.get("y"))
                assert fx <= x and x + float(r.get("width")) <= fx + fw + 0.5
                assert fy <= y and y + float(r.get("height")) <= fy + fh + 0.5


@pytest.mark.sim
def test_explain_is_stable_and_names_dependencies(rng):
    seed_state = rng.bit_generator.state
    outs1 = [lazycv.explain(*two_phase(rng), format=f) for f in ("text", "dot", "svg")]
    rng.bit_generator.state = seed_state
    outs2 = [lazycv.explain(*two_phase(rng), format=f) for f in ("text", "dot", "svg")]
    assert outs1 == outs2                                    # same recording, same output
    text, dot, _ = outs1
    assert "(memory m0)" in text and "(kernel 0 output)" in text and "<- m0, m1" in text
    assert text.count("out:") == 4                           # the cut resize + 3 planes
    assert "style=dashed" in dot and "m1: memory" in dot
    with pytest.raises(ValueError, match="svg"):
        lazycv.explain(*two_phase(rng), format="png")
    assert lazycv.explain(format="svg").count("<g class=\"kernel\"") == 0   # nothing pending


def test_pipeline_explain_svg(rng):
    p = lazycv.compose(lazycv.resize((8, 6)), lazycv.cvt_color(cv2.COLOR_BGR2RGB), lazycv.to_planar(),
                       lazycv.write())
    frames = [rand_image(rng, 12, 16, 3, np.uint8) for _ in range(2)]
    svg = p.explain(frames, format="svg")
    assert svg.count('<g class="kernel"') == 2 and "cvtColor(BGR2RGB)" in svg
    assert "result 5" in svg                                 # 2 frames x 3 planes


def test_lazycv_debug_logs_plans_and_sources(rng, monkeypatch, capfd):
    g = upload(rand_image(rng, 5, 7, 1, np.uint8))

    @lazycv.op(name="debug_probe_op")
    def probe(v):
        return v * 3 + 11                                    # a new kernel: its source is printed
    monkeypatch.setenv("LAZYCV_DEBUG", "2")
    probe(g).download()
    err = capfd.readouterr().err
    assert "lazycv plan: 1 kernel(s)" in err and "debug_probe_op" in err
    assert "def kernel" in err and "# calls uf_debug_probe_op" in err
    monkeypatch.setenv("LAZYCV_DEBUG", "1")
    cv2.cuda.add(probe(g), 1).download()
    err = capfd.readouterr().err
    assert "lazycv plan" in err and "def kernel" not in err
