"""Defects a fuzz of random chains and bad inputs found (issue #20), each pinned by a test that
failed before its fix."""
import cv2
import numpy as np
import pytest

from .conftest import assert_close, rand_image, upload


@pytest.mark.sim
def test_integer_wrap_of_a_numpy_int32_operand(rng):
    """The simulator's int32 wrap added 2**31 to whatever the operand was; an op that hands on
    a numpy int32 (the 8U HSV conversion) made that an OverflowError. The wrap takes a Python
    int first."""
    a = rand_image(rng, 3, 4, 3, np.uint8)
    h = cv2.cuda.cvtColor(cv2.cuda.resize(upload(a), (3, 2)), cv2.COLOR_BGR2HSV)
    got = cv2.cuda.subtract(h, (20, 50, 50)).download()
    want = cv2.subtract(cv2.cvtColor(cv2.resize(a, (3, 2)), cv2.COLOR_BGR2HSV), (20, 50, 50, 0))
    assert_close(got, want, 0)


def test_a_plain_opencv_without_contrib_modules(tmp_path):
    """With opencv-python (no contrib; OpenCV 5 also moved HOG and the cascade detector there)
    lazycv imported a contrib-only constant at import and failed to load at all. It must import,
    and the algorithms that need contrib raise cv2.error saying so at the call."""
    import subprocess
    import sys
    script = tmp_path / "plain.py"
    script.write_text(
        "import cv2\n"
        "for name in ('bgsegm', 'optflow', 'HOGDescriptor', 'HOGDescriptor_getDefaultPeopleDetector',\n"
        "             'HOGDescriptor_DESCR_FORMAT_COL_BY_COL', 'CascadeClassifier'):\n"
        "    if hasattr(cv2, name):\n"
        "        delattr(cv2, name)\n"
        "import numpy as np, lazycv\n"
        "lazycv.enable(backend='cpu')\n"
        "g = cv2.cuda_GpuMat(); g.upload(np.zeros((8, 8), np.uint8))\n"
        "assert cv2.cuda.threshold(g, 1, 255, cv2.THRESH_BINARY)[1].download().shape == (8, 8)\n"
        "for make in (cv2.cuda.HOG.create, cv2.cuda.createBackgroundSubtractorMOG,\n"
        "             lambda: cv2.cuda.CascadeClassifier.create('x.xml')):\n"
        "    try:\n"
        "        make()\n"
        "    except cv2.error as e:\n"
        "        assert 'opencv-contrib' in str(e), e\n"
        "    else:\n"
        "        raise AssertionError('no cv2.error')\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


# ---------------------------------------------------------------- multiply/divide working type

import gc  # noqa: E402
import inspect  # noqa: E402
import itertools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import lazycv  # noqa: E402
from lazycv import codegen, diskcache  # noqa: E402
from lazycv.memory import BufferPool, pool_cap  # noqa: E402
from lazycv.plancache import PlanCache  # noqa: E402
from lazycv.ops import arith  # noqa: E402
from lazycv.ops.common import API  # noqa: E402

from .conftest import BACKEND, SIM, assert_fused_equals_eager, run_both  # noqa: E402

ALL_DEPTHS = {cv2.CV_8U: np.uint8, cv2.CV_8S: np.int8, cv2.CV_16U: np.uint16, cv2.CV_16S: np.int16,
              cv2.CV_32S: np.int32, cv2.CV_32F: np.float32, cv2.CV_64F: np.float64}


def _operand(rng, depth, n, nonzero=False):
    """Values that make float32 and double, and the order of a scaled product, round apart."""
    dt = np.dtype(ALL_DEPTHS[depth])
    if dt.kind == "f":
        a = (rng.standard_normal(n) * rng.choice([1, 300, 70000], n)).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, -3_000_000), min(info.max, 3_000_000) + 1, n).astype(dt)
    if nonzero:
        a[a == 0] = 1
    return a


def _to_depth(x, depth):
    """A working-type value into ``depth`` as CPU OpenCV's saturate_cast does: round half to
    even, cvRound's INT_MIN for what no int holds (inf, NaN), then clamp."""
    dt = np.dtype(ALL_DEPTHS[depth])
    if dt.kind == "f":
        return x.astype(dt)
    r = np.rint(x.astype(np.float64))
    r = np.where(~np.isfinite(r) | (np.abs(r) >= 2 ** 31), -2 ** 31, r)
    info = np.iinfo(dt)
    return np.clip(r, info.min, info.max).astype(dt)


def _emulate(kind, a, b, scale, out, wt):
    """CPU OpenCV's two-image multiply/divide computed in ``wt`` ('i', 'f32', 'f64'): a scaled
    integer (32S) product is scaled after the product (mul32s), a float one before."""
    if wt == "i":
        return _to_depth(a.astype(np.int64) * b.astype(np.int64), out)
    ft = np.float32 if wt == "f32" else np.float64
    A, B, s = a.astype(ft), b.astype(ft), ft(scale)
    with np.errstate(all="ignore"):
        if kind == "div":
            r = A * s / B if scale != 1 else A / B
        elif scale == 1:
            r = A * B
        elif wt == "f64" and not any(np.dtype(v.dtype).kind == "f" for v in (a, b)) and \
                np.dtype(ALL_DEPTHS[out]).kind != "f":
            r = A * B * s
        else:
            r = s * A * B
    return _to_depth(r, out)


def test_multiply_divide_of_two_images_compute_in_opencvs_working_type():
    """Every depth pair and result depth, scaled and not (issue #20 item 2: 8U * 32F with a
    scale into 32S computed in double where CPU OpenCV uses float32): CPU OpenCV's result is
    what lazycv's working type computes, value for value (1 372 combinations, no kernels)."""
    rng = np.random.default_rng(20)
    wrong = []
    for kind, d1, d2, out, scale in itertools.product(("mul", "div"), ALL_DEPTHS, ALL_DEPTHS, ALL_DEPTHS,
                                                      (1.0, 0.37)):
        a, b = _operand(rng, d1, 400), _operand(rng, d2, 400, nonzero=True)
        want = (cv2.multiply if kind == "mul" else cv2.divide)(a.reshape(20, 20), b.reshape(20, 20),
                                                               scale=scale, dtype=out).ravel()
        wt = arith.working_type(kind, (d1, d2), out, scale != 1, False)
        if not np.array_equal(_emulate(kind, a, b, scale, out, wt), want, equal_nan=True):
            wrong.append((kind, d1, d2, out, scale, wt))
    assert not wrong, f"{len(wrong)} combinations differ from CPU OpenCV: {wrong[:10]}"


MULDIV_CASES = [   # (kind, depth1, depth2, result depth, scale): one per working type and order
    ("mul", cv2.CV_8U, cv2.CV_32F, cv2.CV_32S, 0.37),      # issue #20 item 2: float32
    ("mul", cv2.CV_8U, cv2.CV_8U, cv2.CV_16U, 0.37),       # 32S work: the product, then the scale
    ("mul", cv2.CV_16U, cv2.CV_8S, cv2.CV_32S, 0.37),
    ("mul", cv2.CV_16S, cv2.CV_16S, cv2.CV_32S, 1.0),      # exact integer product
    ("mul", cv2.CV_32F, cv2.CV_32F, cv2.CV_32S, 1.0),      # float32 into 32S
    ("mul", cv2.CV_32S, cv2.CV_32S, cv2.CV_32F, 0.37),     # 32S operands in float32
    ("mul", cv2.CV_8U, cv2.CV_64F, cv2.CV_32S, 0.37),      # double
    ("div", cv2.CV_16U, cv2.CV_32F, cv2.CV_16U, 0.37),
    ("div", cv2.CV_8U, cv2.CV_16S, cv2.CV_32S, 0.37),
]


def test_multiply_divide_of_mixed_types_match_cpu_opencv_through_kernels():
    rng = np.random.default_rng(21)
    hosts = {d: _operand(rng, d, 5 * 7, nonzero=True).reshape(5, 7) for d in ALL_DEPTHS}
    devs = {d: upload(a) for d, a in hosts.items()}
    got = [(cv2.cuda.multiply if k == "mul" else cv2.cuda.divide)(devs[d1], devs[d2], scale=s, dtype=out)
           for k, d1, d2, out, s in MULDIV_CASES]                  # recorded together: one flush
    for (k, d1, d2, out, s), g in zip(MULDIV_CASES, got):
        want = (cv2.multiply if k == "mul" else cv2.divide)(hosts[d1], hosts[d2], scale=s, dtype=out)
        assert_close(g.download(), want, 0, what=f"{k} {d1} {d2} -> {out} scale {s}")


# ---------------------------------------------------------------- bad calls are cv2.error

def _functions():
    return sorted((n, f) for n, f in API.items() if not inspect.isclass(f))


def test_every_function_refuses_an_unknown_keyword_and_extra_positionals_with_cv2_error():
    """OpenCV's binding reports both as cv2.error (-5: Overload resolution failed); a bare
    TypeError escaped every function before."""
    g = upload(np.zeros((4, 4), np.uint8))
    escaped = []
    for name, f in _functions():
        for what, call in (("an unknown keyword", lambda: f(g, g, bogus_keyword=1)),
                           ("30 positionals", lambda: f(*([g] * 3 + [None] * 27)))):
            try:
                call()
                escaped.append((name, what, "accepted"))
            except cv2.error:
                pass
            except Exception as e:          # noqa: BLE001 (what escaped is the finding)
                escaped.append((name, what, f"{type(e).__name__}: {e}"))
    assert len(_functions()) > 80
    assert not escaped, escaped


def test_a_binding_error_names_the_function_and_the_argument():
    with pytest.raises(cv2.error, match=r"resize\(\).*bogus"):
        cv2.cuda.resize(upload(np.zeros((4, 4), np.uint8)), (2, 2), bogus=1)


def test_an_error_raised_inside_a_function_keeps_its_own_type(monkeypatch):
    """Only an argument list the signature refuses is translated: a TypeError from inside the
    function (here a stand-in) is not the caller's."""
    from lazycv.ops.common import cuda_api

    def inner(src, dst=None):
        raise TypeError("inside")
    wrapped = cuda_api("reliabilityProbe")(inner)
    API.pop("reliabilityProbe")
    with pytest.raises(TypeError, match="inside"):
        wrapped(1)


def test_infinite_resize_factor_is_a_cv2_error():
    g = upload(np.zeros((10, 10), np.uint8))
    with pytest.raises(cv2.error):
        cv2.cuda.resize(g, None, fx=float("inf"), fy=1)
    assert cv2.cuda.resize(g, None, fx=0.5, fy=0.5).download().shape == (5, 5)


def test_a_gpumat_larger_than_memory_is_cv2_error_and_the_library_stays_usable(rng):
    with pytest.raises(cv2.error) as e:
        cv2.cuda_GpuMat(100000, 100000, cv2.CV_8UC3)
    assert e.value.code == -4                                    # StsNoMem
    a = rand_image(rng, 3, 5, 3, np.uint8)
    assert_close(cv2.cuda.add(upload(a), (1, 2, 3)).download(), cv2.add(a, (1, 2, 3, 0)))


# ---------------------------------------------------------------- pools a service can live with

def _pool(cap, idle_seconds=60.0):
    return BufferPool(lambda shape, dt: np.empty(shape, dt), lambda st: st.view(), cap,
                      idle_seconds=idle_seconds)


def test_a_full_pool_lets_the_least_recently_returned_storage_go():
    """Changing sizes: the newest returns stay, the oldest go (the pool kept the first sizes
    and dropped every later one before)."""
    pool = _pool(cap=3 * 100)
    addrs = []
    for n in range(6):                     # six sizes of 100 bytes, each returned at once
        b = pool.alloc((100 + n,), np.dtype(np.uint8))
        addrs.append(b.ctypes.data)
        del b
        gc.collect()
    assert pool.idle_bytes <= 300
    kept = pool.alloc((105,), np.dtype(np.uint8))               # the last size is still there
    assert kept.ctypes.data == addrs[5]
    assert pool.idle_bytes < 300


def test_idle_storage_goes_after_its_idle_time(monkeypatch):
    import types

    from lazycv import memory
    now = [1000.0]
    monkeypatch.setattr(memory, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    pool = _pool(cap=1 << 20, idle_seconds=10.0)
    b = pool.alloc((1000,), np.dtype(np.uint8))
    del b
    gc.collect()
    now[0] += 9.0
    assert pool.idle_bytes == 1000
    now[0] += 2.0
    keep = [pool.alloc((10,), np.dtype(np.uint8)) for _ in range(64)]     # (64 allocations trim)
    assert pool.idle_bytes == 0 and len(keep) == 64


def test_pool_cap_defaults_to_a_fraction_of_free_memory(monkeypatch):
    monkeypatch.delenv("LAZYCV_POOL_MB", raising=False)
    assert pool_cap("LAZYCV_POOL_MB", 1024, lambda: 800 << 20) == 100 << 20        # an eighth
    assert pool_cap("LAZYCV_POOL_MB", 1024, lambda: 64 << 30) == 1024 << 20        # the ceiling
    assert pool_cap("LAZYCV_POOL_MB", 1024, lambda: 1 << 20) == 64 << 20           # the floor
    assert pool_cap("LAZYCV_POOL_MB", 1024, lambda: 1 / 0) == 1024 << 20           # unknown
    monkeypatch.setenv("LAZYCV_POOL_MB", "3")
    assert pool_cap("LAZYCV_POOL_MB", 1024, lambda: 64 << 30) == 3 << 20           # the override


def test_an_out_of_memory_allocation_lets_the_idle_storage_go_first():
    """Out of memory: the pool's idle storage is freed and the allocation tried again; if
    that fails too, a cv2.error (StsNoMem) and the pool stays usable."""
    short = [False]

    def new(shape, dt):
        if short[0] and pool.idle_bytes:              # memory is short while the pool holds some
            raise MemoryError
        if short[0] and shape[0] >= 300:
            raise MemoryError
        return np.empty(shape, dt)
    pool = BufferPool(new, lambda st: st.view(), 1 << 20)
    b = pool.alloc((100,), np.dtype(np.uint8))
    del b
    gc.collect()
    short[0] = True
    c = pool.alloc((200,), np.dtype(np.uint8))
    assert c.shape == (200,) and pool.idle_bytes == 0
    with pytest.raises(cv2.error) as e:
        pool.alloc((300,), np.dtype(np.uint8))
    assert e.value.code == -4
    assert pool.alloc((50,), np.dtype(np.uint8)).shape == (50,)


# ---------------------------------------------------------------- the disk cache

def _entry(folder, digest, size, age, numba=True):
    """A fake cache entry (module + Numba index and data) last used ``age`` seconds ago."""
    name = f"lazycv_cpu_{digest:024x}"
    paths = [os.path.join(folder, name + ".py")]
    if numba:
        os.makedirs(os.path.join(folder, "__pycache__"), exist_ok=True)
        paths += [os.path.join(folder, "__pycache__", f"{name}.kernel-8.py311.nbi"),
                  os.path.join(folder, "__pycache__", f"{name}.kernel-8.py311.1.nbc")]
    t = time.time() - age
    for p in paths:
        with open(p, "wb") as f:
            f.write(b"x" * size)
        os.utime(p, (t, t))
    return paths


def test_disk_cache_evicts_least_recently_used_entries_to_its_limits(tmp_path):
    folder = str(tmp_path)
    old = [_entry(folder, i, 1000, age=1000 - i) for i in range(10)]   # entry 0 is the oldest
    young = _entry(folder, 99, 1000, age=1)                            # in use right now
    with open(os.path.join(folder, "lazycv_cpu_x.py.123.456.tmp"), "w") as f:
        f.write("a writer that died")
    os.utime(os.path.join(folder, "lazycv_cpu_x.py.123.456.tmp"), (0, 0))
    gone = diskcache.evict(folder, max_bytes=5 * 3000, max_files=10 ** 6)
    assert gone == 6                         # 11 entries of 3000 bytes -> at most 5
    assert all(not os.path.exists(p) for e in old[:6] for p in e)
    assert all(os.path.exists(p) for e in old[6:] + [young] for p in e)
    assert not any(n.endswith(".tmp") for n in os.listdir(folder))
    assert diskcache.evict(folder, max_bytes=0, max_files=3) == 4      # the young entry stays
    assert all(os.path.exists(p) for p in young)
    assert sum(len(fs) for fs in diskcache.entries(folder)[0].values()) == 3


def test_disk_cache_eviction_tolerates_files_another_process_removed(tmp_path, monkeypatch):
    folder = str(tmp_path)
    for i in range(4):
        _entry(folder, i, 100, age=1000)
    real = diskcache.entries

    def racing(f):
        groups, strays = real(f)
        for files in groups.values():            # another process evicts everything meanwhile
            for p, _, _ in files:
                os.unlink(p)
        return groups, strays
    monkeypatch.setattr(diskcache, "entries", racing)
    assert diskcache.evict(folder, max_bytes=0, max_files=0) == 4


def test_disk_cache_eviction_spares_an_entry_taken_up_after_its_scan(tmp_path, monkeypatch):
    """Another process uses an old entry between the evictor's scan and its delete: it stays."""
    folder = str(tmp_path)
    taken = _entry(folder, 1, 100, age=1000)
    _entry(folder, 2, 100, age=900)
    real = diskcache.entries

    def racing(f):
        groups, strays = real(f)
        diskcache.touch(taken[0])               # the other process's use
        return groups, strays
    monkeypatch.setattr(diskcache, "entries", racing)
    assert diskcache.evict(folder, max_bytes=0, max_files=0) == 1
    assert all(os.path.exists(p) for p in taken)


def test_a_module_evicted_while_it_is_imported_is_written_again(tmp_path, monkeypatch):
    """The race a 16-process fuzz run met: a process finds its module on disk, another evicts
    it before the import (Numba's cache then has no file: "no locator available"). The loader
    writes it again and imports it."""
    monkeypatch.setattr(codegen, "cache_dir", lambda: str(tmp_path))
    source = "def kernel():\n    return 41 + 1\n"
    _, name, _ = codegen._load(source, "cpu")
    del sys.modules[name]
    evicted = []

    def touch_then_evicted(path):
        if not evicted:
            evicted.append(path)
            os.unlink(path)
    monkeypatch.setattr(diskcache, "touch", touch_then_evicted)
    kernel, again, _ = codegen._load(source, "cpu")
    assert again == name and evicted and kernel() == 42 and os.path.exists(evicted[0])


def test_disk_cache_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("LAZYCV_CACHE_MAX_MB", "1.5")
    monkeypatch.setenv("LAZYCV_CACHE_MAX_FILES", "7")
    assert diskcache.limits() == (int(1.5 * (1 << 20)), 7)


@pytest.mark.skipif(BACKEND != "cpu", reason="the CPU backend's generated modules")
def test_a_truncated_generated_module_is_written_again(rng, tmp_path, monkeypatch):
    """A kernel module cut short on disk (a full disk, a killed writer) was imported as it
    was: a SyntaxError or, cut at a line end, a different kernel. It is written again."""
    from lazycv.runtime import STATE
    monkeypatch.setenv("LAZYCV_CACHE_DIR", str(tmp_path))
    a = rand_image(rng, 4, 6, 3, np.uint8)
    want = cv2.subtract(cv2.add(a, (7, 8, 9, 0)), (1, 1, 1, 0))

    def run():
        return cv2.cuda.subtract(cv2.cuda.add(upload(a), (7, 8, 9)), (1, 1, 1)).download()
    assert_close(run(), want)
    modules = [n for n in os.listdir(tmp_path) if n.endswith(".py")]
    assert modules
    for n in modules:
        path = os.path.join(tmp_path, n)
        text = open(path).read()
        with open(path, "w") as f:
            f.write(text[:len(text) // 2])
    import sys
    for n in modules:                     # a new process: nothing of these in memory
        sys.modules.pop(n[:-3], None)
    monkeypatch.setattr(STATE, "caches", {})
    monkeypatch.setattr(STATE, "plans", PlanCache())
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "lazycv: a fused kernel failed")    # (rebuilt, not the fallback)
        assert_close(run(), want)
    for n in modules:
        assert open(os.path.join(tmp_path, n)).read().endswith("\n")


def test_a_damaged_or_foreign_cubin_record_is_ignored_and_replaced(tmp_path, monkeypatch):
    from lazycv.backends import cubins

    from .test_cubins import fake_kernel
    fn, overload = fake_kernel(str(tmp_path))
    cubins.save(fn, overload, (9, 0))
    cubin = tmp_path / "lazycv_cuda_0123.sm90.cubin"
    cubin.write_bytes(b"\x7fELF cu")                          # truncated
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None
    cubins.save(fn, overload, (9, 0))                         # the next compile replaces it
    assert cubins.load(fn, overload.argument_types, (9, 0)) == (b"\x7fELF cubin", "_Z6kernel")
    monkeypatch.setattr(cubins, "_driver_version", lambda: [99, 0])     # another driver
    assert cubins.load(fn, overload.argument_types, (9, 0)) is None


# ---------------------------------------------------------------- a kernel that fails

@pytest.mark.sim
def test_a_kernel_that_fails_to_build_falls_back_to_one_kernel_per_op(rng, monkeypatch):
    """The fused kernel's build raises once (a compiler bug, a driver error): the flush runs
    unfused with a PerformanceWarning and gives OpenCV's answer; later flushes fuse again."""
    a = rand_image(rng, 3, 4, 3, np.uint8)
    want = cv2.multiply(cv2.subtract(cv2.add(a, (5, 6, 7, 0)), (2, 2, 2, 0)), (2, 2, 2, 0))
    real, failures = codegen.KernelCache.get, []

    def failing_once(self, layout, stats):
        if not failures:
            failures.append(layout)
            raise RuntimeError("simulated compiler failure")
        return real(self, layout, stats)
    monkeypatch.setattr(codegen.KernelCache, "get", failing_once)

    def run():
        g = cv2.cuda.add(upload(a), (5, 6, 7))
        return cv2.cuda.multiply(cv2.cuda.subtract(g, (2, 2, 2)), (2, 2, 2)).download()
    with pytest.warns(lazycv.PerformanceWarning, match="simulated compiler failure"):
        got = run()
    assert failures and len(failures[0].values) > 1              # the fused kernel failed
    assert_close(got, want)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "lazycv: a fused kernel failed")
        assert_close(run(), want)


def test_a_failure_that_is_not_the_kernels_still_reaches_the_caller(rng, monkeypatch):
    # a fresh plan cache: an earlier test's replayed program of this structure would launch
    # without asking the kernel cache
    monkeypatch.setattr(lazycv.runtime.STATE, "plans", PlanCache())
    a = rand_image(rng, 3, 4, 1, np.uint8)

    def no_memory(self, layout, stats):
        raise MemoryError("no memory")
    monkeypatch.setattr(codegen.KernelCache, "get", no_memory)
    g = cv2.cuda.add(upload(a), 1)
    with pytest.raises(MemoryError):
        g.download()
    monkeypatch.undo()
    assert_close(g.download(), cv2.add(a, 1))                    # retried, now computed


def test_writing_entries_evicts_on_a_thread_of_its_own(tmp_path, monkeypatch):
    folder = str(tmp_path)
    for i in range(5):
        _entry(folder, i, 100, age=1000)
    monkeypatch.setenv("LAZYCV_CACHE_MAX_FILES", "6")
    monkeypatch.setattr(diskcache, "_writes", [0])
    diskcache.written(folder)                    # the first write of a process checks
    for _ in range(200):
        if not diskcache._evicting.locked():
            break
        time.sleep(0.05)
    assert sum(len(fs) for fs in diskcache.entries(folder)[0].values()) <= 6


def test_memory_read_every_frame_keeps_only_its_live_readers(rng):
    """The reader index (ir.READERS) kept a weak reference per frame for memory that every frame
    reads and nothing writes (a slow leak over a long run); its list is pruned as it grows, and
    pending readers are kept, so a later upload still leaves them the old data."""
    from lazycv import ir
    a = rand_image(rng, 4, 5, 3, np.uint8)
    g = upload(a)
    for _ in range(1000):
        cv2.cuda.add(g, (1, 2, 3)).download()
    assert len(ir.READERS[id(g._alloc.buf)]) < 128
    pending = [cv2.cuda.add(g, (i, 0, 0)) for i in range(200)]
    g.upload(np.zeros_like(a))
    for i in (0, 77, 199):
        assert_close(pending[i].download(), cv2.add(a, (i, 0, 0, 0)), 0)
