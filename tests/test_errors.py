"""SPEC §4: bad input raises ``cv2.error`` at the user's call, with a message naming the op;
the recorded graph and every earlier result stay valid afterwards; lazycv may be called from
several threads at once."""
import threading

import cv2
import numpy as np
import pytest

import lazycv
from lazycv._types import CN_MAX
from lazycv.ops import convert as convert_ops

from .conftest import SIM, assert_close, rand_image, upload


def raises_naming(op, fn):
    """``fn()`` must raise cv2.error (raised by that very call) whose message names ``op``."""
    with pytest.raises(cv2.error) as info:
        fn()
    msg = str(info.value)
    assert op in msg, f"the error message does not name {op!r}: {msg!r}"
    return info.value


class Chain:
    """A pending chain recorded before the bad call, and its CPU OpenCV reference."""

    def __init__(self, rng):
        self.src = rand_image(rng, 9, 13, 3, np.uint8)
        self.other = rand_image(rng, 5, 7, 3, np.uint8)
        self.g = upload(self.src)
        g_other = upload(self.other)
        self.dst = upload(np.zeros((5, 7, 3), np.uint8))
        launched = lazycv.stats()["kernels_launched"]
        self.r = cv2.cuda.resize(self.g, (7, 5), interpolation=cv2.INTER_NEAREST)
        self.gray = cv2.cuda.cvtColor(self.r, cv2.COLOR_BGR2GRAY)
        self.f = self.gray.convertTo(cv2.CV_32F, alpha=1 / 255, beta=-0.5)
        self.lin = cv2.cuda.resize(self.g, (6, 4), interpolation=cv2.INTER_LINEAR)
        cv2.cuda.absdiff(self.r, g_other, self.dst)                # a pending write into memory
        self.pending = lazycv.stats()["kernels_launched"] == launched

    def check(self):
        r = cv2.resize(self.src, (7, 5), interpolation=cv2.INTER_NEAREST)
        gray = cv2.cvtColor(r, cv2.COLOR_BGR2GRAY)
        assert_close(self.f.download(), convert_ops.reference(gray, cv2.CV_32F, 1 / 255, -0.5), 1e-6, rel=1e-6,
                     what="convertTo after the error")
        assert_close(self.gray.download(), gray, 0, what="cvtColor after the error")
        assert_close(self.r.download(), r, 0, what="resize after the error")
        assert_close(self.lin.download(), cv2.resize(self.src, (6, 4), interpolation=cv2.INTER_LINEAR), 1,
                     what="LINEAR resize after the error")
        assert_close(self.dst.download(), cv2.absdiff(r, self.other), 0, what="dst= write after the error")
        assert_close(self.g.download(), self.src, 0, what="the uploaded source after the error")
        # and the pipeline still accepts new work
        again = cv2.cuda.cvtColor(cv2.cuda.resize(self.g, (3, 2)), cv2.COLOR_BGR2RGB).download()
        assert_close(again, cv2.cvtColor(cv2.resize(self.src, (3, 2)), cv2.COLOR_BGR2RGB), 1, what="new work")


@pytest.fixture
def chain(rng):
    c = Chain(rng)
    assert c.pending, "recording the chain should not have computed anything yet"
    return c


class Inputs:
    """Operands for the bad calls (some of them pending results of ``chain``)."""

    def __init__(self, rng, chain):
        self.chain = chain
        self.a = rand_image(rng, 6, 8, 3, np.uint8)
        self.u = upload(self.a)                                     # 8UC3 6x8
        self.u1 = upload(rand_image(rng, 6, 8, 1, np.uint8))        # 8UC1 6x8
        self.u4 = upload(rand_image(rng, 6, 8, 4, np.uint8))        # 8UC4 6x8
        self.big = upload(rand_image(rng, 7, 8, 3, np.uint8))       # 8UC3 7x8
        self.f32 = upload(rand_image(rng, 6, 8, 3, np.float32))     # 32FC3 6x8
        self.s16 = upload(rand_image(rng, 6, 8, 3, np.int16))       # 16SC3 6x8
        self.s32 = upload(rand_image(rng, 6, 8, 3, np.int32))       # 32SC3 6x8
        self.empty = cv2.cuda_GpuMat()
        self.released = upload(self.a)
        self.released.release()


def _bad_upload(arr):
    return lambda i: cv2.cuda_GpuMat().upload(arr)


_base = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)

# (id, op name the message must contain, the bad call)
CASES = [
    # empty or released input
    ("resize-empty", "resize", lambda i: cv2.cuda.resize(i.empty, (3, 3))),
    ("resize-released", "resize", lambda i: cv2.cuda.resize(i.released, (3, 3))),
    ("cvtColor-empty", "cvtColor", lambda i: cv2.cuda.cvtColor(i.empty, cv2.COLOR_BGR2GRAY)),
    ("add-empty-src1", "add", lambda i: cv2.cuda.add(i.empty, i.u)),
    ("add-empty-src2", "add", lambda i: cv2.cuda.add(i.u, i.empty)),
    ("absdiff-empty", "absdiff", lambda i: cv2.cuda.absdiff(i.u, i.empty)),
    ("split-empty", "split", lambda i: cv2.cuda.split(i.empty)),
    ("merge-empty", "merge", lambda i: cv2.cuda.merge([i.u1, i.empty])),
    ("convertTo-empty", "convertTo", lambda i: i.empty.convertTo(cv2.CV_32F)),
    ("download-empty", "download", lambda i: i.empty.download()),
    ("download-released", "download", lambda i: i.released.download()),
    # unsupported depth or channel count
    ("cvtColor-16S-gray", "cvtColor", lambda i: cv2.cuda.cvtColor(i.s16, cv2.COLOR_BGR2GRAY)),
    ("cvtColor-32S-reorder", "cvtColor", lambda i: cv2.cuda.cvtColor(i.s32, cv2.COLOR_BGR2RGB)),
    ("cvtColor-16S-hsv", "cvtColor", lambda i: cv2.cuda.cvtColor(i.s16, cv2.COLOR_BGR2HSV)),
    ("cvtColor-1ch-bgr2gray", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u1, cv2.COLOR_BGR2GRAY)),
    ("cvtColor-pending-1ch-bgr2gray", "cvtColor", lambda i: cv2.cuda.cvtColor(i.chain.gray, cv2.COLOR_BGR2GRAY)),
    ("cvtColor-3ch-gray2bgr", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, cv2.COLOR_GRAY2BGR)),
    ("cvtColor-2ch-bgra2bgr", "cvtColor", lambda i: cv2.cuda.cvtColor(cv2.cuda.merge([i.u1, i.u1], cv2.cuda_GpuMat()),
                                                                    cv2.COLOR_BGRA2BGR)),
    ("cvtColor-dcn-2", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u4, cv2.COLOR_BGR2RGB, dcn=2)),
    ("cvtColor-1ch-hsv", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u1, cv2.COLOR_BGR2HSV)),
    # mismatched operands
    ("add-sizes", "add", lambda i: cv2.cuda.add(i.u, i.big)),
    ("add-types", "add", lambda i: cv2.cuda.add(i.u, i.f32)),
    ("add-channels", "add", lambda i: cv2.cuda.add(i.u, i.u1)),
    ("add-pending-sizes", "add", lambda i: cv2.cuda.add(i.chain.r, i.u)),
    ("subtract-sizes", "subtract", lambda i: cv2.cuda.subtract(i.big, i.u)),
    ("multiply-types", "multiply", lambda i: cv2.cuda.multiply(i.f32, i.u)),
    ("absdiff-sizes", "absdiff", lambda i: cv2.cuda.absdiff(i.u, i.big)),
    ("min-types", "min", lambda i: cv2.cuda.min(i.u, i.s16)),
    ("max-channels", "max", lambda i: cv2.cuda.max(i.u4, i.u)),
    ("merge-sizes", "merge", lambda i: cv2.cuda.merge([i.u1, upload(np.zeros((7, 8), np.uint8))])),
    ("add-mask-size", "add", lambda i: cv2.cuda.add(i.u, i.u, mask=upload(np.ones((7, 8), np.uint8)))),
    # ROI outside the parent
    ("roi-right", "GpuMat", lambda i: cv2.cuda_GpuMat(i.u, (5, 0, 4, 2))),
    ("roi-bottom", "GpuMat", lambda i: cv2.cuda_GpuMat(i.u, (0, 4, 2, 3))),
    ("roi-negative", "GpuMat", lambda i: cv2.cuda_GpuMat(i.u, (-1, 0, 2, 2))),
    ("roi-ranges", "GpuMat", lambda i: cv2.cuda_GpuMat(i.u, (0, 7), (0, 2))),
    ("roi-rowRange", "GpuMat", lambda i: i.u.rowRange(3, 9)),
    ("roi-of-pending", "GpuMat", lambda i: cv2.cuda_GpuMat(i.chain.r, (0, 0, 8, 5))),
    # resize arguments
    ("resize-negative-dsize", "resize", lambda i: cv2.cuda.resize(i.u, (-1, 3))),
    ("resize-negative-dsize-h", "resize", lambda i: cv2.cuda.resize(i.u, (3, -2))),
    ("resize-zero-dsize-zero-f", "resize", lambda i: cv2.cuda.resize(i.u, (0, 0))),
    ("resize-dsize-3", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3, 3))),
    ("resize-dsize-fraction", "resize", lambda i: cv2.cuda.resize(i.u, (3.5, 3))),
    ("resize-interpolation-fraction", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), interpolation=1.5)),
    ("resize-zero-dsize-explicit-f", "resize", lambda i: cv2.cuda.resize(i.u, (0, 0), fx=0, fy=0)),
    ("resize-zero-dsize-one-f", "resize", lambda i: cv2.cuda.resize(i.u, (0, 0), fx=0.5, fy=0)),
    ("resize-zero-dsize-negative-f", "resize", lambda i: cv2.cuda.resize(i.u, (0, 0), fx=-0.5, fy=-0.5)),
    ("resize-interp-99", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), interpolation=99)),
    ("resize-interp-negative", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), interpolation=-1)),
    ("resize-pending-interp", "resize", lambda i: cv2.cuda.resize(i.chain.r, (3, 3), interpolation=42)),
    # unknown colour code
    ("cvtColor-code-9999", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, 9999)),
    ("cvtColor-code-negative", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, -1)),
    ("cvtColor-code-fraction", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, cv2.COLOR_BGR2GRAY + 0.5)),
    ("cvtColor-code-string", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, "6")),
    ("cvtColor-dcn-fraction", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, cv2.COLOR_BGR2RGB, dcn=3.5)),
    ("compose-cvt_color-fraction", "cvt_color", lambda i: lazycv.cvt_color(cv2.COLOR_BGR2GRAY + 0.7)),
    # upload: wrong dtype, non-contiguous
    ("upload-int64", "upload", _bad_upload(np.zeros((3, 4), np.int64))),
    ("upload-uint64", "upload", _bad_upload(np.zeros((3, 4), np.uint64))),
    ("upload-bool", "upload", _bad_upload(np.zeros((3, 4), bool))),
    ("upload-complex", "upload", _bad_upload(np.zeros((3, 4), np.complex64))),
    ("upload-object", "upload", _bad_upload(np.zeros((3, 4), object))),
    ("upload-big-endian", "upload", _bad_upload(np.zeros((3, 4), ">u2"))),
    ("upload-list", "upload", _bad_upload([[1, 2], [3, 4]])),
    ("upload-4d", "upload", _bad_upload(np.zeros((2, 2, 2, 2), np.uint8))),
    ("upload-too-many-channels", "upload", _bad_upload(np.zeros((2, 2, CN_MAX + 1), np.uint8))),
    ("upload-zero-rows", "upload", _bad_upload(np.zeros((0, 4), np.uint8))),
    ("constructor-int64", "upload", lambda i: cv2.cuda_GpuMat(np.zeros((3, 4), np.int64))),
    # numpy array where a GpuMat is required
    ("resize-ndarray", "resize", lambda i: cv2.cuda.resize(i.a, (3, 3))),
    ("cvtColor-ndarray", "cvtColor", lambda i: cv2.cuda.cvtColor(i.a, cv2.COLOR_BGR2GRAY)),
    ("add-ndarray-src1", "add", lambda i: cv2.cuda.add(i.a, i.u)),
    ("add-ndarray-src2", "add", lambda i: cv2.cuda.add(i.u, i.a)),
    ("absdiff-ndarray", "absdiff", lambda i: cv2.cuda.absdiff(i.u, i.a)),
    ("split-ndarray", "split", lambda i: cv2.cuda.split(i.a)),
    ("merge-ndarray", "merge", lambda i: cv2.cuda.merge([i.u1, i.a[..., 0]])),
    ("resize-dst-ndarray", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), dst=np.zeros((3, 3, 3), np.uint8))),
    ("roi-of-ndarray", "GpuMat", lambda i: cv2.cuda_GpuMat(i.a, (0, 0, 2, 2))),
    # arguments of the wrong kind, where OpenCV's binding refuses them
    ("create-rows-string", "create", lambda i: cv2.cuda_GpuMat().create("a", 3, cv2.CV_8UC1)),
    ("hostmem-rows-string", "HostMem", lambda i: cv2.cuda_HostMem("a", 3, cv2.CV_8UC1)),
    ("stream-flags-string", "Stream", lambda i: cv2.cuda.Stream("x")),
    ("event-flags-string", "Event", lambda i: cv2.cuda.Event("x")),
    ("elapsedTime-not-events", "elapsedTime", lambda i: cv2.cuda.Event_elapsedTime(1, 2)),
    ("resize-fx-string-with-dsize", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), fx="a")),
    # wrong stream type
    ("resize-stream-int", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), stream=5)),
    ("resize-stream-event", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), stream=cv2.cuda.Event())),
    ("cvtColor-stream-str", "cvtColor", lambda i: cv2.cuda.cvtColor(i.u, cv2.COLOR_BGR2GRAY, stream="s")),
    ("add-stream-object", "add", lambda i: cv2.cuda.add(i.u, i.u, stream=object())),
    ("split-stream", "split", lambda i: cv2.cuda.split(i.u, stream=1)),
    ("merge-stream", "merge", lambda i: cv2.cuda.merge([i.u1, i.u1], stream=1)),
    ("convertTo-stream", "convertTo", lambda i: i.u.convertTo(cv2.CV_32F, stream=1)),
    ("upload-stream", "upload", lambda i: cv2.cuda_GpuMat().upload(i.a, 3)),
    ("download-stream", "download", lambda i: i.u.download(stream=3)),
    ("fallback-resize-stream", "resize", lambda i: cv2.cuda.resize(i.u, (3, 3), interpolation=cv2.INTER_AREA,
                                                                   stream=7)),
]


@pytest.mark.parametrize("op,bad", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_and_graph_stays_valid(rng, chain, op, bad):
    inputs = Inputs(rng, chain)
    raises_naming(op, lambda: bad(inputs))
    chain.check()
    # the operands themselves are untouched by the failed call
    assert_close(inputs.u.download(), inputs.a, 0, what="operand after the error")


def test_error_is_a_cv2_error_with_opencv_layout(rng):
    """Existing ``except cv2.error`` code and ``e.code``/``e.func`` readers keep working."""
    g = upload(rand_image(rng, 4, 4, 3, np.uint8))
    e = raises_naming("resize", lambda: cv2.cuda.resize(g, (-3, 2)))
    assert isinstance(e, cv2.error)
    assert "resize" in e.func
    assert isinstance(e.code, int) and e.code < 0


def test_failed_upload_keeps_the_mat(rng, chain):
    """A rejected upload must not touch the destination: its data and its pending write stay."""
    d = upload(np.zeros((5, 7, 3), np.uint8))
    cv2.cuda.add(chain.r, (1, 2, 3), d)                               # pending write into d
    for bad in (np.zeros((5, 7, 3), np.int64), np.zeros((5, 7, CN_MAX + 1), np.uint8)):
        raises_naming("upload", lambda: d.upload(bad))
    raises_naming("upload", lambda: d.upload(np.zeros((5, 7, 3), np.uint8), 12))
    r = cv2.resize(chain.src, (7, 5), interpolation=cv2.INTER_NEAREST)
    assert_close(d.download(), cv2.add(r, (1, 2, 3, 0)), 0)
    chain.check()


def test_failed_dst_call_keeps_the_dst(rng, chain):
    """A call that fails its checks must not rebind or overwrite ``dst``."""
    a = rand_image(rng, 5, 7, 3, np.uint8)
    d = upload(a)
    pend = cv2.cuda.cvtColor(chain.r, cv2.COLOR_BGR2RGB, d)          # pending write into d
    assert pend is d
    raises_naming("add", lambda: cv2.cuda.add(chain.r, upload(np.zeros((4, 7, 3), np.uint8)), d))
    raises_naming("resize", lambda: cv2.cuda.resize(chain.r, (3, 3), d, interpolation=77))
    raises_naming("cvtColor", lambda: cv2.cuda.cvtColor(chain.gray, cv2.COLOR_BGR2GRAY, d))
    assert d.size() == (7, 5) and d.type() == cv2.CV_8UC3
    r = cv2.resize(chain.src, (7, 5), interpolation=cv2.INTER_NEAREST)
    assert_close(d.download(), cv2.cvtColor(r, cv2.COLOR_BGR2RGB), 0)
    chain.check()


def test_valid_stream_argument_is_accepted(rng):
    """The control for the wrong-stream cases: a real Stream (and Stream.Null()) works."""
    a = rand_image(rng, 6, 8, 3, np.uint8)
    s = cv2.cuda.Stream()
    g = cv2.cuda_GpuMat()
    g.upload(a, s)
    out = cv2.cuda.cvtColor(cv2.cuda.resize(g, (4, 3), interpolation=cv2.INTER_NEAREST, stream=s),
                            cv2.COLOR_BGR2GRAY, stream=cv2.cuda.Stream.Null())
    got = out.download(s)
    s.waitForCompletion()
    ref = cv2.cvtColor(cv2.resize(a, (4, 3), interpolation=cv2.INTER_NEAREST), cv2.COLOR_BGR2GRAY)
    assert_close(got, ref, 0)


# ---------------------------------------------------------------------------- threads

def _thread_chain(rng, rows, cols, iters, errors, start):
    """One thread's work: a fused chain on its own data, a bad call in the middle of each
    recording, results checked against CPU OpenCV."""
    try:
        start.wait()
        for it in range(iters):
            src = rand_image(rng, rows, cols, 3, np.uint8)
            g = upload(src)
            r = cv2.cuda.resize(g, (cols // 2 + 1, rows // 2 + 1), interpolation=cv2.INTER_NEAREST)
            gray = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2GRAY)
            f = cv2.cuda.multiply(gray.convertTo(cv2.CV_32F, alpha=1 / 255, beta=-0.25), (2.0, 0, 0, 0))
            lin = cv2.cuda.resize(g, (cols + 3, rows + 2))                 # LINEAR, upscaling
            try:
                cv2.cuda.add(r, g)                                          # sizes differ
            except cv2.error as e:
                assert "add" in str(e)
            else:
                raise AssertionError("add of mismatched sizes did not raise")
            if it % 2:
                lazycv.materialize(f, lin)
            rr = cv2.resize(src, (cols // 2 + 1, rows // 2 + 1), interpolation=cv2.INTER_NEAREST)
            rg = cv2.cvtColor(rr, cv2.COLOR_BGR2GRAY)
            rf = cv2.multiply(convert_ops.reference(rg, cv2.CV_32F, 1 / 255, -0.25), 2.0)
            assert_close(f.download(), rf, 1e-6, rel=1e-5, what=f"thread chain iteration {it}")
            assert_close(gray.download(), rg, 0, what=f"thread gray iteration {it}")
            assert_close(lin.download(), cv2.resize(src, (cols + 3, rows + 2)), 1, what=f"thread LINEAR {it}")
    except BaseException as e:          # noqa: BLE001 - reported by the main thread
        errors.append(e)


def test_threads_each_with_own_chain():
    n_threads, iters = 4, 20
    errors, start = [], threading.Barrier(n_threads)
    threads = [threading.Thread(target=_thread_chain,
                                args=(np.random.default_rng(100 + t), 9 + 5 * t, 14 + 3 * t, iters, errors, start))
               for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"


def test_threads_share_a_source_and_write_into_own_dst(rng):
    """Several threads read one uploaded GpuMat and write their results into their own dst
    GpuMats at the same time; the shared source is never disturbed."""
    src = rand_image(rng, 24, 32, 3, np.uint8)
    shared = upload(src)
    n_threads, iters = 4, 20
    errors, start = [], threading.Barrier(n_threads)
    codes = [cv2.COLOR_BGR2RGB, cv2.COLOR_BGR2GRAY, cv2.COLOR_BGR2BGRA, cv2.COLOR_BGR2RGBA]

    def work(t):
        try:
            start.wait()
            dst = cv2.cuda_GpuMat()
            for it in range(iters):
                x, y = (t * 3 + it) % 16, (t + it) % 12
                roi = cv2.cuda_GpuMat(shared, (x, y, 16, 12))
                out = cv2.cuda.cvtColor(cv2.cuda.add(roi, (t, it, 5)), codes[t], dst)
                assert out is dst
                ref = cv2.cvtColor(cv2.add(np.ascontiguousarray(src[y:y + 12, x:x + 16]), (t, it, 5, 0)), codes[t])
                assert_close(dst.download(), ref, 0, what=f"thread {t} iteration {it}")
        except BaseException as e:      # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"
    assert_close(shared.download(), src, 0, what="the shared source")


@pytest.mark.sim
def test_unknown_launch_mode_is_a_clear_error(monkeypatch):
    """LAZYCV_LAUNCH names the CUDA launch path; a typo fails when the backend starts."""
    if not SIM:
        pytest.skip("builds a CUDA backend: runs in the simulator pass")
    from lazycv.backends.cuda import CudaBackend
    monkeypatch.setenv("LAZYCV_LAUNCH", "fastest")
    with pytest.raises(ValueError, match="LAZYCV_LAUNCH must be one of driver, packed, overload, dispatcher"):
        CudaBackend(simulator=True)
