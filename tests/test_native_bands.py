"""The CPU backend's bands on native threads (backends/cpu_native.py, backends/_bands.c): a big
kernel's bands and a big copy's run on native threads with the GIL released. Each path is held
to the Python pool's result bit for bit, and to CPU OpenCV."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv import runtime
from lazycv.backends import cpu_native

from .conftest import BACKEND, assert_close, run_in_threads, upload

pytestmark = [
    pytest.mark.skipif(BACKEND != "cpu", reason="the CPU backend's bands"),
    pytest.mark.skipif(cpu_native.BANDS is None, reason="lazycv/backends/_bands.c was not built"),
]

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture
def be(monkeypatch):
    """The CPU backend with four bands a big launch, whatever this machine's cores."""
    be = runtime.backend()
    monkeypatch.setattr(be, "threads", 4)
    monkeypatch.setattr(be, "_natives", {})
    return be


def _w1(g, std):
    r = cv2.cuda.resize(g, (256, 192), interpolation=cv2.INTER_LINEAR)
    f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
    return [p.download() for p in cv2.cuda.split(cv2.cuda.divide(cv2.cuda.subtract(f, MEAN), std))]


def _w1_reference(host):
    f = cv2.cvtColor(cv2.resize(host, (256, 192), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
    f = (f.astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)
    return [f[..., k] for k in range(3)]


class _Spy:
    """cpu_native.BANDS with each run's and copy's answer kept (True: it ran)."""
    def __init__(self, real):
        self.real, self.runs, self.copies = real, [], []

    def run(self, *a):
        self.runs.append(self.real.run(*a))
        return self.runs[-1]

    def copy(self, *a):
        self.copies.append((a[2], self.real.copy(*a)))
        return self.copies[-1][1]

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def spy(monkeypatch):
    s = _Spy(cpu_native.BANDS)
    monkeypatch.setattr(cpu_native, "BANDS", s)
    return s


def _natives(be):
    return [n for n in be._natives.values() if isinstance(n, cpu_native.Native)]


def _std():
    std = cv2.cuda_GpuMat(192, 256, cv2.CV_32FC3)
    std.setTo(STD)
    return std


def test_a_big_frame_runs_in_native_bands_as_on_the_python_pool(rng, be, spy, monkeypatch):
    """W1's frame kernel in native bands from its second run on: equal to the Python pool's
    result bit for bit, and to CPU OpenCV."""
    host = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    std = _std()
    runs = [_w1(upload(host), std) for _ in range(3)]
    assert len(_natives(be)) == 1 and spy.runs == [True, True]    # (the second and third frames)
    monkeypatch.setattr(be, "_native_bands", lambda *a: False)
    monkeypatch.setattr(be, "_copy", lambda dst, src: dst.__setitem__(Ellipsis, src))
    pool = _w1(upload(host), std)
    for planes in runs:
        for got, want, ref in zip(planes, pool, _w1_reference(host)):
            np.testing.assert_array_equal(got, want)
            assert_close(got, ref, tol=1e-5, rel=1e-5)


def test_a_big_roi_loop_runs_its_batched_launch_in_native_bands(rng, be, spy, monkeypatch):
    """A loop over crops (one batched launch with its per-item tables) in native bands: equal
    to the Python pool and to CPU OpenCV."""
    host = rng.integers(0, 256, (400, 500, 3), dtype=np.uint8)
    g = upload(host)
    rois = [(int(x), int(y), int(w), int(h)) for x, y, w, h in
            zip(rng.integers(0, 200, 8), rng.integers(0, 150, 8), rng.integers(40, 300, 8), rng.integers(50, 250, 8))]

    def loop():
        outs = [cv2.cuda.resize(cv2.cuda_GpuMat(g, roi), (64, 128)).convertTo(cv2.CV_32FC3, alpha=0.5)
                for roi in rois]
        return [o.download() for o in outs]
    runs = [loop() for _ in range(3)]
    assert len(_natives(be)) == 1 and spy.runs == [True, True]
    monkeypatch.setattr(be, "_native_bands", lambda *a: False)
    pool = loop()
    for got in runs:
        for (x, y, w, h), a, b in zip(rois, got, pool):
            np.testing.assert_array_equal(a, b)
            want = cv2.resize(host[y:y + h, x:x + w], (64, 128)).astype(np.float32) * np.float32(0.5)
            assert_close(a, want, tol=1e-6)


def test_an_in_place_write_runs_the_aliased_kernel_in_native_bands(rng, be, spy):
    """A result written into its own source (``dst=``) takes the kernel built without the
    no-overlap promise, in native bands too."""
    host = rng.random((300, 400), dtype=np.float32)
    for _ in range(3):
        g = upload(host)
        cv2.cuda.multiply(g, 3.0, dst=g)
        np.testing.assert_array_equal(g.download(), host * np.float32(3.0))
    assert len(_natives(be)) == 1 and spy.runs == [True, True]


def test_native_copies_equal_numpys_and_decline_what_they_do_not_make(rng):
    """_bands.copy: 2-D buffers of one shape and type with contiguous rows (views with padded
    rows included) copied as numpy copies them; None (nothing written) for overlapping memory,
    other shapes or types, and rows that are not contiguous."""
    bands = cpu_native.BANDS
    for dtype in (np.uint8, np.uint16, np.float32, np.float64):
        src = rand = (rng.random((301, 517)) * 200).astype(dtype)
        big = np.zeros((320, 600), dtype)
        for dst, s in ((np.empty_like(src), src), (big[7:308, 11:528], src), (np.empty((300, 400), dtype), rand[1:, 3:403])):
            for n in (1, 3, 8):
                dst[...] = 0
                assert bands.copy(dst, s, n) is True
                np.testing.assert_array_equal(dst, s)
    a = np.arange(100 * 64, dtype=np.uint8).reshape(100, 64)
    before = a.copy()
    assert bands.copy(a[1:], a[:-1], 4) is None                          # (overlap)
    assert bands.copy(np.empty((99, 64), np.uint8), a, 4) is None        # (shape)
    assert bands.copy(np.empty((100, 64), np.int8), a, 4) is None        # (type)
    assert bands.copy(np.empty((100, 32), np.uint8), a[:, ::2], 4) is None   # (strided row)
    np.testing.assert_array_equal(a, before)


def test_a_wrapper_declines_arguments_it_was_not_made_for(rng, be):
    """_bands.run returns None (nothing run) for an argument of another type than the
    wrapper's — one numba would type as another parameter type: an array of another dtype or
    not contiguous, a float, an int32 or a bool where an int64 goes, an int where a float goes,
    a Python float (float64) where a float32 goes."""
    host = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    std = _std()
    for _ in range(3):
        _w1(upload(host), std)
    native, = _natives(be)
    codes = native.codes.decode()
    arrays = [i for i, c in enumerate(codes) if c in "123"]
    ints = [i for i, c in enumerate(codes) if c == "i"]
    floats = [i for i, c in enumerate(codes) if c == "f"]
    assert arrays and ints and floats
    good = [np.zeros((4,) * int(c), np.dtype(f)) if c in "123" else f[-1](0) for c, f in zip(codes, native.formats)]
    run = cpu_native.BANDS.run
    assert run(native.address, 0, 4, native.codes, native.formats, tuple(good)) is True   # (0 rows: packed only)
    wrong_type = np.zeros((4,) * int(codes[arrays[0]]), np.int64 if native.formats[arrays[0]] != "l" else np.int8)
    strided = np.zeros((4, 8), np.dtype(native.formats[arrays[0]]))[:, ::2]
    f32 = [i for i in floats if native.formats[i] == (np.float32,)]
    assert f32                                   # (W1's kernel takes float32 scalars)
    for at, bad in ((arrays[0], wrong_type), (arrays[0], strided), (ints[0], 1.0), (ints[0], np.int32(1)),
                    (ints[0], True), (floats[0], 1), (f32[0], 0.5)):
        args = list(good)
        args[at] = bad
        assert run(native.address, 0, 4, native.codes, native.formats, tuple(args)) is None


def test_threads_flushing_big_frames_at_once_each_get_their_own(rng, be, spy):
    """Several threads running big frames at once (the native pool busy with one of them: the
    others run their bands on their own thread) each get their own frame's result."""
    hosts = [rng.integers(0, 256, (300, 400, 3), dtype=np.uint8) for _ in range(4)]
    std = _std()
    for _ in range(2):
        _w1(upload(hosts[0]), std)
    want = [_w1_reference(h) for h in hosts]

    def work(i):
        for _ in range(5):
            for got, ref in zip(_w1(upload(hosts[i]), std), want[i]):
                assert_close(got, ref, tol=1e-5, rel=1e-5)
    run_in_threads(work, len(hosts))
    assert spy.runs and all(spy.runs) and spy.threads() >= 1


def test_a_big_upload_and_a_region_download_go_through_native_copies(rng, be, spy):
    """A big frame's upload and the download of a region of it copy in native bands and give
    back the frame's pixels."""
    host = rng.integers(0, 256, (600, 700, 3), dtype=np.uint8)
    g = upload(host)
    np.testing.assert_array_equal(g.download(), host)
    np.testing.assert_array_equal(cv2.cuda_GpuMat(g, (20, 30, 660, 560)).download(), host[30:590, 20:680])
    assert spy.copies == [(4, True)] * 3


def _frame_in_child(host, conn):
    """A forked child's big frames (run in a process forked after the parent used the pool)."""
    try:
        be = runtime.backend()
        be.threads = 4
        std = _std()
        planes = [_w1(upload(host), std) for _ in range(3)][-1]
        conn.send((planes, cpu_native.BANDS.threads()))
    except BaseException as e:      # noqa: BLE001 - reported to the parent
        conn.send(e)
    finally:
        conn.close()


def test_a_forked_child_starts_its_own_pool(rng, be):
    """A process forked after the parent ran native bands (a DataLoader's workers) runs its own
    big frames: the parent's workers are not in the child, which starts new ones."""
    import multiprocessing
    host = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    std = _std()
    for _ in range(3):
        want = _w1(upload(host), std)
    assert cpu_native.BANDS.threads() >= 1
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_frame_in_child, args=(host, child))
    p.start()
    got = parent.recv() if parent.poll(120) else TimeoutError("the forked child gave no answer")
    p.join(30)
    assert not isinstance(got, BaseException), got
    planes, threads = got
    for a, b in zip(planes, want):
        np.testing.assert_array_equal(a, b)
    assert threads >= 1 and p.exitcode == 0
