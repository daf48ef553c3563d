"""Per-thread recording (issue #20): a flush computes the pending work of the thread that
flushes, so threads running their own pipelines are not planned and compiled as one mixed
batch — while the memory-order rules still hold across threads (a result another thread reads,
or memory another thread overwrites, is computed first)."""
import signal
import threading
import time
import warnings

import cv2
import numpy as np
import pytest

import lazycv
from lazycv import runtime

from .conftest import assert_close, rand_image, run_in_threads, upload


def _in_thread(fn):
    """Run ``fn`` in a new thread; its result, or its exception raised here."""
    out = []
    run_in_threads(lambda _: out.append(fn()), 1)
    return out[0]


def _chain_x(g):
    return cv2.cuda.cvtColor(cv2.cuda.resize(g, (20, 14)), cv2.COLOR_BGR2GRAY)


def _chain_y(g):
    return cv2.cuda.add(cv2.cuda.resize(g, (11, 9), interpolation=cv2.INTER_NEAREST), (3, 2, 1))


def test_a_flush_leaves_another_threads_pending_work_pending(rng):
    src = rand_image(rng, 30, 40, 3, np.uint8)
    g = upload(src)
    theirs = _chain_y(g)                          # recorded by this (main) thread, kept pending
    lazycv.reset_stats()

    def other():
        mine = _chain_x(g)
        return mine.download()
    got = _in_thread(other)
    assert_close(got, cv2.cvtColor(cv2.resize(src, (20, 14)), cv2.COLOR_BGR2GRAY), 0, what="thread's chain")
    assert theirs._node is not None, "the other thread's flush computed this thread's result"
    assert lazycv.stats()["kernels_launched"] == 1
    ref = cv2.add(cv2.resize(src, (11, 9), interpolation=cv2.INTER_NEAREST), (3, 2, 1, 0))
    assert_close(theirs.download(), ref, 0, what="main thread's chain")


def test_interleaved_threads_compile_their_own_structures(rng):
    """Two threads record different chains call by call, interleaved; each flush launches one
    kernel (its own chain), and the kernels built are the ones each chain builds alone."""
    srcs = [rand_image(rng, 30, 40, 3, np.uint8) for _ in range(2)]
    chains = [_chain_x, _chain_y]
    refs = [lambda s: cv2.cvtColor(cv2.resize(s, (20, 14)), cv2.COLOR_BGR2GRAY),
            lambda s: cv2.add(cv2.resize(s, (11, 9), interpolation=cv2.INTER_NEAREST), (3, 2, 1, 0))]
    # each chain alone, once, so its kernel is built and counted
    for c, s in zip(chains, srcs):
        c(upload(s)).download()
    lazycv.reset_stats()
    turn = [threading.Semaphore(1), threading.Semaphore(0)]
    launches = []

    def work(t):
        try:
            g = upload(srcs[t])
            for it in range(8):
                turn[t].acquire()                   # record one frame, then let the other record
                r = chains[t](g)
                turn[1 - t].release()
                turn[t].acquire()
                before = lazycv.stats()["kernels_launched"]
                got = r.download()
                launches.append(lazycv.stats()["kernels_launched"] - before)
                turn[1 - t].release()
                assert_close(got, refs[t](srcs[t]), 0, what=f"thread {t} frame {it}")
        except BaseException:
            for s in turn:                          # (the other thread must not wait forever)
                s.release()
            raise
    run_in_threads(work, 2)
    assert launches and set(launches) == {1}, f"a flush launched another thread's work: {launches}"
    assert lazycv.stats()["compiles"] == 0, "interleaving built kernels neither chain builds alone"


def test_a_result_read_by_another_thread_is_computed(rng):
    src = rand_image(rng, 16, 24, 3, np.uint8)
    g = upload(src)
    r = cv2.cuda.resize(g, (12, 8))
    got = _in_thread(lambda: cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).download())
    assert_close(got, cv2.cvtColor(cv2.resize(src, (12, 8)), cv2.COLOR_BGR2RGB), 0, what="cross-thread read")
    assert_close(r.download(), cv2.resize(src, (12, 8)), 0, what="the shared result")


def test_a_write_by_another_thread_computes_the_readers_first(rng):
    a, b = (rand_image(rng, 16, 24, 3, np.uint8) for _ in range(2))
    g = upload(a)
    r = cv2.cuda.add(g, (1, 2, 3))                # pending here, reads g
    _in_thread(lambda: g.upload(b))               # overwrites g in another thread
    assert_close(r.download(), cv2.add(a, (1, 2, 3, 0)), 0, what="reader of overwritten memory")


def test_a_replayed_plan_is_not_used_after_another_thread_computed_part_of_it(rng):
    """This thread's loop is replayed from its recording; when another thread computes one of
    the recorded nodes (downloading it) and this thread then overwrites that node's input,
    the flush must read the computed node, not recompute it from the new input."""
    frames = [rand_image(rng, 16, 24, 3, np.uint8) for _ in range(4)]
    g = upload(frames[0])
    for f in frames[:3]:                          # the same structure, so the plan is replayed
        g.upload(f)
        r1 = cv2.cuda.resize(g, (12, 8), interpolation=cv2.INTER_NEAREST)
        r2 = cv2.cuda.add(r1, (5, 5, 5))
        del r1
        r2.download()
    g.upload(frames[0])
    r1 = cv2.cuda.resize(g, (12, 8), interpolation=cv2.INTER_NEAREST)
    r2 = cv2.cuda.add(r1, (5, 5, 5))
    _in_thread(r1.download)                       # computes r1 into memory from another thread
    del r1
    g.upload(frames[3])                           # r2's pending input r1 is computed: no flush
    ref = cv2.add(cv2.resize(frames[0], (12, 8), interpolation=cv2.INTER_NEAREST), (5, 5, 5, 0))
    lazycv.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", lazycv.PerformanceWarning)   # (no fault fallback either)
        assert_close(r2.download(), ref, 0, what="replay after another thread's flush")
    assert lazycv.stats()["fallbacks"] == 0


def test_an_ended_threads_pending_writes_are_computed_by_the_next_flush(rng):
    src = rand_image(rng, 10, 12, 3, np.uint8)
    g = upload(src)
    dst = upload(np.zeros((10, 12, 3), np.uint8))
    _in_thread(lambda: cv2.cuda.add(g, (7, 7, 7), dst))     # a write into memory, left pending
    cv2.cuda.resize(g, (6, 5)).download()                    # any flush of this thread
    assert not dst._alloc.writers, "the ended thread's write is still pending"
    assert_close(dst.download(), cv2.add(src, (7, 7, 7, 0)), 0, what="the ended thread's write")


def test_threads_with_nothing_pending_leave_no_state_behind(rng):
    g = upload(rand_image(rng, 8, 8, 1, np.uint8))
    for _ in range(20):
        _in_thread(lambda: cv2.cuda.add(g, 1).download())
    runtime.live_pending()
    assert len(runtime.STATE.threads) <= 2


def test_the_runtime_lock_excludes_other_threads_and_re_enters():
    """STATE.lock (the C hot path's RLock where it was built, else threading.RLock) behaves as
    threading.RLock: the owner re-enters it, another thread waits or times out, a release by a
    thread that does not hold it is an error, and a cv2.cuda call from another thread waits
    until the holder lets go."""
    lock = runtime.STATE.lock
    held, go, seen = threading.Event(), threading.Event(), {}

    def holder():
        with lock:
            with lock:                                   # re-entered
                held.set()
                go.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    try:
        assert lock.acquire(blocking=False) is False
        t0 = time.perf_counter()
        assert lock.acquire(timeout=0.05) is False
        assert time.perf_counter() - t0 >= 0.04
        with pytest.raises(RuntimeError):
            lock.release()

        def caller():
            g = cv2.cuda_GpuMat(4, 5, cv2.CV_8UC1, 3)
            seen["value"] = cv2.cuda.add(g, 1).download()[0, 0]
        c = threading.Thread(target=caller)
        c.start()
        c.join(0.2)
        assert c.is_alive()                              # waits for the holder
    finally:
        go.set()
        t.join(5)
    c.join(5)
    assert seen["value"] == 4
    assert lock.acquire() is True
    assert lock.acquire() is True
    lock.release()
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    with pytest.raises(ValueError):
        lock.acquire(blocking=False, timeout=1)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")
def test_a_signal_handler_that_raises_ends_a_wait_for_the_runtime_lock():
    """Ctrl-C while a thread waits for the lock reaches it (the wait is interruptible)."""
    lock = runtime.STATE.lock
    held, go = threading.Event(), threading.Event()

    class Alarm(Exception):
        pass

    def holder():
        with lock:
            held.set()
            go.wait(5)

    def on_alarm(signum, frame):
        raise Alarm

    t = threading.Thread(target=holder)
    t.start()
    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        assert held.wait(5)
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(Alarm):
            lock.acquire()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        go.set()
        t.join(5)
    assert not lock._is_owned()
