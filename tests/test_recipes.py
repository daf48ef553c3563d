"""Recipes (lazycv/recipes.py): a call made again from its argument signature records the same
nodes as the op's full path, reads the new arguments' data, and is never used for a call that
did more than record (a flush, a copy, a write into an argument)."""
import cv2
import numpy as np
import pytest

import lazycv
from lazycv import recipes

from .conftest import assert_close, rand_image, upload


@pytest.fixture(autouse=True)
def checked(monkeypatch):
    """Every replay in these tests runs the full path beside it and compares the nodes."""
    monkeypatch.setattr(recipes, "ENABLED", True)
    monkeypatch.setattr(recipes, "CHECK", True)
    recipes.forget()
    yield
    recipes.forget()


def _replayed(fn):
    return [k for k, v in recipes._RECIPES.items() if k[0] is fn and isinstance(v, recipes.Recipe)]


CALLS = {
    "add scalar": (lambda a, b, m: cv2.cuda.add(a, (3, 4, 5)), lambda a, b, m: cv2.add(a, (3, 4, 5, 0))),
    "subtract images": (lambda a, b, m: cv2.cuda.subtract(a, b), lambda a, b, m: cv2.subtract(a, b)),
    "multiply scale": (lambda a, b, m: cv2.cuda.multiply(a, b, scale=0.5),
                       lambda a, b, m: cv2.multiply(a, b, scale=0.5)),
    "divide by number": (lambda a, b, m: cv2.cuda.divide(a, 3.0),
                         lambda a, b, m: cv2.divide(a, (3.0, 3.0, 3.0, 0.0))),
    "absdiff": (lambda a, b, m: cv2.cuda.absdiff(a, b), lambda a, b, m: cv2.absdiff(a, b)),
    "add mask": (lambda a, b, m: cv2.cuda.add(a, b, mask=m), None),
    "cvtColor": (lambda a, b, m: cv2.cuda.cvtColor(a, cv2.COLOR_BGR2GRAY),
                 lambda a, b, m: cv2.cvtColor(a, cv2.COLOR_BGR2GRAY)),
    "resize": (lambda a, b, m: cv2.cuda.resize(a, (7, 5), interpolation=cv2.INTER_LINEAR),
               lambda a, b, m: cv2.resize(a, (7, 5), interpolation=cv2.INTER_LINEAR)),
    "convertTo": (lambda a, b, m: a.convertTo(cv2.CV_32FC3, alpha=1 / 255, beta=0.5),
                  lambda a, b, m: a.astype(np.float32) * np.float32(1 / 255) + np.float32(0.5)),
    "split": (lambda a, b, m: cv2.cuda.split(a), lambda a, b, m: list(cv2.split(a))),
    "threshold": (lambda a, b, m: cv2.cuda.threshold(a, 100, 255, cv2.THRESH_BINARY)[1],
                  lambda a, b, m: cv2.threshold(a, 100, 255, cv2.THRESH_BINARY)[1]),
    "compare": (lambda a, b, m: cv2.cuda.compare(a, b, cv2.CMP_GT),
                lambda a, b, m: cv2.compare(a, b, cv2.CMP_GT)),
    "bitwise_and": (lambda a, b, m: cv2.cuda.bitwise_and(a, b), lambda a, b, m: cv2.bitwise_and(a, b)),
    "flip": (lambda a, b, m: cv2.cuda.flip(a, 1), lambda a, b, m: cv2.flip(a, 1)),
}


def _host(out):
    return [o.download() for o in out] if isinstance(out, (list, tuple)) else out.download()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_replay_equals_the_full_path_and_reads_new_data(name, rng):
    """The first call notes the signature, the second captures, the third replays (checked
    against the full path node by node); each frame's result equals CPU OpenCV's on that
    frame's data."""
    call, ref = CALLS[name]
    mask = upload((rng.random((6, 8)) > 0.5).astype(np.uint8))
    results = []
    for frame in range(3):
        a, b = (rand_image(rng, 6, 8, 3, np.uint8) for _ in range(2))
        out = _host(call(upload(a), upload(b), mask))
        results.append(out)
        if ref is not None:
            want = ref(a, b, mask.download())
            for got, exp in zip(out if isinstance(out, list) else [out], want if isinstance(want, list) else [want]):
                assert_close(got, exp, tol=1 if got.dtype.kind != "f" else 1e-5, what=f"{name} frame {frame}")
    assert recipes._RECIPES, "nothing was captured"
    assert any(isinstance(v, recipes.Recipe) for v in recipes._RECIPES.values()), f"{name}: no recipe kept"
    assert not all(np.array_equal(np.asarray(results[0]), np.asarray(r)) for r in results[1:]), \
        "the frames' results do not differ: the test's data did not change"


def test_a_constant_image_is_read_again_after_setTo():
    """divide(f, std) with std filled by setTo reads the fill as values: a replay must take the
    values std holds now, not the ones of the call that was captured."""
    f = upload(np.full((4, 5, 3), 6.0, np.float32))
    std = cv2.cuda_GpuMat(4, 5, cv2.CV_32FC3)
    got = []
    for s in ((1.0, 2.0, 3.0), (2.0, 4.0, 6.0), (3.0, 3.0, 3.0)):
        std.setTo(s)
        got.append(cv2.cuda.divide(f, std).download()[0, 0].tolist())
    assert got == [[6.0, 3.0, 2.0], [3.0, 1.5, 1.0], [2.0, 2.0, 2.0]]
    assert _replayed(cv2.cuda.divide.__wrapped__)


def test_an_upload_into_the_argument_is_seen(rng):
    g = upload(np.zeros((5, 6), np.uint8))
    for v in (1, 7, 200):
        g.upload(np.full((5, 6), v, np.uint8))
        assert cv2.cuda.add(g, 10).download()[0, 0] == min(v + 10, 255)


def test_aliased_arguments_are_their_own_signature(rng):
    """add(a, a) and add(a, b) of one geometry are different signatures: the replay of one must
    not read a for b."""
    a = upload(np.full((3, 4), 10, np.uint8))
    b = upload(np.full((3, 4), 1, np.uint8))
    for _ in range(2):
        assert cv2.cuda.add(a, a).download()[0, 0] == 20
        assert cv2.cuda.add(a, b).download()[0, 0] == 11
        assert cv2.cuda.add(b, b).download()[0, 0] == 2


def test_a_call_with_dst_is_never_replayed():
    a, b = upload(np.full((3, 4), 5, np.uint8)), upload(np.full((3, 4), 2, np.uint8))
    dst = cv2.cuda_GpuMat(3, 4, cv2.CV_8UC1)
    for k in range(3):
        b.upload(np.full((3, 4), k, np.uint8))
        out = cv2.cuda.add(a, b, dst)
        assert out is dst and dst.download()[0, 0] == 5 + k
    assert not _replayed(cv2.cuda.add.__wrapped__)


def test_a_call_that_downloads_an_argument_is_never_replayed():
    """LUT reads its table's values on the host at the call: a replay would keep the first
    table."""
    src = upload(np.arange(12, dtype=np.uint8).reshape(3, 4))
    for k in (0, 1, 2):
        table = upload(((np.arange(256) + 10 * k) % 256).astype(np.uint8).reshape(1, 256))
        lut = cv2.cuda.createLookUpTable(table) if hasattr(cv2.cuda, "createLookUpTable") else None
        if lut is None:
            pytest.skip("no createLookUpTable")
        assert lut.transform(src).download()[0, 1] == (1 + 10 * k) % 256
    assert all(not isinstance(v, recipes.Recipe) or k[0].__name__ != "createLookUpTable"
               for k, v in recipes._RECIPES.items())


def test_settings_forget_the_recipes():
    a = upload(np.full((3, 4, 3), 7, np.uint8))
    cv2.cuda.cvtColor(a, cv2.COLOR_BGR2RGB)
    cv2.cuda.cvtColor(a, cv2.COLOR_BGR2RGB)
    assert recipes._RECIPES
    with lazycv.enabled(backend=lazycv.backend(), fuse=False):
        assert not recipes._RECIPES
        assert cv2.cuda.cvtColor(a, cv2.COLOR_BGR2RGB).download()[0, 0].tolist() == [7, 7, 7]


def test_results_take_the_stream_of_on_stream():
    a = upload(np.full((3, 4), 7, np.uint8))
    s = cv2.cuda.Stream()
    with lazycv.on_stream(s):
        outs = [cv2.cuda.add(a, 1) for _ in range(3)]
    assert all(o._stream is s for o in outs)
    outs = [cv2.cuda.add(a, 1) for _ in range(2)]
    assert all(o._stream is None for o in outs)
    assert [o.download()[0, 0] for o in outs] == [8, 8]


def test_a_bad_argument_still_raises_at_the_call():
    a = upload(np.full((3, 4), 7, np.uint8))
    cv2.cuda.add(a, 1)
    cv2.cuda.add(a, 1)
    with pytest.raises(cv2.error, match="add"):
        cv2.cuda.add(a, upload(np.zeros((2, 2), np.uint8)))
    with pytest.raises(cv2.error):
        cv2.cuda.add(cv2.cuda_GpuMat(), 1)


def test_a_w1_frame_loop_replays_every_call(rng):
    """The six calls of W1 a frame: from the second frame on every call is a replay, and each
    frame equals CPU OpenCV on its own data."""
    from .test_laziness import w1_reference
    mean, std_v = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    std = cv2.cuda_GpuMat(6, 7, cv2.CV_32FC3)
    std.setTo(std_v)
    for frame in range(3):
        host = rand_image(rng, 20, 24, 3, np.uint8)
        g = upload(host)
        roi = cv2.cuda_GpuMat(g, (2, 3, 16, 12))
        r = cv2.cuda.resize(roi, (7, 6), interpolation=cv2.INTER_LINEAR)
        f = cv2.cuda.cvtColor(r, cv2.COLOR_BGR2RGB).convertTo(cv2.CV_32FC3, alpha=1 / 255)
        f = cv2.cuda.divide(cv2.cuda.subtract(f, mean), std)
        planes = [p.download() for p in cv2.cuda.split(f)]
        for got, want in zip(planes, w1_reference(host, (2, 3, 16, 12), (7, 6))):
            assert_close(got, want, tol=1e-5, what=f"frame {frame}")
    for fn in (cv2.cuda.resize, cv2.cuda.cvtColor, cv2.cuda.subtract, cv2.cuda.divide, cv2.cuda.split):
        assert _replayed(fn.__wrapped__), fn.__name__


def test_zero_and_negative_zero_are_different_scalars():
    """0.0 == -0.0 as keys, but multiply by -0.0 gives negative zeros: told apart."""
    a = upload(np.full((2, 3), 2.0, np.float32))
    for s in (0.0, -0.0, 0.0, -0.0):
        for got in (cv2.cuda.multiply(a, s).download(), cv2.cuda.multiply(a, (s, s)).download()):
            assert np.signbit(got).all() == (str(s) == "-0.0"), s


def test_a_signature_seen_once_costs_no_capture_and_a_full_table_starts_over(monkeypatch):
    """A scalar that changes every call never repeats a signature: the first sighting is only
    noted (no capture), the second captures; past LIMIT signatures the noted ones start over,
    and the recipes captured before stay (a crop of a new size every frame must not make a
    loop's other calls captured anew)."""
    a = upload(np.full((2, 3), 1.0, np.float32))
    for _ in range(2):
        cv2.cuda.add(a, 3.0)                                        # add's recipe, captured
    captures = []
    real = recipes._capture
    monkeypatch.setattr(recipes, "_capture", lambda *args: captures.append(1) or real(*args))
    monkeypatch.setattr(recipes, "LIMIT", 8)
    outs = [cv2.cuda.multiply(a, 1.0 + k) for k in range(20)]      # twenty signatures, each once
    assert captures == [] and len(recipes._NOTED) <= 8
    assert _replayed(cv2.cuda.add.__wrapped__), "add's recipe was dropped with the noted signatures"
    assert cv2.cuda.add(a, 3.0).download()[0, 0] == 4.0 and captures == []     # replayed, kept
    assert [o.download()[0, 0] for o in outs] == [1.0 + k for k in range(20)]
    for _ in range(3):
        assert cv2.cuda.multiply(a, 0.5).download()[0, 0] == 0.5
    assert captures == [1]                                       # the second sighting
