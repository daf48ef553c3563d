"""Layer 3: user ops (@lazycv.op, @lazycv.gather_op) fuse with the built-ins on every backend,
equal the built-ins they re-implement, and fail early with errors naming the op."""
import contextlib
import math

import cv2
import numpy as np
import pytest

import lazycv

from .conftest import SIM, assert_close, assert_fused_equals_eager, rand_image, run_both, upload

# ---------------------------------------------------------------- ops used by several tests


@lazycv.op
def swap_rb(b, g, r):
    """BGR <-> RGB: the built-in cvtColor(COLOR_BGR2RGB), written as a user op."""
    return r, g, b


@lazycv.op(inputs=2, per_channel=True)
def absdiff_op(a, b):
    """The built-in cv2.cuda.absdiff, written as a user op."""
    return abs(a - b)


@lazycv.op(out_depth=cv2.CV_32F, param_types=(float,))
def luma(b, g, r, gain):
    return gain * (np.float32(0.114) * b + np.float32(0.587) * g + np.float32(0.299) * r)


@lazycv.op(out_depth=np.uint8, param_types=(float, float))
def affine8(v, a, c):
    """A float result stored to 8U: round half to even, then saturate."""
    return v * a + c


@lazycv.op(inputs=2, out_depth=cv2.CV_8U, param_types=(float,))
def blend_mask(b, g, r, m, alpha):
    """Two inputs of different channel counts: BGR and a 1-channel mask -> 1 channel."""
    k = alpha if m > 127 else 1.0 - alpha
    return k * (b + g + r) / 3.0


@lazycv.gather_op(name="mirror")
def mirror(y, x, h, w):
    return y, w - 1 - x


@lazycv.gather_op(name="nearest", param_types=(float, float))
def nearest(y, x, h, w, sy, sx):
    """cv2.cuda.resize INTER_NEAREST, written as a gather op."""
    return min(int(math.floor(y * sy)), h - 1), min(int(math.floor(x * sx)), w - 1)


def _box_pixel(a, b, c, d):
    return (a + b + c + d) / 4.0


@lazycv.gather_op(name="box2", footprint=((0, 0), (0, 1), (1, 0), (1, 1)), pixel=_box_pixel,
                  out_size=lambda h, w: (w // 2, h // 2))
def box2(y, x, h, w):
    """2x2 mean downsample of a 1-channel image."""
    return 2 * y, 2 * x


@lazycv.gather_op(name="shift", border="constant", border_value=7, param_types=(int, int))
def shift(y, x, h, w, dy, dx):
    return y - dy, x - dx


def _size(h, w):
    return (h, w) if not SIM else (min(h, 7), min(w, 9))


# ---------------------------------------------------------------- built-ins re-implemented


@pytest.mark.sim
def test_swap_equals_builtin_cvtcolor_and_fuses_with_resize(rng):
    h, w = _size(24, 31)
    img = rand_image(rng, h, w, 3, np.uint8)
    g = upload(img)
    theirs = cv2.cuda.resize(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2RGB), (w // 2, h // 2)).download()
    mine = cv2.cuda.resize(swap_rb(g), (w // 2, h // 2))
    assert "1 kernel(s)" in lazycv.explain(mine) and "swap_rb" in lazycv.explain(mine)
    lazycv.reset_stats()
    a = mine.download()
    assert lazycv.stats()["kernels_launched"] == 1
    np.testing.assert_array_equal(a, theirs)
    np.testing.assert_array_equal(a, cv2.resize(cv2.cvtColor(img, cv2.COLOR_BGR2RGB), (w // 2, h // 2)))


@pytest.mark.sim
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_per_channel_absdiff_equals_builtin(rng, dtype):
    h, w = _size(13, 17)
    a, b = rand_image(rng, h, w, 3, dtype), rand_image(rng, h, w, 3, dtype)
    ga, gb = upload(a), upload(b)
    got = absdiff_op(ga, gb).download()
    np.testing.assert_array_equal(got, cv2.cuda.absdiff(ga, gb).download())
    np.testing.assert_array_equal(got, cv2.absdiff(a, b))


@pytest.mark.sim
def test_gather_nearest_equals_builtin_resize(rng):
    h, w = _size(23, 29)
    dw, dh = (11, 9) if not SIM else (5, 4)
    img = rand_image(rng, h, w, 3, np.uint8)
    g = upload(img)
    mine = nearest(g, 1.0 / (dh / h), 1.0 / (dw / w), dsize=(dw, dh))
    assert mine.size() == (dw, dh)
    np.testing.assert_array_equal(mine.download(),
                                  cv2.cuda.resize(g, (dw, dh), interpolation=cv2.INTER_NEAREST).download())
    np.testing.assert_array_equal(mine.download(), cv2.resize(img, (dw, dh), interpolation=cv2.INTER_NEAREST))


# ---------------------------------------------------------------- numerics and fusion


@pytest.mark.sim
def test_float_op_with_parameter_fuses_and_a_new_value_does_not_recompile(rng):
    h, w = _size(16, 20)
    img = rand_image(rng, h, w, 3, np.uint8)
    g = upload(img)
    # a built-in before the user op and one after it
    y = cv2.cuda.multiply(luma(cv2.cuda.cvtColor(g, cv2.COLOR_RGB2BGR), 0.5), 2.0)
    assert y.type() == cv2.CV_32FC1
    lazycv.reset_stats()
    got = y.download()
    assert lazycv.stats()["kernels_launched"] == 1
    f = img[..., ::-1].astype(np.float64)
    ref = 0.5 * (0.114 * f[..., 0] + 0.587 * f[..., 1] + 0.299 * f[..., 2]) * 2
    assert_close(got, ref.astype(np.float32), 1e-3, rel=1e-5)
    compiles = lazycv.stats()["compiles"]
    got2 = cv2.cuda.multiply(luma(cv2.cuda.cvtColor(g, cv2.COLOR_RGB2BGR), 0.25), 2.0).download()
    assert lazycv.stats()["compiles"] == compiles
    assert_close(got2, (ref / 2).astype(np.float32), 1e-3, rel=1e-5)


@pytest.mark.sim
def test_integer_output_rounds_half_to_even_and_saturates():
    v = np.array([[0, 1, 2, 3, 4, 5, 100, 200, 250, 255]], np.uint8)
    g = upload(v)
    got = affine8(g, 0.5, 0.0).download()                  # x.5 -> even
    np.testing.assert_array_equal(got, np.rint(v * 0.5).astype(np.uint8))
    got = affine8(g, 2.0, -10.0).download()                # below 0 and above 255 saturate
    np.testing.assert_array_equal(got, np.clip(v * 2.0 - 10, 0, 255).astype(np.uint8))


@pytest.mark.sim
def test_two_inputs_with_different_channel_counts(rng):
    h, w = _size(12, 15)
    img = rand_image(rng, h, w, 3, np.uint8)
    mask = rand_image(rng, h, w, 1, np.uint8)
    got = blend_mask(upload(img), upload(mask), 0.75).download()
    s = img.astype(np.float64).sum(axis=2) / 3.0
    ref = np.where(mask > 127, 0.75 * s, 0.25 * s)
    assert got.dtype == np.uint8 and got.shape == (h, w)
    assert_close(got, np.clip(np.rint(ref), 0, 255).astype(np.uint8), 1)


@pytest.mark.sim
def test_gather_ops_fuse_with_builtins_and_match_cpu_opencv(rng):
    h, w = _size(14, 18)
    h, w = h - h % 2, w - w % 2
    img = rand_image(rng, h, w, 3, np.uint8)
    g = upload(img)
    out = mirror(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY)).convertTo(cv2.CV_32F, alpha=1 / 255)
    assert "1 kernel(s)" in lazycv.explain(out)
    ref = cv2.flip(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), 1).astype(np.float32) * np.float32(1 / 255)
    assert_close(out.download(), ref, 1e-6)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    small = box2(upload(gray))
    assert small.size() == (w // 2, h // 2)
    ref = cv2.resize(gray, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    assert_close(small.download(), ref, 1)
    shifted = shift(g, 2, -3).download()
    ref = np.full_like(img, 7)
    ref[2:, :w - 3] = img[:h - 2, 3:]
    np.testing.assert_array_equal(shifted, ref)


def test_user_ops_fused_equal_eager(rng):
    img = rand_image(rng, 37, 41, 3, np.uint8)
    mask = rand_image(rng, 37, 41, 1, np.uint8)

    def chain():
        g, m = upload(img), upload(mask)
        r = cv2.cuda.resize(swap_rb(g), (20, 18))
        d = absdiff_op(r, mirror(r))
        b = blend_mask(cv2.cuda.resize(g, (20, 18)), cv2.cuda.resize(m, (20, 18)), 0.3)
        return [d.download(), b.download(), luma(d, 2.0).download()]
    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)


def _neg_plus(a):
    return -a + 1


neg_plus = lazycv.op(_neg_plus, name="neg_plus", out_depth=cv2.CV_32F)


@pytest.mark.sim
def test_a_user_op_sees_a_fused_input_as_its_stored_type():
    """A user op reads a fused producer's value as the producer's element type, as it would
    from memory: exp of a large int32 saturates to INT_MIN, and ``-a + 1`` of an int32 INT_MIN
    is what int32 arithmetic gives, fused as eager (the long fuzz run found them differing)."""
    img = np.array([[800968025, -3, 2, 20]], np.int32)

    def chain():
        return [neg_plus(cv2.cuda.exp(upload(img))).download()]
    fused, eager = run_both(chain)
    assert_fused_equals_eager(fused, eager)


def test_gather_multi_tap_is_cut_like_a_resize(rng):
    g = upload(rand_image(rng, 20, 24, 1, np.uint8))
    text = lazycv.explain(box2(box2(g)))
    assert "2 kernel(s)" in text               # 4 taps of 4 taps: written once, like resize(resize())


# ---------------------------------------------------------------- identity of compiled kernels


def _scaled(k):
    @lazycv.op(name="scaled")
    def f(v):
        return v * k
    return f


def test_same_name_different_functions_never_share_a_kernel(rng):
    v = rand_image(rng, 6, 8, 1, np.uint8) // 8
    g = upload(v)
    two, three = _scaled(2), _scaled(3)
    both = cv2.cuda.add(two(g), three(g))               # both functions in one kernel
    np.testing.assert_array_equal(both.download(), (v.astype(int) * 5).astype(np.uint8))
    np.testing.assert_array_equal(two(g).download(), v * 2)
    compiles = lazycv.stats()["compiles"]
    again = _scaled(2)                                  # the same definition again: cached kernel
    np.testing.assert_array_equal(again(g).download(), v * 2)
    assert lazycv.stats()["compiles"] == compiles


# ---------------------------------------------------------------- errors


@contextlib.contextmanager
def _raises(*words):
    """A cv2.error whose text contains every word (the op's name among them)."""
    with pytest.raises(cv2.error) as ei:
        yield
    text = str(ei.value)
    for w in words:
        assert w in text, f"{w!r} not in {text!r}"


@pytest.mark.sim
def test_bad_definitions_fail_at_definition_naming_the_op():
    with _raises("'bad1'", 'out_depth'):
        lazycv.op(lambda v: v, name="bad1", out_depth="complex64")
    with _raises("'bad2'", 'out_channels'):
        lazycv.op(lambda v: v, name="bad2", out_channels=5)
    with _raises("'bad3'", 'positional'):
        @lazycv.op(name="bad3")
        def f(*vals):
            return vals[0]
    with _raises("'bad4'", '3 input channel'):
        lazycv.op(lambda b, g: b, name="bad4", in_channels=3)
    with _raises("'bad5'", 'per_channel'):
        lazycv.op(lambda a: a, name="bad5", per_channel=True, out_channels=1)
    with _raises('needs a name'):
        lazycv.op(lambda v: v)
    with _raises("'bad6'", 'footprint'):
        lazycv.gather_op(lambda y, x, h, w: (y, x), name="bad6", footprint=[(0, 0.5)])
    with _raises("'bad7'", 'pixel function'):
        lazycv.gather_op(lambda y, x, h, w: (y, x), name="bad7", footprint=[(0, 0), (0, 1)])
    with _raises("'bad8'", 'border'):
        lazycv.gather_op(lambda y, x, h, w: (y, x), name="bad8", border="wrap")
    with _raises("'bad9'", '(y, x, h, w'):
        lazycv.gather_op(lambda y, x: (y, x), name="bad9")
    with _raises("'bad10'", 'param_types'):
        lazycv.op(lambda v, k: v, name="bad10", in_channels=1, param_types=(float, float))


@lazycv.op
def uses_undefined(v):
    return v + not_defined_anywhere  # noqa: F821


@lazycv.op
def returns_array(v):
    return np.zeros(3)


@lazycv.op(out_channels=3)
def one_value(v):
    return v


@pytest.mark.sim
def test_bad_calls_fail_at_the_call_naming_the_op_and_leave_the_graph_valid(rng):
    img = rand_image(rng, 5, 6, 3, np.uint8)
    g = upload(img)
    pending = cv2.cuda.cvtColor(g, cv2.COLOR_BGR2RGB)
    with _raises('swap_rb', '3 argument', '4 channel'):
        swap_rb(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2BGRA))
    with _raises('uses_undefined', 'does not compile', 'not_defined_anywhere'):
        uses_undefined(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY))
    with _raises('returns_array', 'must return a number'):
        returns_array(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY))
    with _raises('one_value', 'out_channels=3'):
        one_value(cv2.cuda.cvtColor(g, cv2.COLOR_BGR2GRAY))
    with _raises('luma', 'parameter'):
        luma(g, 1.0, 2.0)
    with _raises('luma', 'parameter'):
        luma(g)
    with _raises('luma', 'number'):
        luma(g, "1")
    with _raises('absdiff_op', 'sizes'):
        absdiff_op(g, upload(img[:4]))
    with _raises('mirror', 'GpuMat'):
        mirror(img)
    with _raises('nearest', 'output size'):
        nearest(g, 1.0, 1.0, dsize=(0, 3))
    np.testing.assert_array_equal(pending.download(), cv2.cvtColor(img, cv2.COLOR_BGR2RGB))


def test_user_op_in_explain_and_as_compose_step(rng):
    img = rand_image(rng, 10, 12, 3, np.uint8)
    p = lazycv.compose(lazycv.resize((6, 5)), swap_rb, luma.step(2.0), lazycv.write())
    text = p.explain(img)
    assert "1 kernel(s)" in text and "swap_rb" in text and "luma" in text
    got = p(img)
    ref = luma(swap_rb(cv2.cuda.resize(upload(img), (6, 5))), 2.0).download()
    np.testing.assert_array_equal(got, ref)


_DISK_CACHE_CHILD = r'''
import sys
import cv2, numpy as np, lazycv
import opcfg
lazycv.enable(backend="cpu")
SCALE = 2


@lazycv.op
def scaled(v):
    return v * opcfg.GAIN + SCALE


SCALE = int(sys.argv[1])              # changed after the decorator ran, before the first call
g = cv2.cuda_GpuMat()
g.upload(np.arange(4, dtype=np.uint8).reshape(1, 4))
print([int(v) for v in scaled(g).download().ravel()])
'''


def test_a_kernel_cached_on_disk_is_never_served_for_an_edited_module_or_global(tmp_path):
    """A user op reading a constant through a module (cfg.GAIN) or a global changed after the
    decorator: the next process, with other values, must not load the kernel compiled for the
    old ones from the disk cache."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, LAZYCV_CACHE_DIR=str(tmp_path / "kernels"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()] + sys.path))
    (tmp_path / "child.py").write_text(_DISK_CACHE_CHILD)

    def run(gain, scale):
        (tmp_path / "opcfg.py").write_text(f"GAIN = {gain}\n")
        for stale in (tmp_path / "__pycache__").glob("opcfg*"):
            stale.unlink()
        p = subprocess.run([sys.executable, str(tmp_path / "child.py"), str(scale)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return p.stdout.strip().splitlines()[-1]
    assert run(2, 2) == str([x * 2 + 2 for x in range(4)])
    assert run(3, 2) == str([x * 3 + 2 for x in range(4)])       # the module edited
    assert run(3, 5) == str([x * 3 + 5 for x in range(4)])       # the global set after the decorator
    assert run(3, 2) == str([x * 3 + 2 for x in range(4)])


def test_parameters_by_name_and_integer_parameters_checked_at_the_call(rng):
    a = rand_image(rng, 5, 6, 1, np.uint8)
    g = upload(a)

    @lazycv.op(per_channel=True, param_types=(float, float))
    def contrast(v, gain, pivot=128.0):
        return (v - pivot) * gain + pivot
    want = np.clip(np.rint((a.astype(np.float64) - 100.0) * 1.5 + 100.0), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(contrast(g, 1.5, pivot=100.0).download(), want)
    np.testing.assert_array_equal(contrast(g, gain=1.5, pivot=100.0).download(), want)
    got = lazycv.compose(contrast.step(1.5, pivot=100.0), lazycv.write())(a)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(cv2.error, match="no parameter 'piv'"):
        contrast(g, 1.5, piv=100.0)
    with pytest.raises(cv2.error, match="given twice"):
        contrast(g, 1.5, gain=2.0)

    @lazycv.op(per_channel=True, param_types=(int,))
    def addi(v, k):
        return v + k
    with pytest.raises(cv2.error, match="integer parameter"):
        addi(g, 2.7)
    with pytest.raises(cv2.error, match="64-bit"):
        addi(g, 2 ** 70)
    np.testing.assert_array_equal(addi(g, 3.0).download(), cv2.add(a, 3))     # an integral float
