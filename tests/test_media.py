"""Streams for real, the streamed frame loop and the delay buffer (lazycv/streams.py,
lazycv/media.py): each equal to a naive serial loop frame by frame, and ordered as OpenCV's
streams are (the CPU backend runs launches when they are issued, so the order is checked on
the trace of which stream each launch and copy went on and what it waited for)."""
import cv2
import numpy as np
import pytest

import lazycv
from .conftest import BACKEND, rand_image, upload


def chain(g):
    """A small W1-like frame chain: resize, convert, subtract, split."""
    r = cv2.cuda.resize(g, (5, 4), interpolation=cv2.INTER_LINEAR)
    f = r.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return cv2.cuda.split(cv2.cuda.subtract(f, (0.5, 0.25, 0.125)))


def serial(frames, fn):
    return [[p.download() for p in fn(upload(f))] for f in frames]


# ---------------------------------------------------------------- streams and events

@pytest.mark.sim
def test_work_named_with_a_stream_is_launched_on_it_after_its_upload(rng):
    a = rand_image(rng, 6, 7, 3, np.uint8)
    up, work = cv2.cuda_Stream(), cv2.cuda_Stream()
    host = cv2.cuda_HostMem(a)
    with lazycv.trace_streams() as trace:
        g = cv2.cuda_GpuMat()
        g.upload(host, up)
        done = cv2.cuda_Event()
        done.record(up)
        work.waitEvent(done)
        r = cv2.cuda.resize(g, (5, 4), interpolation=cv2.INTER_NEAREST, stream=work)
        out = r.download(stream=work)
        work.waitForCompletion()
    up_name, work_name = up._label(), work._label()
    # (a pooled buffer an earlier test left to the default stream is waited for as well)
    assert trace[0][:2] == ("copy", up_name) and set(trace[0][2]) <= {"default"}
    launches = [t for t in trace if t[0] == "launch"]
    assert len(launches) == 1 and launches[0][1] == work_name     # on its stream, after the upload
    assert up_name in launches[0][2] and set(launches[0][2]) <= {up_name, "default"}
    assert trace[-1][:2] == ("copy", work_name) and set(trace[-1][2]) <= {"default"}   # same stream
    np.testing.assert_array_equal(out, cv2.resize(a, (5, 4), interpolation=cv2.INTER_NEAREST))


def test_a_download_on_another_stream_waits_for_the_kernel_that_wrote_it(rng):
    a = rand_image(rng, 8, 9, 1, np.uint8)
    s1, s2 = cv2.cuda_Stream(), cv2.cuda_Stream()
    with lazycv.trace_streams() as trace:
        g = upload(a)                                             # on the default stream
        r = cv2.cuda.add(g, 3, stream=s1)
        out = r.download(stream=s2)
        s2.waitForCompletion()
    assert [t[:2] for t in trace] == [("copy", "default"), ("launch", s1._label()), ("copy", s2._label())]
    assert "default" in trace[1][2] and s1._label() in trace[2][2]
    np.testing.assert_array_equal(out, cv2.add(a, 3))


def test_results_recorded_inside_on_stream_go_on_that_stream(rng):
    s = cv2.cuda_Stream()
    g, h = (upload(rand_image(rng, 5, 6, 1, np.uint8)) for _ in range(2))
    with lazycv.trace_streams() as trace:
        with lazycv.on_stream(s):
            r = cv2.cuda.add(g, 1)
        other = cv2.cuda.multiply(h, 2)          # outside: the default stream
        lazycv.materialize(r, other)
    assert sorted(t[1] for t in trace if t[0] == "launch") == sorted(["default", s._label()])


def test_events_record_query_wait_and_time(rng):
    s = cv2.cuda_Stream()
    assert cv2.cuda_Stream.Null().queryIfComplete()
    start, end = cv2.cuda_Event(), cv2.cuda_Event()
    assert start.queryIfComplete()                               # never recorded: nothing to wait for
    g = upload(rand_image(rng, 16, 16, 1, np.uint8))
    start.record(s)
    r = cv2.cuda.multiply(g, 2, stream=s)
    end.record(s)                                                # launches r first
    assert r._node is None
    end.waitForCompletion()
    assert end.queryIfComplete() and s.queryIfComplete()
    assert cv2.cuda.Event.elapsedTime(start, end) >= 0
    with pytest.raises(cv2.error, match="Stream::waitEvent"):
        s.waitEvent(s)


# ---------------------------------------------------------------- the streamed loop

@pytest.mark.sim
@pytest.mark.parametrize("depth", [1, 3])
def test_streamed_loop_equals_the_serial_loop_frame_by_frame(rng, depth):
    frames = [rand_image(rng, 6, 7, 3, np.uint8) for _ in range(5)]
    want = serial(frames, chain)
    got = list(lazycv.StreamedLoop(frames, chain, depth=depth, copy=True))
    assert [i for i, _ in got] == list(range(len(frames)))
    for (_, planes), ref in zip(got, want):
        for p, q in zip(planes, ref):
            np.testing.assert_array_equal(p, q)


@pytest.mark.sim
@pytest.mark.parametrize("depth", [1, 2])
def test_streamed_loop_with_graphs_equals_the_serial_loop(rng, depth):
    """graph=True: each slot captures fn once and replays it; every frame's result is its own
    (the slots' graph outputs are downloaded before the slot's graph runs again)."""
    frames = [rand_image(rng, 6, 7, 3, np.uint8) for _ in range(6)]
    lazycv.reset_stats()
    want = serial(frames[:1], chain)
    per_frame = lazycv.stats()["ops_recorded"]
    want += serial(frames[1:], chain)
    loop = lazycv.StreamedLoop(frames, chain, depth=depth, graph=True)
    lazycv.reset_stats()
    got = [(i, [p.copy() for p in planes]) for i, planes in loop]
    assert [i for i, _ in got] == list(range(len(frames)))
    for (_, planes), ref in zip(got, want):
        for p, q in zip(planes, ref):
            np.testing.assert_array_equal(p, q)
    assert lazycv.stats()["ops_recorded"] == depth * per_frame, "a replayed frame recorded its calls again"


@pytest.mark.sim
def test_streamed_loop_with_graphs_uploads_into_the_graphs_input_and_follows_a_new_size(rng, monkeypatch):
    """graph=True: after a slot's capture its frames upload straight into the graph's input
    (a replay copies nothing on the device); frames of another size get a graph of their own,
    and each frame still equals the serial loop."""
    frames = [rand_image(rng, 6, 7, 3, np.uint8) for _ in range(4)] + \
        [rand_image(rng, 8, 5, 3, np.uint8) for _ in range(4)] + [rand_image(rng, 6, 7, 3, np.uint8)]
    want = serial(frames, chain)
    copies = []
    real = lazycv.graphs.runtime.copy_region
    monkeypatch.setattr(lazycv.graphs.runtime, "copy_region", lambda *a, **k: copies.append(1) or real(*a, **k))
    loop = lazycv.StreamedLoop(frames, chain, depth=2, graph=True)
    got = [(i, [p.copy() for p in planes]) for i, planes in loop]
    assert [i for i, _ in got] == list(range(len(frames)))
    for (i, planes), ref in zip(got, want):
        for p, q in zip(planes, ref):
            np.testing.assert_array_equal(p, q, err_msg=f"frame {i}")
    # a device copy into a graph's input only where a slot met a size for the first time:
    # frames 0, 1 (two slots), 4, 5 (the new size), 8 (slot 0 back to the first size)
    assert len(copies) == 5, copies


@pytest.mark.sim
@pytest.mark.parametrize("hostmem", [False, True])
def test_streamed_loop_lanes_equal_the_serial_loop_across_size_changes(rng, hostmem):
    """graph=True: from a slot's second frame of one size on, frames go through the slot's lane
    (copies, events and the graph launch issued straight to the backend); a frame of a new size
    takes the general path, and makes the slot's lane for that size. Every frame equals the
    serial loop."""
    sizes = [(6, 7)] * 6 + [(8, 5)] * 6 + [(6, 7)] * 6
    frames = [rand_image(rng, h, w, 3, np.uint8) for h, w in sizes]
    want = serial(frames, chain)
    loop = lazycv.StreamedLoop([cv2.cuda_HostMem(f) for f in frames] if hostmem else frames, chain,
                               depth=2, graph=True)
    lazycv.reset_stats()
    got = [(i, [p.copy() for p in planes]) for i, planes in loop]
    assert [i for i, _ in got] == list(range(len(frames)))
    for (i, planes), ref in zip(got, want):
        for p, q in zip(planes, ref):
            np.testing.assert_array_equal(p, q, err_msg=f"frame {i}")
    # per run of one size, each of the two slots: a capture or a refill (which makes the
    # slot's lane for that size), then its lane for the run's other two frames
    assert loop.lane_frames == 3 * 2 * 2
    st = lazycv.stats()
    assert st["bytes_h2d"] == sum(f.nbytes for f in frames)
    assert st["bytes_d2h"] == sum(p.nbytes for _, planes in got for p in planes)


@pytest.mark.sim
def test_a_streamed_loop_iterated_again_reuses_its_graphs_and_lanes(rng):
    """``loop.frames = next_clip`` and iterate again: the slots keep their graphs, lanes and
    buffers (nothing captured again, every frame through a lane), also after a pass left early;
    a pass over the loop while another runs gets slots of its own. Each frame equals the
    serial loop."""
    clips = [[rand_image(rng, 6, 7, 3, np.uint8) for _ in range(5)] for _ in range(3)]
    loop = lazycv.StreamedLoop(clips[0], chain, depth=2, graph=True)
    first = [(i, [p.copy() for p in planes]) for i, planes in loop]
    graphs = [slot.graph for slot in loop._slots[1]]
    for pass_frames in (clips[1], clips[2][:3]):
        loop.frames = clips[1]
        for i, planes in loop:               # a pass left early
            if i == 2:
                break
        loop.frames = pass_frames
        before = loop.lane_frames
        got = [(i, [p.copy() for p in planes]) for i, planes in loop]
        assert loop.lane_frames - before == len(pass_frames), "a frame of a repeated pass missed its lane"
        for (i, planes), ref in zip(got, serial(pass_frames, chain)):
            for p, q in zip(planes, ref):
                np.testing.assert_array_equal(p, q, err_msg=f"frame {i}")
    assert [slot.graph for slot in loop._slots[1]] == graphs
    assert all(g.captures == 1 for g in graphs)
    for (i, planes), ref in zip(first, serial(clips[0], chain)):
        for p, q in zip(planes, ref):
            np.testing.assert_array_equal(p, q)
    # a pass inside a pass: its own slots, both right
    loop.frames = clips[0]
    outer, inner = [], []
    for i, planes in loop:
        outer.append([p.copy() for p in planes])
        if i == 1:
            inner = [[p.copy() for p in planes] for _, planes in loop]
    for got_frames in (outer, inner):
        assert len(got_frames) == len(clips[0])
        for planes, ref in zip(got_frames, serial(clips[0], chain)):
            for p, q in zip(planes, ref):
                np.testing.assert_array_equal(p, q)


def test_streamed_loop_with_graphs_replays_on_the_compute_stream(rng):
    frames = [cv2.cuda_HostMem(rand_image(rng, 9, 11, 3, np.uint8)) for _ in range(5)]
    loop = lazycv.StreamedLoop(frames, lambda g: cv2.cuda.add(g, (1, 2, 3)), depth=2, graph=True)
    with lazycv.trace_streams() as trace:
        outs = [(i, o.copy()) for i, o in loop]
    comp = loop.compute_stream._label()
    launches = [t for t in trace if t[0] == "launch"]
    assert launches and all(t[1] == comp for t in launches), launches
    for (i, o), f in zip(outs, frames):
        np.testing.assert_array_equal(o, cv2.add(f.createMatHeader(), (1, 2, 3, 0)))


def test_streamed_loop_overlaps_stages_on_three_streams_and_takes_hostmem(rng):
    """Frame i's compute waits only for its own upload; its download only for its compute; and
    the host waits for frame i - depth's download (through its event) before reusing a slot."""
    frames = [cv2.cuda_HostMem(rand_image(rng, 13, 17, 3, np.uint8)) for _ in range(4)]   # (a size of its own)
    loop = lazycv.StreamedLoop(frames, lambda g: cv2.cuda.add(g, (1, 2, 3)), depth=2)
    with lazycv.trace_streams() as trace:
        outs = [(i, o.copy()) for i, o in loop]
    up, comp, down = (loop.upload_stream._label(), loop.compute_stream._label(),
                      loop.download_stream._label())
    launches = [t for t in trace if t[0] == "launch"]
    # results stay alive until delivered, and a delivered frame's download was waited for: no
    # kernel waits for a download
    assert launches == [("launch", comp, (up,))] * 4
    assert all(t[1] == down and comp in t[2] for t in trace if t[0] == "copy" and t[1] == down)
    assert sum(t[1] == up for t in trace if t[0] == "copy") == 4
    for (i, o), f in zip(outs, frames):
        np.testing.assert_array_equal(o, cv2.add(f.createMatHeader(), (1, 2, 3, 0)))


def test_streamed_loop_rejects_what_it_cannot_run():
    with pytest.raises(cv2.error, match="depth"):
        lazycv.StreamedLoop([], chain, depth=0)
    with pytest.raises(cv2.error, match="callable"):
        lazycv.StreamedLoop([], None)
    with pytest.raises(cv2.error, match="frame 0"):
        list(lazycv.StreamedLoop(["not a frame"], chain))


# ---------------------------------------------------------------- the delay buffer

def gain_step(frame, delay):
    """W6's step: the frame's mean sets a gain, applied k frames later."""
    n = frame.size()[0] * frame.size()[1]
    mean = cv2.cuda.multiply(cv2.cuda.calcSum(frame), 1.0 / n)
    gain = delay.push(cv2.cuda.divide(128.0, mean))
    return cv2.cuda.multiply(frame, gain)


@pytest.mark.sim
@pytest.mark.parametrize("k", [0, 2])
def test_the_delay_is_exactly_k_frames(rng, k):
    frames = [rand_image(rng, 4, 5, 1, np.uint8) for _ in range(k + 3)]
    like = cv2.cuda.calcSum(upload(frames[0]))
    delay = lazycv.DelayBuffer(k, like, initial=1.0)
    got = [gain_step(upload(f), delay).download() for f in frames]
    for n, (f, out) in enumerate(zip(frames, got)):
        gain = 1.0 if n < k else 128.0 / frames[n - k].astype(np.float64).mean()   # the naive serial loop
        ref = cv2.multiply(f, np.full(f.shape, gain), dtype=cv2.CV_8U)
        np.testing.assert_allclose(out.astype(int), ref.astype(int), atol=1, err_msg=f"frame {n}")


def test_a_delay_buffer_in_the_streamed_loop_stays_on_the_compute_stream(rng):
    frames = [rand_image(rng, 4, 5, 1, np.uint8) for _ in range(5)]
    like = cv2.cuda.calcSum(upload(frames[0]))
    want = [gain_step(upload(f), d).download() for d in [lazycv.DelayBuffer(2, like, 1.0)] for f in frames]
    delay = lazycv.DelayBuffer(2, like, 1.0)
    loop = lazycv.StreamedLoop(frames, lambda g: gain_step(g, delay), depth=2, copy=True)
    with lazycv.trace_streams() as trace:
        got = [out for _, out in loop]
    assert {t[1] for t in trace if t[0] == "launch"} == {loop.compute_stream._label()}
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_delay_buffer_slots_hold_each_frames_statistic_and_the_initial_value(rng):
    like = cv2.cuda.calcSum(upload(rand_image(rng, 2, 2, 3, np.uint8)))     # 1x1 CV_64FC3
    delay = lazycv.DelayBuffer(3, like, initial=(1.0, 2.0, 3.0))
    seen = []
    for n in range(6):
        stat = upload(np.full((1, 1, 3), n * 10.0))
        seen.append(delay.push(stat).download().reshape(-1).tolist())
    assert seen[:3] == [[1.0, 2.0, 3.0]] * 3
    assert seen[3:] == [[0.0] * 3, [10.0] * 3, [20.0] * 3]


def test_delay_buffer_rejects_bad_arguments(rng):
    like = upload(np.zeros((1, 1), np.float64))
    with pytest.raises(cv2.error, match="k must be"):
        lazycv.DelayBuffer(-1, like)
    with pytest.raises(cv2.error, match="like"):
        lazycv.DelayBuffer(1, np.zeros((1, 1)))
    with pytest.raises(cv2.error, match="DelayBuffer::push"):
        lazycv.DelayBuffer(1, like).push(upload(np.zeros((1, 1), np.float32)))


@pytest.mark.skipif(BACKEND != "cpu", reason="uses the CPU backend's timing")
def test_streams_do_not_change_what_w1_computes(rng):
    """The same chain over 3 frames, once on one stream per frame and once without streams."""
    frames = [rand_image(rng, 9, 11, 3, np.uint8) for _ in range(3)]
    want = serial(frames, chain)
    got = []
    for f in frames:
        s = cv2.cuda_Stream()
        g = cv2.cuda_GpuMat()
        g.upload(f, s)
        with lazycv.on_stream(s):
            planes = chain(g)
        got.append([p.download(stream=s) for p in planes])
        s.waitForCompletion()
    for a, b in zip(got, want):
        for p, q in zip(a, b):
            np.testing.assert_array_equal(p, q)


def test_the_media_page_examples_run(tmp_path, monkeypatch, capsys):
    """docs/media.md's python blocks, in order in one namespace (as test_docs_examples runs the
    layer pages)."""
    from .test_docs_examples import python_blocks
    blocks = python_blocks("media.md")
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "docs_media"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/media.md [block {i + 1}]", "exec"), ns)
