"""Horizontal fusion: a Python loop over ROIs (or frames) becomes one launch (issue 3)."""
import cv2
import numpy as np
import pytest

import lazycv

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

MUL = (1 / 255, 1 / 255, 1 / 255)
SUB = (0.485, 0.456, 0.406)
DIV = (0.229, 0.224, 0.225)


def random_rois(rng, n, h, w):
    """Random crops, including 1x1 ones and crops touching every edge of the frame."""
    rois = [(0, 0, 1, 1), (w - 1, h - 1, 1, 1), (0, 0, w, h), (w - 3, 0, 3, h)][:n]
    while len(rois) < n:
        cw, ch = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
        rois.append((int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1)), cw, ch))
    return rois


def w3_loop(gpu, rois, out_wh):
    """W3 as a user writes it: per crop resize -> convertTo -> multiply -> subtract -> divide -> split."""
    outs = []
    for x, y, w, h in rois:
        crop = cv2.cuda_GpuMat(gpu, (x, y, w, h))
        r = cv2.cuda.resize(crop, out_wh)
        f = r.convertTo(cv2.CV_32FC3)
        f = cv2.cuda.multiply(f, MUL)
        f = cv2.cuda.subtract(f, SUB)
        f = cv2.cuda.divide(f, DIV)
        outs.append(cv2.cuda.split(f))
    return outs


def w3_reference(frame, rois, out_wh):
    refs = []
    for x, y, w, h in rois:
        r = cv2.resize(np.ascontiguousarray(frame[y:y + h, x:x + w]), out_wh).astype(np.float32)
        r = cv2.multiply(r, MUL + (0,))
        r = cv2.subtract(r, SUB + (0,))
        r = cv2.divide(r, DIV + (0,))
        refs.append([r[..., c] for c in range(3)])
    return refs


@pytest.mark.sim
@pytest.mark.parametrize("n", [1, 2, 50, 500] if not SIM else [1, 2, 7])
def test_roi_loop_is_one_launch(rng, n):
    h, w = (60, 80) if not SIM else (9, 12)
    out_wh = (8, 6) if not SIM else (3, 2)
    frame = rand_image(rng, h, w, 3, np.uint8)
    gpu = upload(frame)
    rois = random_rois(rng, n, h, w)
    outs = w3_loop(gpu, rois, out_wh)
    lazycv.materialize(*[p for planes in outs for p in planes])
    assert lazycv.stats()["kernels_launched"] == 1
    # 8U LINEAR resize may differ from CPU OpenCV by 1 when upscaling; after /255/std that is 1/255/0.224
    tol = 1.0 / 255 / 0.224 + 1e-5
    for got, ref in zip(outs, w3_reference(frame, rois, out_wh)):
        for g, r in zip(got, ref):
            assert_close(g.download(), r, tol)
    assert lazycv.stats()["kernels_launched"] == 1


def test_roi_loop_fused_equals_eager(rng):
    frame = rand_image(rng, 40, 50, 3, np.uint8)
    rois = random_rois(rng, 20, 40, 50)

    def run():
        outs = w3_loop(upload(frame), rois, (7, 5))
        return [p.download() for planes in outs for p in planes]
    fused, eager = run_both(run)
    assert_fused_equals_eager(fused, eager)


def test_batch_does_not_recompile_for_another_count_or_sizes(rng):
    frame = rand_image(rng, 50, 60, 3, np.uint8)
    gpu = upload(frame)
    outs = w3_loop(gpu, random_rois(rng, 5, 50, 60), (6, 4))
    lazycv.materialize(*[p for planes in outs for p in planes])
    compiles = lazycv.stats()["compiles"]
    for n in (3, 9, 40):
        outs = w3_loop(gpu, random_rois(rng, n, 50, 60), (5 + n % 3, 7))
        lazycv.materialize(*[p for planes in outs for p in planes])
    assert lazycv.stats()["compiles"] == compiles


@pytest.mark.sim
def test_mixed_chains_batch_by_structure(rng):
    """Two different op sequences interleaved in one loop over one frame: each structure keeps
    its own code (a branch of the launch), both share one launch since they read one frame, and
    every result is right."""
    frame = rand_image(rng, 12, 16, 3, np.uint8)
    gpu = upload(frame)
    rois = random_rois(rng, 6, 12, 16)
    a, b = [], []
    for i, (x, y, w, h) in enumerate(rois):
        crop = cv2.cuda_GpuMat(gpu, (x, y, w, h))
        if i % 2:
            a.append(cv2.cuda.cvtColor(cv2.cuda.resize(crop, (4, 3)), cv2.COLOR_BGR2GRAY))
        else:
            b.append(cv2.cuda.add(cv2.cuda.resize(crop, (5, 2), interpolation=cv2.INTER_NEAREST), (10, 20, 30)))
    lazycv.materialize(*a, *b)
    assert lazycv.stats()["kernels_launched"] == 1
    ai = bi = 0
    for i, (x, y, w, h) in enumerate(rois):
        crop = np.ascontiguousarray(frame[y:y + h, x:x + w])
        if i % 2:
            ref = cv2.cvtColor(cv2.resize(crop, (4, 3)), cv2.COLOR_BGR2GRAY)
            assert_close(a[ai].download(), ref, 1)
            ai += 1
        else:
            ref = cv2.add(cv2.resize(crop, (5, 2), interpolation=cv2.INTER_NEAREST), (10, 20, 30, 0))
            assert_close(b[bi].download(), ref, 0)
            bi += 1


@pytest.mark.sim
def test_frames_from_separate_uploads_batch(rng):
    """W1-loop: the same chain over several separately uploaded frames, one flush."""
    frames = [rand_image(rng, 10, 14, 3, np.uint8) for _ in range(5)]
    gpus = [upload(f) for f in frames]
    std = cv2.cuda_GpuMat(4, 6, cv2.CV_32FC3)
    std.setTo(DIV)
    outs = []
    for g in gpus:
        f = cv2.cuda.cvtColor(cv2.cuda.resize(g, (6, 4)), cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
        outs.append(cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, SUB), std)))
    lazycv.materialize(*[p for o in outs for p in o])
    assert lazycv.stats()["kernels_launched"] == 2       # the std fill, then one launch for 5 frames
    for fr, planes in zip(frames, outs):
        r = cv2.cvtColor(cv2.resize(fr, (6, 4)), cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
        r = (r - np.array(SUB, np.float32)) / np.array(DIV, np.float32)
        for c, p in enumerate(planes):
            assert_close(p.download(), r[..., c], 1e-6, rel=1e-5)


def test_batched_results_are_independent_gpumats(rng):
    frame = rand_image(rng, 20, 20, 1, np.uint8)
    gpu = upload(frame)
    outs = [cv2.cuda.add(cv2.cuda_GpuMat(gpu, (i, i, 5, 5)), i) for i in range(4)]
    lazycv.materialize(*outs)
    outs[1].setTo(0)                      # writing one result must not touch its neighbours
    for i, o in enumerate(outs):
        exp = np.zeros((5, 5), np.uint8) if i == 1 else cv2.add(frame[i:i + 5, i:i + 5], i)
        assert_close(o.download(), exp, 0)
    del outs[0]
    import gc
    gc.collect()
    assert_close(outs[-1].download(), cv2.add(frame[3:8, 3:8], 3), 0)


def test_chains_over_unrelated_frames_launch_separately(rng):
    f1, f2 = rand_image(rng, 10, 12, 3, np.uint8), rand_image(rng, 10, 12, 3, np.uint8)
    g1, g2 = upload(f1), upload(f2)
    a = [cv2.cuda.resize(cv2.cuda_GpuMat(g1, (i, 0, 5, 5)), (3, 3)) for i in range(3)]
    b = [cv2.cuda.cvtColor(cv2.cuda_GpuMat(g2, (0, i, 6, 4)), cv2.COLOR_BGR2GRAY) for i in range(3)]
    lazycv.materialize(*a, *b)
    assert lazycv.stats()["kernels_launched"] == 2
    for i in range(3):
        assert_close(a[i].download(), cv2.resize(np.ascontiguousarray(f1[0:5, i:i + 5]), (3, 3)), 1)
        assert_close(b[i].download(), cv2.cvtColor(np.ascontiguousarray(f2[i:i + 4, 0:6]),
                                                   cv2.COLOR_BGR2GRAY), 0)


@pytest.mark.sim
def test_several_products_of_one_frame_are_one_launch(rng):
    """W4: a thumbnail, a normalised planar tensor and a gray preview of one frame, one launch."""
    h, w = (54, 96) if not SIM else (9, 16)
    frame = rand_image(rng, h, w, 3, np.uint8)
    g = upload(frame)
    thumb = cv2.cuda.resize(g, (w // 6, h // 6))
    f = cv2.cuda.cvtColor(cv2.cuda.resize(g, (8, 8)), cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    planes = cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, SUB), DIV))
    gray = cv2.cuda.cvtColor(cv2.cuda.resize(g, (w // 2, h // 2)), cv2.COLOR_BGR2GRAY)
    lazycv.materialize(thumb, *planes, gray)
    assert lazycv.stats()["kernels_launched"] == 1
    assert_close(thumb.download(), cv2.resize(frame, (w // 6, h // 6)), 1)
    assert_close(gray.download(), cv2.cvtColor(cv2.resize(frame, (w // 2, h // 2)), cv2.COLOR_BGR2GRAY), 1)
    r = cv2.cvtColor(cv2.resize(frame, (8, 8)), cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    r = (r - np.array(SUB, np.float32)) / np.array(DIV, np.float32)
    for c, p in enumerate(planes):
        assert_close(p.download(), r[..., c], 1e-6, rel=1e-5)


def test_explain_reports_the_batched_launch(rng):
    gpu = upload(rand_image(rng, 30, 40, 3, np.uint8))
    outs = w3_loop(gpu, random_rois(rng, 10, 30, 40), (6, 4))
    text = lazycv.explain(*[p for planes in outs for p in planes])
    assert "10 kernel(s), run as 1 launch(es) after horizontal batching" in text
    assert lazycv.stats()["kernels_launched"] == 0


@pytest.mark.sim
def test_items_of_different_output_sizes_share_a_launch_and_stay_exact(rng):
    """One chain, each item resized to its own size: a single launch in which per-item column
    coordinates (the CPU backend's per-column tables) follow each item's width and scale."""
    frame = rand_image(rng, 20, 26, 3, np.uint8)
    gpu = upload(frame)
    rois = random_rois(rng, 7, 20, 26)
    sizes = [(3 + i, 2 + (i * 3) % 5) for i in range(len(rois))]
    outs = []
    for (x, y, w, h), size in zip(rois, sizes):
        crop = cv2.cuda_GpuMat(gpu, (x, y, w, h))
        outs.append(cv2.cuda.resize(cv2.cuda.resize(crop, size, interpolation=cv2.INTER_NEAREST), (4, 3)))
    lazycv.materialize(*outs)
    assert lazycv.stats()["kernels_launched"] == 1     # NEAREST is one tap: it fuses in
    for (x, y, w, h), size, out in zip(rois, sizes, outs):
        crop = np.ascontiguousarray(frame[y:y + h, x:x + w])
        ref = cv2.resize(cv2.resize(crop, size, interpolation=cv2.INTER_NEAREST), (4, 3))
        assert_close(out.download(), ref, 1, what=f"crop {(x, y, w, h)} -> {size}")


@pytest.mark.sim
def test_second_phase_reads_first_phase_items_of_different_sizes(rng):
    """resize(resize(crop)): the inner LINEAR resizes (one size per item) are written in one
    launch, the outer ones read each item's own output in a second launch."""
    frame = rand_image(rng, 20, 26, 3, np.uint8)
    gpu = upload(frame)
    rois = random_rois(rng, 5, 20, 26)
    sizes = [(5 + i, 4 + i % 3) for i in range(len(rois))]
    outs = [cv2.cuda.resize(cv2.cuda.resize(cv2.cuda_GpuMat(gpu, roi), size), (4, 3))
            for roi, size in zip(rois, sizes)]
    lazycv.materialize(*outs)
    assert lazycv.stats()["kernels_launched"] == 2
    for (x, y, w, h), size, out in zip(rois, sizes, outs):
        crop = np.ascontiguousarray(frame[y:y + h, x:x + w])
        assert_close(out.download(), cv2.resize(cv2.resize(crop, size), (4, 3)), 1,
                     what=f"crop {(x, y, w, h)} -> {size}")


def test_frames_uploaded_one_by_one_past_the_select_limit(rng):
    """More separately uploaded frames than a batched kernel takes buffers (runtime.MAX_SELECT)
    launch in chunks of one compiled kernel — the first flush of 400 such frames compiled a
    kernel with 512 buffer parameters (a minute; past ~455 more than CUDA's parameter space)
    — and every frame's result is its own."""
    from lazycv import runtime
    n = runtime.MAX_SELECT * 2 + 5
    frames = [rand_image(rng, 6, 9, 3, np.uint8) for _ in range(n)]
    outs = []
    for f in frames:
        g = upload(f)
        r = cv2.cuda.resize(g, (4, 3))
        outs.append(cv2.cuda.subtract(r.convertTo(cv2.CV_32FC3, alpha=1 / 255), SUB))
    lazycv.reset_stats()
    lazycv.materialize(*outs)
    st = lazycv.stats()
    assert st["kernels_launched"] == 3 and st["compiles"] <= 1
    for f, o in zip(frames, outs):
        want = cv2.resize(f, (4, 3)).astype(np.float32) * np.float32(1 / 255) - np.array(SUB, np.float32)
        assert_close(o.download(), want, 1e-6)


def test_hundreds_of_results_of_one_pending_image_write_it_once_and_batch(rng):
    """A pending image that more than planner.MAX_SHARED results read is written once, and the
    results go out as one batched launch — not one kernel with hundreds of outputs, whose
    compile took minutes (400 results: 86 s before) — and each equals CPU OpenCV."""
    from lazycv import planner
    a = rand_image(rng, 6, 7, 3, np.uint8)
    f = upload(a).convertTo(cv2.CV_32FC3, alpha=0.5)          # pending, read by every result
    n = planner.MAX_SHARED * 3
    outs = [cv2.cuda.multiply(f, 1.0 + k / 8) for k in range(n)]
    lazycv.reset_stats()
    lazycv.materialize(*outs)
    assert lazycv.stats()["kernels_launched"] == 2               # f, then the n products
    base = a.astype(np.float32) * np.float32(0.5)
    for k in (0, 1, n // 2, n - 1):
        assert_close(outs[k].download(), cv2.multiply(base, (1.0 + k / 8,) * 3 + (0,)), 1e-6, rel=1e-6)
