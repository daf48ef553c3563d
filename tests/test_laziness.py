"""Recording, planning and memory order: what runs when, how many kernels, and that lazy
execution equals eager execution."""
import gc

import cv2
import numpy as np
import pytest

import lazycv

from .conftest import BACKEND, SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def w1_chain(frame, roi_rect, out_wh):
    """The issue's example: crop -> resize -> BGR2RGB -> 1/255 -> -mean -> /std -> planes."""
    gpu = cv2.cuda_GpuMat()
    gpu.upload(frame)
    roi = cv2.cuda_GpuMat(gpu, roi_rect)
    r = cv2.cuda.resize(roi, out_wh, interpolation=cv2.INTER_LINEAR)
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    f = rgb.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    f = cv2.cuda.subtract(f, MEAN)
    std = cv2.cuda_GpuMat(out_wh[1], out_wh[0], cv2.CV_32FC3)
    std.setTo(STD)
    f = cv2.cuda.divide(f, std)
    return cv2.cuda.split(f)


def w1_reference(frame, roi_rect, out_wh):
    x, y, w, h = roi_rect
    r = cv2.resize(np.ascontiguousarray(frame[y:y + h, x:x + w]), out_wh, interpolation=cv2.INTER_LINEAR)
    f = cv2.cvtColor(r, cv2.COLOR_BGR2RGB).astype(np.float32) * np.float32(1 / 255)
    f = (f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return [f[..., c] for c in range(3)]


@pytest.mark.sim
def test_issue_example_is_one_kernel(rng):
    h, w = (30, 40) if not SIM else (9, 12)
    frame = rand_image(rng, h, w, 3, np.uint8)
    rect, out = ((3, 2, w - 5, h - 4), (16, 12)) if not SIM else ((1, 1, 10, 7), (6, 5))
    planes = w1_chain(frame, rect, out)
    assert lazycv.stats()["kernels_launched"] == 0
    assert planes[0].size() == out and planes[0].type() == cv2.CV_32FC1
    chw = [p.download() for p in planes]
    assert lazycv.stats()["kernels_launched"] == 1
    for got, ref in zip(chw, w1_reference(frame, rect, out)):
        assert_close(got, ref, 1e-6, rel=1e-5)


def test_fused_equals_eager_w1(rng):
    frame = rand_image(rng, 37, 53, 3, np.uint8)
    fused, eager = run_both(lambda: [p.download() for p in w1_chain(frame, (1, 2, 50, 33), (21, 19))])
    assert_fused_equals_eager(fused, eager)


def test_eager_mode_launches_one_kernel_per_op(rng):
    frame = rand_image(rng, 20, 24, 3, np.uint8)
    with lazycv.enabled(backend=BACKEND, fuse=False):
        lazycv.reset_stats()
        [p.download() for p in w1_chain(frame, (0, 0, 24, 20), (8, 8))]
        s = lazycv.stats()
    # resize, cvtColor, convertTo, subtract, setTo, divide, 3 x split
    assert s["kernels_launched"] == 9


def test_no_recompile_when_sizes_scalars_or_rois_change(rng):
    frame = rand_image(rng, 40, 60, 3, np.uint8)
    [p.download() for p in w1_chain(frame, (0, 0, 60, 40), (16, 16))]
    compiles = lazycv.stats()["compiles"]
    frame2 = rand_image(rng, 50, 33, 3, np.uint8)
    for rect, out in [((5, 7, 20, 30), (9, 13)), ((0, 0, 33, 50), (31, 2)), ((32, 49, 1, 1), (1, 1))]:
        got = [p.download() for p in w1_chain(frame2, rect, out)]
        for g, r in zip(got, w1_reference(frame2, rect, out)):
            assert_close(g, r, 1e-6, rel=1e-5)
    assert lazycv.stats()["compiles"] == compiles
    g = upload(frame)
    for scalar in [(1, 2, 3), (0.5, 9, -4)]:
        cv2.cuda.subtract(g.convertTo(cv2.CV_32F), scalar).download()
    c2 = lazycv.stats()["compiles"]
    cv2.cuda.subtract(g.convertTo(cv2.CV_32F), (7, 7, 7)).download()
    assert lazycv.stats()["compiles"] == c2


def test_size_type_answer_without_running(rng):
    g = upload(rand_image(rng, 10, 12, 3, np.uint8))
    r = cv2.cuda.resize(g, (5, 4))
    f = r.convertTo(cv2.CV_32F)
    gray = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY)
    assert (r.size(), r.type(), f.depth(), f.channels(), gray.channels()) == \
        ((5, 4), cv2.CV_8UC3, cv2.CV_32F, 3, 1)
    assert not f.empty()
    assert lazycv.stats()["kernels_launched"] == 0


def test_dead_results_are_never_computed(rng):
    g = upload(rand_image(rng, 10, 12, 3, np.uint8))
    dead = cv2.cuda.resize(g, (30, 30))
    dead2 = cv2.cuda.cvtColor(dead, cv2.COLOR_BGR2GRAY)
    del dead, dead2
    gc.collect()
    live = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2RGB)
    live.download()
    assert lazycv.stats()["kernels_launched"] == 1


def test_kept_intermediates_are_not_written_until_needed(rng):
    src = rand_image(rng, 10, 12, 3, np.uint8)
    g = upload(src)
    r = cv2.cuda.resize(g, (6, 5))
    rgb = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB)
    out = rgb.convertTo(cv2.CV_32F)
    out.download()
    assert lazycv.stats()["kernels_launched"] == 1
    # r is still pending and still correct when asked for later
    assert_close(r.download(), cv2.resize(src, (6, 5)), 1)


def test_upload_after_recording_keeps_eager_order(rng):
    a, b = rand_image(rng, 8, 9, 1, np.uint8), rand_image(rng, 8, 9, 1, np.uint8)
    g = upload(a)
    pending = cv2.cuda.add(g, 3)
    view = cv2.cuda_GpuMat(g, (1, 1, 4, 4))
    pending_view = cv2.cuda.multiply(view, 2)
    g.upload(b)                                  # overwrite the source while reads are pending
    assert_close(pending.download(), cv2.add(a, 3), 0)
    assert_close(pending_view.download(), cv2.multiply(a[1:5, 1:5], 2), 0)
    assert_close(view.download(), b[1:5, 1:5], 0)   # the view shares the new memory
    assert_close(cv2.cuda.add(g, 3).download(), cv2.add(b, 3), 0)


def test_exported_buffer_is_written_in_place(rng):
    a, b = rand_image(rng, 6, 7, 1, np.uint8), rand_image(rng, 6, 7, 1, np.uint8)
    g = upload(a)
    ptr = g.cudaPtr()
    pending = cv2.cuda.add(g, 1)
    g.upload(b)
    assert g.cudaPtr() == ptr
    assert_close(pending.download(), cv2.add(a, 1), 0)
    assert_close(g.download(), b, 0)


def test_in_place_dst(rng):
    a, b = rand_image(rng, 6, 7, 3, np.uint8), rand_image(rng, 6, 7, 3, np.uint8)
    ga, gb = upload(a), upload(b)
    ptr = ga.cudaPtr()
    out = cv2.cuda.add(ga, gb, ga)
    assert out is ga
    assert_close(ga.download(), cv2.add(a, b), 0)
    assert ga.cudaPtr() == ptr
    # a gather writing into its own input goes through a temporary
    sq = upload(a[:, :6])
    cv2.cuda.resize(sq, (6, 6), sq, interpolation=cv2.INTER_NEAREST)
    assert_close(sq.download(), cv2.resize(a[:, :6], (6, 6), interpolation=cv2.INTER_NEAREST), 0)


def test_dst_view_writes_into_parent(rng):
    big = np.zeros((8, 10, 3), np.uint8)
    src = rand_image(rng, 4, 5, 3, np.uint8)
    g = upload(big)
    view = cv2.cuda_GpuMat(g, (2, 3, 5, 4))
    cv2.cuda.cvtColor(upload(src), cv2.COLOR_BGR2RGB, view)
    exp = big.copy()
    exp[3:7, 2:7] = src[..., ::-1]
    assert_close(g.download(), exp, 0)


def test_view_of_pending_result_shares_memory(rng):
    src = rand_image(rng, 8, 8, 1, np.uint8)
    r = cv2.cuda.add(upload(src), 1)
    view = cv2.cuda_GpuMat(r, (2, 2, 3, 3))
    r.setTo(7)                                   # write through the parent...
    np.testing.assert_array_equal(view.download(), np.full((3, 3), 7, np.uint8))   # ...seen in the view
    view.setTo(9)                                # and the other way round
    exp = np.full((8, 8), 7, np.uint8)
    exp[2:5, 2:5] = 9
    np.testing.assert_array_equal(r.download(), exp)


def test_pending_write_then_read_through_another_view(rng):
    g = upload(np.zeros((6, 6), np.uint8))
    sub = cv2.cuda_GpuMat(g, (0, 0, 3, 3))
    sub.setTo(5)
    total = cv2.cuda.add(g, 1).download()
    exp = np.ones((6, 6), np.uint8)
    exp[:3, :3] = 6
    np.testing.assert_array_equal(total, exp)


@pytest.mark.sim
@pytest.mark.parametrize("parent_pending", [False, True])
def test_writes_through_a_temporary_roi_view_reach_the_parent(rng, parent_pending):
    """OpenCV writes at once; lazycv records the write, and the write must happen although the
    view that asked for it is gone by the flush — the letterbox / mosaic idiom."""
    src = rand_image(rng, 3, 4, 3, np.uint8)
    base = rand_image(rng, 8, 9, 3, np.uint8)
    if parent_pending:
        canvas = cv2.cuda.cvtColor(upload(base[..., ::-1].copy()), cv2.COLOR_RGB2BGR)   # == base, lazy
    else:
        canvas = upload(base)
    cv2.cuda_GpuMat(canvas, (0, 0, 9, 2)).setTo((1, 2, 3))                 # a band cleared
    cv2.cuda.cvtColor(upload(src), cv2.COLOR_BGR2RGB, cv2.cuda_GpuMat(canvas, (5, 4, 4, 3)))   # dst=
    upload(src).copyTo(cv2.cuda_GpuMat(canvas, (0, 5, 4, 3)))              # pasted
    gc.collect()
    exp = base.copy()
    exp[0:2, 0:9] = (1, 2, 3)
    exp[4:7, 5:9] = src[..., ::-1]
    exp[5:8, 0:4] = src
    assert_close(canvas.download(), exp, 0)


def test_a_dropped_gpumat_s_pending_write_costs_nothing(rng):
    tmp = cv2.cuda_GpuMat(64, 64, cv2.CV_8UC3)
    tmp.setTo((1, 2, 3))
    view = cv2.cuda_GpuMat(tmp, (0, 0, 8, 8))
    view.setTo(0)
    del tmp, view                       # no handle of that memory is left: nothing to write
    gc.collect()
    lazycv.reset_stats()
    out = cv2.cuda.add(upload(rand_image(rng, 4, 4, 1, np.uint8)), 1).download()
    assert out.shape == (4, 4)
    assert lazycv.stats()["kernels_launched"] == 1


def test_a_write_outlives_its_gpumat_while_a_view_reads_the_memory(rng):
    g = upload(np.zeros((4, 6), np.uint8))
    view = cv2.cuda_GpuMat(g, (2, 1, 3, 2))
    g.setTo(7)                          # pending, then the writing handle goes
    del g
    gc.collect()
    np.testing.assert_array_equal(view.download(), np.full((2, 3), 7, np.uint8))


def test_materialize_plans_together(rng):
    g = upload(rand_image(rng, 10, 10, 3, np.uint8))
    outs = cv2.cuda.split(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2RGB))
    lazycv.materialize(*outs)
    assert lazycv.stats()["kernels_launched"] == 1
    [o.download() for o in outs]
    assert lazycv.stats()["kernels_launched"] == 1


def test_explain_describes_the_plan(rng):
    g = upload(rand_image(rng, 10, 12, 3, np.uint8))
    planes = cv2.cuda.split(cv2.cuda.resize(g, (4, 4)).convertTo(cv2.CV_32F, alpha=0.5))
    text = lazycv.explain(*planes)
    assert "1 kernel(s)" in text and "resize(4x4" in text and "convertTo(CV_32FC3, alpha=0.5" in text and "split" in text
    assert text.count("out:") == 3
    dot = lazycv.explain(*planes, format="dot")
    assert dot.startswith("digraph") and "cluster_0" in dot
    assert lazycv.stats()["kernels_launched"] == 0


def test_resize_of_resize_is_two_phases(rng):
    src = rand_image(rng, 20, 20, 1, np.uint8)
    r = cv2.cuda.resize(cv2.cuda.resize(upload(src), (13, 11)), (5, 7))
    assert "2 kernel(s)" in lazycv.explain(r)
    assert_close(r.download(), cv2.resize(cv2.resize(src, (13, 11)), (5, 7)), 1)


def test_long_accumulation_chain_runs(rng):
    acc = upload(np.zeros((4, 4), np.float32))
    one = upload(np.ones((4, 4), np.float32))
    for _ in range(300):
        acc = cv2.cuda.add(acc, one)
    np.testing.assert_array_equal(acc.download(), np.full((4, 4), 300, np.float32))


def test_stream_wait_materializes(rng):
    s = cv2.cuda.Stream()
    g = upload(rand_image(rng, 5, 5, 1, np.uint8))
    r = cv2.cuda.add(g, 1, stream=s)
    s.waitForCompletion()
    assert lazycv.stats()["kernels_launched"] == 1
    assert r._node is None


def test_enable_disable_restore_cv2_exactly():
    lazycv.disable()
    before = {k: getattr(cv2.cuda, k) for k in dir(cv2.cuda)}
    top = (cv2.cuda_GpuMat, getattr(cv2, "cuda_Stream", None))
    lazycv.enable(backend=BACKEND)
    lazycv.enable(backend=BACKEND)                # idempotent
    assert cv2.cuda.GpuMat is lazycv.GpuMat is cv2.cuda_GpuMat
    assert cv2.cuda.getCudaEnabledDeviceCount() >= 1
    lazycv.disable()
    assert {k: getattr(cv2.cuda, k) for k in dir(cv2.cuda)} == before
    assert (cv2.cuda_GpuMat, getattr(cv2, "cuda_Stream", None)) == top
    assert not lazycv.is_enabled()
    with pytest.raises(RuntimeError):
        with lazycv.enabled(backend=BACKEND):
            assert cv2.cuda.GpuMat is lazycv.GpuMat
            with lazycv.enabled(backend=BACKEND, fuse=False):
                assert lazycv.is_enabled()
            assert lazycv.is_enabled()
            raise RuntimeError("boom")
    assert cv2.cuda_GpuMat is top[0] and not lazycv.is_enabled()
    lazycv.enable(backend=BACKEND)


def test_eager_intermediate_downloaded_after_its_consumer(rng):
    src = rand_image(rng, 9, 11, 3, np.uint8)
    for fuse in (False, True):
        with lazycv.enabled(backend=BACKEND, fuse=fuse):
            g = upload(src)
            r = cv2.cuda.resize(g, (7, 5), interpolation=cv2.INTER_NEAREST)
            gray = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY)
            ref_r = cv2.resize(src, (7, 5), interpolation=cv2.INTER_NEAREST)
            assert_close(gray.download(), cv2.cvtColor(ref_r, cv2.COLOR_BGR2GRAY), 0)
            assert_close(r.download(), ref_r, 0)


@pytest.mark.sim
def test_results_dropped_by_a_returning_function_are_not_computed_later(rng):
    """Lazy results a function dropped must be dead when it returns — even when its flush was
    the first (compiling) launch of a kernel, whose library internals may keep exceptions and
    their frames in reference cycles — or the next flush would compute them as live results.
    The cyclic collector is off here so nothing but plain reference counting frees them."""
    a = rand_image(rng, 9, 11, 3, np.uint8)
    g = upload(a)

    def chain(size):
        r = cv2.cuda.resize(g, size)
        f = r.convertTo(cv2.CV_32FC3, alpha=0.5)
        return [p.download() for p in cv2.cuda.split(f)]
    gc.disable()
    try:
        planes = chain((7, 5))
        lazycv.reset_stats()
        other = cv2.cuda.resize(g, (4, 3)).download()
        assert lazycv.stats()["kernels_launched"] == 1
    finally:
        gc.enable()
    ref = cv2.resize(a, (7, 5)).astype(np.float32) * np.float32(0.5)
    for got, want in zip(planes, cv2.split(ref)):
        assert_close(got, want, tol=1e-5, what="plane")
    assert_close(other, cv2.resize(a, (4, 3)), what="later result")


@pytest.mark.sim
@pytest.mark.parametrize("then", ["write through the view", "write into the parent"])
def test_a_view_of_a_pending_result_stays_a_view_across_other_flushes(rng, then):
    base = rand_image(rng, 4, 4, 1, np.uint8)
    r = cv2.cuda.add(upload(base), 1)
    v = cv2.cuda_GpuMat(r, (0, 0, 2, 2))
    cv2.cuda.add(upload(base[:2, :2]), 1).download()          # an unrelated flush
    if then == "write through the view":
        v.setTo(9)
        exp = cv2.add(base, 1)                                 # (saturating, as r's add)
        exp[:2, :2] = 9
        assert_close(r.download(), exp, 0)
    else:
        r.setTo(7)
        assert_close(v.download(), np.full((2, 2), 7, np.uint8), 0)


def test_a_result_updated_in_place_every_frame_does_not_keep_the_frames(rng):
    """add(acc, frame, dst=acc) with the frame uploaded into one GpuMat: each flush's computed
    nodes let go of their inputs, so memory stays flat (it grew a frame an iteration)."""
    from lazycv.ir import Node
    frame = rand_image(rng, 6, 8, 3, np.uint8)
    g = cv2.cuda_GpuMat()
    acc = cv2.cuda_GpuMat(6, 8, cv2.CV_32SC3, (0, 0, 0))

    def run(n):
        for _ in range(n):
            g.upload(frame)
            cv2.cuda.add(acc, g.convertTo(cv2.CV_32SC3), dst=acc)

    def live_nodes():
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is Node)
    run(10)
    before = live_nodes()
    run(100)
    assert live_nodes() - before < 10
    assert_close(acc.download(), frame.astype(np.int32) * 110, 0)


def test_an_output_too_large_for_the_device_fails_at_the_call(rng):
    g = upload(rand_image(rng, 4, 4, 3, np.uint8))
    small = cv2.cuda.add(g, (1, 1, 1))
    with pytest.raises(cv2.error, match="resize"):
        cv2.cuda.resize(g, (1 << 20, 1 << 20))
    assert small.download().shape == (4, 4, 3)


def test_download_takes_the_stream_first(rng):
    a = rand_image(rng, 3, 5, 3, np.uint8)
    out = np.empty_like(a)
    st = cv2.cuda.Stream()
    got = upload(a).download(st, out)
    st.waitForCompletion()
    assert got is out
    np.testing.assert_array_equal(out, a)


@pytest.mark.sim
@pytest.mark.parametrize("interpolation", [cv2.INTER_LINEAR, cv2.INTER_NEAREST])
def test_an_in_place_write_is_not_applied_twice_by_a_gathering_consumer(rng, interpolation):
    """add(g, 1, dst=g) then resize(g): the resize must read g after one add (it recomputed the
    add from memory the add had already overwritten)."""
    a = rand_image(rng, 4, 6, 1, np.uint8) // 2
    g = upload(a)
    cv2.cuda.add(g, 1, dst=g)
    got = cv2.cuda.resize(g, (3, 2), interpolation=interpolation).download()
    assert_close(got, cv2.resize(a + 1, (3, 2), interpolation=interpolation), 0)
    assert_close(g.download(), a + 1, 0)
