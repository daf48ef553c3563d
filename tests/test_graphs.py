"""Graphs (lazycv/graphs.py): one iteration captured once and replayed. Replays after the
inputs change equal running the function again; sizes re-capture; a delay buffer inside a graph
keeps its delay; the results are the graph's memory, and lazy work on an earlier result runs
before a replay overwrites it."""
import cv2
import numpy as np
import pytest

import lazycv
from .conftest import BACKEND, rand_image, upload


def two_phases(frame, gain):
    """Two bilinear resizes (two kernels: a multi-tap gather after another is cut), a device
    scalar, and a split (one launch of three outputs)."""
    small = cv2.cuda.resize(frame, (6, 5), interpolation=cv2.INTER_LINEAR)
    back = cv2.cuda.resize(small, (4, 3), interpolation=cv2.INTER_LINEAR)
    f = back.convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return cv2.cuda.split(cv2.cuda.multiply(f, gain))


def run_plain(frame, gain):
    g = upload(frame)
    return [p.download() for p in two_phases(g, upload(np.array([[gain]], np.float64)))]


@pytest.mark.sim
def test_replays_after_the_inputs_change_equal_running_the_function(rng):
    graph = lazycv.capture(two_phases)
    for n in range(4):
        frame = rand_image(rng, 9, 11, 3, np.uint8)
        gain = 0.5 + n
        before = lazycv.stats()["ops_recorded"]
        got = [p.download() for p in graph(upload(frame), gain)]
        if n:                                       # a replay records nothing
            assert lazycv.stats()["ops_recorded"] == before
        for p, q in zip(got, run_plain(frame, gain)):
            np.testing.assert_array_equal(p, q)
    assert (graph.captures, graph.replays) == (1, 3)


def test_host_inputs_and_tuple_scalars_are_refreshed_by_a_copy(rng):
    graph = lazycv.capture(lambda f, s: cv2.cuda.add(f, s))
    for n in range(3):
        frame = rand_image(rng, 5, 6, 3, np.float32)
        host = cv2.cuda_HostMem(frame) if n % 2 else frame
        got = graph(host, (n, 2.0 * n, 0.5)).download()
        np.testing.assert_allclose(got, frame + np.array([n, 2.0 * n, 0.5], np.float32), rtol=1e-6)
    assert graph.captures == 1


def test_a_new_size_captures_again_and_both_keep_replaying(rng):
    graph = lazycv.capture(lambda f: cv2.cuda.cvtColor(f, cv2.COLOR_BGR2GRAY))
    for shape in [(4, 5), (7, 3), (4, 5), (7, 3)]:
        frame = rand_image(rng, *shape, 3, np.uint8)
        np.testing.assert_array_equal(graph(upload(frame)).download(), cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
    assert (graph.captures, graph.replays) == (2, 2)


@pytest.mark.sim
def test_a_delay_buffer_inside_a_graph_keeps_its_delay(rng):
    k = 2
    frames = [rand_image(rng, 4, 5, 1, np.uint8) for _ in range(2 * (k + 1) + 1)]
    like = cv2.cuda.calcSum(upload(frames[0]))

    def step(frame, delay):
        mean = cv2.cuda.multiply(cv2.cuda.calcSum(frame), 1.0 / 20)
        return cv2.cuda.multiply(frame, delay.push(cv2.cuda.divide(128.0, mean)))
    serial_delay, graph_delay = (lazycv.DelayBuffer(k, like, initial=1.0) for _ in range(2))
    want = [step(upload(f), serial_delay).download() for f in frames]
    graph = lazycv.capture(lambda f: step(f, graph_delay))
    got = [graph(upload(f)).download() for f in frames]
    for n, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"frame {n}")
    assert graph.captures == k + 1                   # once per ring position
    assert graph_delay.count == len(frames)


def test_results_are_the_graphs_memory_and_lazy_readers_run_first(rng):
    graph = lazycv.capture(lambda f: cv2.cuda.add(f, 1))
    a, b = rand_image(rng, 4, 4, 1, np.uint8), rand_image(rng, 4, 4, 1, np.uint8)
    first = graph(upload(a))
    pending = cv2.cuda.multiply(first, 2)            # recorded, not computed
    kept = first.clone()
    second = graph(upload(b))
    np.testing.assert_array_equal(pending.download(), cv2.multiply(cv2.add(a, 1), 2))
    np.testing.assert_array_equal(kept.download(), cv2.add(a, 1))
    np.testing.assert_array_equal(first.download(), cv2.add(b, 1))     # overwritten, as documented
    np.testing.assert_array_equal(second.download(), cv2.add(b, 1))


def test_graphs_reject_what_cannot_be_replayed(rng):
    with pytest.raises(cv2.error, match="capture"):
        lazycv.capture(3)
    with pytest.raises(cv2.error, match="copies between host and device"):
        lazycv.capture(lambda f: cv2.cuda.add(f, 1).download())(upload(np.zeros((2, 2), np.uint8)))
    with pytest.raises(cv2.error, match="must return"):
        lazycv.capture(lambda f: 3)(upload(np.zeros((2, 2), np.uint8)))
    with pytest.raises(cv2.error, match="input 0"):
        lazycv.capture(lambda f: f)("frame")


@pytest.mark.skipif(BACKEND != "cuda", reason="CUDA Graphs need the cuda backend")
def test_on_cuda_a_graph_without_reductions_replays_as_one_cuda_graph(rng):
    graph = lazycv.capture(two_phases)
    frame = rand_image(rng, 9, 11, 3, np.uint8)
    graph(upload(frame), 1.0)
    tape = next(iter(graph.tapes.values()))
    assert tape.native is not None, "the CUDA Graph capture failed (replays go launch by launch)"
    for n in range(3):
        frame = rand_image(rng, 9, 11, 3, np.uint8)
        for p, q in zip([p.download() for p in graph(upload(frame), 1.5 + n)], run_plain(frame, 1.5 + n)):
            np.testing.assert_array_equal(p, q)
