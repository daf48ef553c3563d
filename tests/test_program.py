"""Batch programs (lazycv.program): a compose batch that went out as one launch is launched again
for the next batch of its shape without recording — with the new frames' contents and
positions, into fresh memory, equal to CPU OpenCV — and every other batch takes the general
path. Also the tensor output (write(tensor=True)) on both paths."""
import cv2
import numpy as np
import pytest

import lazycv

from .conftest import SIM, assert_close, rand_image, upload
from .test_compose import MEAN, STD, cpu_reference

pytestmark = pytest.mark.sim


def _geom():
    """(frame h, w), crop rect, output (w, h): tiny under the simulator."""
    return ((30, 40), (3, 2, 33, 25), (16, 12)) if not SIM else ((9, 12), (1, 1, 10, 7), (6, 5))


def steps(rect, out):
    return (lazycv.crop(rect), lazycv.resize(out), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
            lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD), lazycv.to_planar())


def host(t):
    return t if isinstance(t, np.ndarray) else t.copy_to_host()


def frames_of(rng, n, h, w):
    return [rand_image(rng, h, w, 3, np.uint8) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 4])
def test_later_batches_launch_the_program_with_their_own_frames(rng, n):
    (h, w), rect, out = _geom()
    p = lazycv.compose(*steps(rect, out), lazycv.write(tensor=True))
    kept = []
    for call in range(3):
        frames = frames_of(rng, n, h, w)              # new contents every call
        lazycv.reset_stats()
        t = p([upload(f) for f in frames])
        s = lazycv.stats()
        assert t.shape == (n, 3, out[1], out[0]) and t.dtype == np.float32
        assert_close(host(t), np.stack([cpu_reference(f, rect, out) for f in frames]), tol=1e-5)
        if call:                                      # nothing recorded: one launch
            assert s["ops_recorded"] == 0 and s["kernels_launched"] == 1 and s["compiles"] == 0
        kept.append((t, host(t).copy()))
    for t, seen in kept:                              # earlier tensors are not overwritten
        assert np.array_equal(host(t), seen)


def test_regions_that_move_between_batches_are_read_where_they_are_now(rng):
    """Tiles of one frame (GpuMat ROIs of one buffer) at other positions each call: the
    program's table offsets follow them."""
    (h, w), rect, out = _geom()
    big_h, big_w = 3 * h, 3 * w
    frame = rand_image(rng, big_h, big_w, 3, np.uint8)
    g = upload(frame)
    p = lazycv.compose(*steps(rect, out), lazycv.write())
    for call in range(3):
        origins = [(int(rng.integers(0, big_w - w)), int(rng.integers(0, big_h - h))) for _ in range(5)]
        tiles = [cv2.cuda_GpuMat(g, (x, y, w, h)) for x, y in origins]
        lazycv.reset_stats()
        got = p(tiles)
        if call:
            assert lazycv.stats()["ops_recorded"] == 0
        ref = np.stack([cpu_reference(frame[y:y + h, x:x + w], rect, out) for x, y in origins])
        assert_close(got, ref, tol=1e-5)


def test_a_numpy_batch_and_a_list_of_frames_have_programs_of_their_own(rng):
    (h, w), rect, out = _geom()
    p = lazycv.compose(*steps(rect, out), lazycv.write())
    for call in range(2):
        frames = frames_of(rng, 3, h, w)
        ref = np.stack([cpu_reference(f, rect, out) for f in frames])
        assert_close(p(np.stack(frames)), ref, tol=1e-5)          # one buffer, three regions
        assert_close(p([upload(f) for f in frames]), ref, tol=1e-5)
        given = np.zeros_like(ref)
        assert p(np.stack(frames), out=given) is given
        assert_close(given, ref, tol=1e-5)
    assert len(p._programs) == 2 and all(v is not None for v in p._programs.values())


def test_device_results_of_a_program_are_gpumats_that_later_calls_can_use(rng):
    (h, w), rect, out = _geom()
    p = lazycv.compose(*steps(rect, out), lazycv.write(device=True))
    for call in range(3):
        frames = frames_of(rng, 3, h, w)
        lazycv.reset_stats()
        res = p([upload(f) for f in frames])
        if call:
            assert lazycv.stats()["ops_recorded"] == 0
        assert len(res) == 3 and all(len(planes) == 3 for planes in res)
        for f, planes in zip(frames, res):
            ref = cpu_reference(f, rect, out)
            assert_close(np.stack([m.download() for m in planes]), ref, tol=1e-5)
            doubled = cv2.cuda.add(planes[0], planes[0])          # a lazy op over a program result
            assert_close(doubled.download(), ref[0] * 2, tol=1e-5)


def test_batches_that_are_not_one_launch_take_the_general_path(rng):
    (h, w), rect, out = _geom()
    frames = frames_of(rng, 3, h, w)
    ref = np.stack([cpu_reference(f, rect, out) for f in frames])
    # a callable step: no template, no program; the tensor is filled by copies
    p = lazycv.compose(*steps(rect, out)[:-1], lambda m: m, lazycv.to_planar(), lazycv.write(tensor=True))
    for _ in range(2):
        assert_close(host(p([upload(f) for f in frames])), ref, tol=1e-5)
    assert p._programs is None
    # a pending input: recorded with the rest
    q = lazycv.compose(*steps(rect, out), lazycv.write(tensor=True))
    q([upload(f) for f in frames])
    pending = [cv2.cuda.add(upload(f), 0) for f in frames]
    lazycv.reset_stats()
    assert_close(host(q(pending)), ref, tol=1e-5)
    assert lazycv.stats()["ops_recorded"] > 0
    # the same frame twice is its own memory pattern
    twice = upload(frames[0])
    got = host(q([twice, twice, upload(frames[2])]))
    assert_close(got, np.stack([ref[0], ref[0], ref[2]]), tol=1e-5)
    # eager mode keeps its one-kernel-per-op semantics
    with lazycv.enabled(fuse=False):
        assert_close(host(q([upload(f) for f in frames])), ref, tol=1e-5)


def test_tensor_output_without_to_planar_and_for_one_frame(rng):
    (h, w), rect, out = _geom()
    p = lazycv.compose(lazycv.crop(rect), lazycv.resize(out), lazycv.write(tensor=True))
    frames = frames_of(rng, 2, h, w)
    x, y, cw, ch = rect
    ref = np.stack([cv2.resize(np.ascontiguousarray(f[y:y + ch, x:x + cw]), out) for f in frames])
    for _ in range(2):
        t = p([upload(f) for f in frames])
        assert t.shape == (2, out[1], out[0], 3) and t.dtype == np.uint8
        assert_close(host(t), ref)
    one = p(upload(frames[1]))
    assert one.shape == (out[1], out[0], 3)
    assert_close(host(one), ref[1])
    with pytest.raises(cv2.error, match="tensor=True"):
        lazycv.write(out=np.zeros(3), tensor=True)


def test_gray_batches_streams_and_results_read_by_the_next_batch(rng):
    (h, w), rect, out = _geom()
    gray = lazycv.compose(lazycv.resize(out), lazycv.cvt_color(cv2.COLOR_BGR2GRAY), lazycv.write(tensor=True))
    scale = lazycv.compose(lazycv.convert(np.float32, 0.5), lazycv.write())
    planes = lazycv.compose(lazycv.resize(out), lazycv.cvt_color(cv2.COLOR_BGR2GRAY), lazycv.write(device=True))
    stream = cv2.cuda.Stream()
    for call in range(3):
        frames = frames_of(rng, 3, h, w)
        ref = np.stack([cv2.cvtColor(cv2.resize(f, out), cv2.COLOR_BGR2GRAY) for f in frames])
        lazycv.reset_stats()
        t = gray([upload(f) for f in frames], stream=stream)
        if call:
            assert lazycv.stats()["ops_recorded"] == 0
        assert t.shape == (3, out[1], out[0]) and t.dtype == np.uint8
        assert_close(host(t), ref, tol=1)         # OpenCV's gray conversion: SPEC tolerance 1
        # a program's GpuMat results as the next pipeline's batch (both programs from call 1)
        mats = planes([upload(f) for f in frames])
        assert_close(scale(mats), ref.astype(np.float32) * np.float32(0.5), tol=0.5)
    assert all(v is not None for p in (gray, planes, scale) for v in p._programs.values())


def test_a_fixed_set_of_regions_of_different_sizes_is_one_program(rng):
    """W3's shape through compose: crops of one frame, each its own size, resized to one size —
    one launch per batch once captured; new frame contents, moved crops and new sizes stay
    correct."""
    (h, w), _, out = _geom()
    big_h, big_w = 3 * h, 3 * w
    g = cv2.cuda_GpuMat()
    p = lazycv.compose(lazycv.resize(out), lazycv.convert(np.float32, 1 / 255),
                       lazycv.normalize(MEAN, STD), lazycv.to_planar(), lazycv.write(tensor=True))

    def crops(n):
        sizes = [(int(rng.integers(2, w)), int(rng.integers(2, h))) for _ in range(n)]
        return [(int(rng.integers(0, big_w - cw)), int(rng.integers(0, big_h - ch)), cw, ch) for cw, ch in sizes]

    def reference(frame, rects):
        rs = [cv2.resize(np.ascontiguousarray(frame[y:y + ch, x:x + cw]), out) for x, y, cw, ch in rects]
        f = np.stack(rs).astype(np.float32) * np.float32(1 / 255)
        return ((f - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).transpose(0, 3, 1, 2)

    # the general path of the same steps (a callable step: never a program)
    general = lazycv.compose(*p.steps[:-2], lambda m: m, lazycv.to_planar(), lazycv.write(tensor=True))
    # SPEC: an upscaling 8U LINEAR resize may differ from CPU OpenCV by one level, here / 255 / std
    tol = 1 / (255 * min(STD)) + 1e-5
    rects = crops(6)
    moved = [(int(rng.integers(0, big_w - cw)), int(rng.integers(0, big_h - ch)), cw, ch) for _, _, cw, ch in rects]
    for call, rs in enumerate([rects, rects, moved, crops(6), rects]):
        frame = rand_image(rng, big_h, big_w, 3, np.uint8)
        g.upload(frame)                                  # new contents, the same memory
        lazycv.reset_stats()
        t = p([cv2.cuda_GpuMat(g, r) for r in rs])
        if call in (1, 2, 4):                            # the sizes of a captured batch
            assert lazycv.stats()["ops_recorded"] == 0 and lazycv.stats()["kernels_launched"] == 1
        assert_close(host(t), reference(frame, rs), tol=tol)
        assert np.array_equal(host(t), host(general([cv2.cuda_GpuMat(g, r) for r in rs])))
