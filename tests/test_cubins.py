"""Kept cubins (lazycv/backends/cubins.py): a generated CUDA kernel's machine code saved beside
its source, so a new process launches it without numba-cuda's dispatcher. The record's rules
run anywhere (fake kernels); the last test runs two real processes on a GPU."""
import json
import os
import subprocess
import sys
import types

import cv2
import numpy as np
import pytest

from lazycv.backends import cubins

from .conftest import BACKEND, assert_close


def fake_kernel(folder, linking=()):
    """A generated module's dispatcher and its one compiled overload, as cubins reads them."""
    src = os.path.join(folder, "lazycv_cuda_0123.py")
    code = compile("def kernel(a, b):\n    pass\n", src, "exec")
    scope = {}
    exec(code, scope)
    fn = types.SimpleNamespace(py_func=scope["kernel"])
    lib = types.SimpleNamespace(_linking_files=set(linking), _entry_name="_Z6kernel",
                                get_cubin=lambda cc: types.SimpleNamespace(code=b"\x7fELF cubin"))
    overload = types.SimpleNamespace(_codelibrary=lib, argument_types=("array(uint8, 2d, A)", "int64"))
    return fn, overload


def test_a_saved_cubin_comes_back_for_the_same_argument_types(tmp_path):
    fn, overload = fake_kernel(str(tmp_path))
    cubins.save(fn, overload, (9, 0))
    assert cubins.load(fn, ("array(uint8, 2d, A)", "int64"), (9, 0)) == (b"\x7fELF cubin", "_Z6kernel")
    assert sorted(os.listdir(tmp_path)) == ["lazycv_cuda_0123.sm90.cubin", "lazycv_cuda_0123.sm90.json"]


def test_other_argument_types_or_another_device_find_nothing(tmp_path):
    fn, overload = fake_kernel(str(tmp_path))
    cubins.save(fn, overload, (9, 0))
    assert cubins.load(fn, ("array(uint8, 2d, C)", "int64"), (9, 0)) is None
    assert cubins.load(fn, ("array(uint8, 2d, A)", "int64"), (8, 6)) is None


def test_a_record_of_another_numba_cuda_or_a_damaged_one_is_ignored(tmp_path):
    fn, overload = fake_kernel(str(tmp_path))
    cubins.save(fn, overload, (9, 0))
    record = tmp_path / "lazycv_cuda_0123.sm90.json"
    meta = json.loads(record.read_text())
    record.write_text(json.dumps(dict(meta, numba_cuda="0.0.1")))
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None
    record.write_text("{not json")
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None
    record.write_text(json.dumps(meta))
    (tmp_path / "lazycv_cuda_0123.sm90.cubin").unlink()
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None


def test_a_kernel_that_links_more_than_its_cubin_is_not_kept(tmp_path):
    fn, overload = fake_kernel(str(tmp_path), linking=["nrt.cu"])
    cubins.save(fn, overload, (9, 0))
    assert os.listdir(tmp_path) == []
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None


CHILD = r'''
import json, numpy as np, cv2, lazycv
lazycv.enable(backend="cuda")
img = np.random.default_rng(7).integers(0, 256, (37, 53, 3), np.uint8)
g = cv2.cuda_GpuMat(); g.upload(img)
gray = cv2.cuda.cvtColor(cv2.cuda.resize(g, (20, 15)), cv2.COLOR_BGR2GRAY).download()
rois = [cv2.cuda.resize(cv2.cuda_GpuMat(g, (x, 0, 20, 20)), (8, 8)) for x in (0, 10, 20)]
rois = [r.download() for r in rois]                       # one batched launch
be = lazycv.runtime.STATE.backend
print(json.dumps({"gray": gray.tolist(), "rois": [r.tolist() for r in rois],
                  "from_kept_cubins": sum(d.kernel is None for d in be._direct.values()),
                  "numba_overloads": sum(len(fn.overloads) for fn in be._direct)}))
'''


@pytest.mark.sim
@pytest.mark.skipif(BACKEND != "cuda", reason="loads cubins on a real GPU (the simulator has none)")
def test_a_new_process_launches_kept_cubins_without_numba_and_computes_the_same(tmp_path):
    env = dict(os.environ, LAZYCV_CACHE_DIR=str(tmp_path))

    def run():
        p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])
    first, second = run(), run()
    assert first["from_kept_cubins"] == 0 and first["numba_overloads"] >= 2
    assert second["from_kept_cubins"] >= 2 and second["numba_overloads"] == 0
    img = np.random.default_rng(7).integers(0, 256, (37, 53, 3), np.uint8)
    ref_gray = cv2.cvtColor(cv2.resize(img, (20, 15)), cv2.COLOR_BGR2GRAY)
    for got in (first, second):
        assert_close(np.array(got["gray"], np.uint8), ref_gray, tol=1, what="gray")
        for x, roi in zip((0, 10, 20), got["rois"]):
            assert_close(np.array(roi, np.uint8), cv2.resize(img[:20, x:x + 20], (8, 8)), tol=1, what="roi")
    assert second == dict(first, from_kept_cubins=second["from_kept_cubins"], numba_overloads=0)
