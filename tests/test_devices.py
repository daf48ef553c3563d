"""Several devices (issue #21): ``cv2.cuda.setDevice`` selects the calling thread's device;
memory, memory pools and launches are per device. Without GPUs the CPU backend presents
``LAZYCV_CPU_DEVICES`` virtual devices, each a backend instance of its own, so the multi-GPU
paths run here; the GPU run goes to bench/RESULTS.md when a multi-GPU machine is available."""

import cv2
import numpy as np
import pytest

import lazycv
from lazycv import runtime

from .conftest import BACKEND, assert_close, rand_image, run_in_threads, upload

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="virtual devices are the CPU backend's")


@pytest.fixture
def devices(monkeypatch):
    """Three virtual devices; afterwards device 0 again, and lazycv as a single-device process
    (ir.MULTI_DEVICE, which selecting another device sets for good, sends every later flush of
    the test process down the multi-device Python path, and no test of it outlives the test)."""
    from lazycv import ir
    monkeypatch.setenv("LAZYCV_CPU_DEVICES", "3")
    monkeypatch.setattr(ir, "MULTI_DEVICE", ir.MULTI_DEVICE)
    yield 3
    cv2.cuda.setDevice(0)
    lazycv.materialize()


def _chain(g):
    return cv2.cuda.cvtColor(cv2.cuda.resize(g, (20, 14)), cv2.COLOR_BGR2GRAY)


def _ref(a):
    return cv2.cvtColor(cv2.resize(a, (20, 14)), cv2.COLOR_BGR2GRAY)


def test_device_count_and_selection(devices):
    assert cv2.cuda.getCudaEnabledDeviceCount() == 3
    assert cv2.cuda.getDevice() == 0
    cv2.cuda.setDevice(2)
    assert cv2.cuda.getDevice() == 2
    assert cv2.cuda.DeviceInfo().deviceID() == 2
    for bad in (3, -1):
        with pytest.raises(cv2.error, match="setDevice"):
            cv2.cuda.setDevice(bad)
    assert cv2.cuda.getDevice() == 2


def test_each_device_has_its_own_backend_and_memory(devices, rng):
    a = rand_image(rng, 30, 40, 3, np.uint8)
    results = {}
    for d in range(3):
        cv2.cuda.setDevice(d)
        g = upload(a)
        assert g._alloc.device == d
        results[d] = (_chain(g), runtime.STATE.backend)
    assert len({id(be) for _, be in results.values()}) == 3, "devices share a backend instance"
    assert len({id(be.buffers) for _, be in results.values()}) == 3, "devices share a memory pool"
    for d, (r, _) in results.items():
        assert_close(r.download(), _ref(a), 0, what=f"device {d}")


def test_reading_another_devices_data_is_an_error(devices, rng):
    a = rand_image(rng, 10, 12, 3, np.uint8)
    g0 = upload(a)
    p0 = cv2.cuda.add(g0, (1, 1, 1))                       # pending, recorded on device 0
    cv2.cuda.setDevice(1)
    for m, name in ((g0, "memory"), (p0, "a pending result")):
        with pytest.raises(cv2.error, match="device 0, but the current device is 1"):
            cv2.cuda.resize(m, (6, 5))
    # downloads work from any device (a copy), and the pending result runs on its own device
    assert_close(p0.download(), cv2.add(a, (1, 1, 1, 0)), 0, what="device 0's result, read on device 1")
    assert_close(g0.download(), a, 0, what="device 0's memory, read on device 1")
    g1 = upload(g0.download())                             # copied over: usable here
    assert_close(cv2.cuda.resize(g1, (6, 5)).download(), cv2.resize(a, (6, 5)), 0, what="copied")


def test_set_device_computes_the_threads_pending_work_first(devices, rng):
    a = rand_image(rng, 30, 40, 3, np.uint8)
    g = upload(a)
    r = _chain(g)
    launched = lazycv.stats()["kernels_launched"]
    cv2.cuda.setDevice(1)
    assert lazycv.stats()["kernels_launched"] == launched + 1 and r._node is None
    assert runtime.device_of(r) == 0
    assert_close(r.download(), _ref(a), 0, what="computed at setDevice")


def test_one_thread_per_device_splits_frames(devices, rng):
    """The multi-GPU pattern: a thread per device, each with its own frames and pipeline."""
    frames = [rand_image(rng, 30, 40, 3, np.uint8) for _ in range(12)]
    out = [None] * len(frames)

    def work(d):
        cv2.cuda.setDevice(d)
        for i in range(d, len(frames), 3):
            g = upload(frames[i])
            assert g._alloc.device == d
            out[i] = _chain(g).download()
    run_in_threads(work, 3)
    assert cv2.cuda.getDevice() == 0, "another thread's setDevice changed this thread's device"
    for i, f in enumerate(frames):
        assert_close(out[i], _ref(f), 0, what=f"frame {i}")


def test_switching_the_backend_flushes_every_devices_work(devices, rng):
    a = rand_image(rng, 10, 12, 3, np.uint8)
    cv2.cuda.setDevice(1)
    r = cv2.cuda.add(upload(a), (2, 2, 2))
    cv2.cuda.setDevice(0)                                   # (this thread's work ran at the switch)
    cv2.cuda.setDevice(1)
    r2 = cv2.cuda.add(upload(a), (3, 3, 3))
    lazycv.enable(backend="cpu", fuse=False)                # settings change: everything computed
    assert r._node is None and r2._node is None
    assert_close(r2.download(), cv2.add(a, (3, 3, 3, 0)), 0, what="flushed on its device")


def test_the_multi_gpu_sample_splits_frames_over_every_device():
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, LAZYCV_BACKEND="cpu", LAZYCV_CPU_DEVICES="3",
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, str(root / "samples" / "multi_gpu.py"), "9"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "9 frames on 3 device(s)" in p.stdout and "equal to CPU OpenCV" in p.stdout, p.stdout
