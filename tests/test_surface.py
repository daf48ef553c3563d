"""The CUDA build's whole Python surface under lazycv: every name exists, each either computes
(fused or through CPU OpenCV) or raises cv2.error naming lazycv — never an AttributeError."""
import warnings

import cv2
import numpy as np
import pytest

import lazycv
from lazycv.facade import cuda_names
from lazycv.ops import fallback


@pytest.mark.sim
def test_every_cuda_build_name_exists():
    missing = sorted(n for n in cuda_names.cuda_names() if not hasattr(cv2.cuda, n))
    assert missing == []
    assert sorted(n for n in cuda_names.codec_names() if not hasattr(cv2.cudacodec, n)) == []
    for cls in cuda_names.CLASSES:
        assert getattr(cv2, f"cuda_{cls}") is getattr(cv2.cuda, cls)
    assert cv2.cuda.ALPHA_XOR == 4 and cv2.cuda.COLOR_BayerGR2BGR_MHT == 259
    assert cv2.cudacodec.H264 == 4 and cv2.cudacodec.ColorFormat_BGRA == 1


def test_names_are_taken_out_again():
    backend = lazycv.backend()
    lazycv.disable()
    assert not hasattr(cv2.cuda, "createCLAHE") and not hasattr(cv2, "cudacodec")
    assert not hasattr(cv2, "cuda_ORB")
    lazycv.enable(backend=backend)
    assert hasattr(cv2.cuda, "createCLAHE") and hasattr(cv2, "cudacodec")


def test_unsupported_raise_cv_error_naming_lazycv_and_why():
    with pytest.raises(cv2.error, match="lazycv.*Brox"):
        cv2.cuda.BroxOpticalFlow_create()
    with pytest.raises(cv2.error, match="lazycv.*NVIDIA"):
        cv2.cuda_NvidiaOpticalFlow_1_0.create((64, 48))
    with pytest.raises(cv2.error, match="lazycv"):
        cv2.cuda.StereoBeliefPropagation()
    with pytest.raises(cv2.error, match="lazycv.*NVIDIA"):
        cv2.cudacodec.RawVideoSource()
    # every name reported unsupported really raises cv2.error when called
    for name, where in lazycv.supported().items():
        if where == "unsupported" and not name.startswith("cudacodec."):
            with pytest.raises(cv2.error, match="lazycv"):
                getattr(cv2.cuda, name)()


def test_supported_is_generated_from_the_registries():
    table = lazycv.supported()
    assert set(table.values()) <= {"fused", "fallback", "unsupported"}
    from lazycv.ops.common import API
    assert all(table[n] == "fused" for n in API)
    assert table["createCLAHE"] == "fallback" and table["ORB_create"] == "fallback"
    assert table["cudacodec.createVideoReader"] == "fallback"
    assert table["BroxOpticalFlow_create"] == "unsupported"
    assert cv2.cuda.getCudaEnabledDeviceCount() == 1


@pytest.mark.sim
def test_fallback_counts_and_warns_once_per_function():
    fallback._warned.discard("CLAHE::apply")
    img = (np.arange(64 * 48) % 251).astype(np.uint8).reshape(48, 64)
    g = cv2.cuda_GpuMat(img)
    clahe = cv2.cuda.createCLAHE()
    lazycv.reset_stats()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        clahe.apply(g, cv2.cuda.Stream_Null())
        clahe.apply(g, cv2.cuda.Stream_Null())
    ours = [w for w in seen if issubclass(w.category, lazycv.FallbackWarning)]
    assert len(ours) == 1 and "CLAHE::apply" in str(ours[0].message)
    assert issubclass(lazycv.FallbackWarning, UserWarning)
    assert lazycv.stats()["fallbacks"] == 2
    assert "FallbackWarning" in lazycv.__all__ and "supported" in lazycv.__all__


# ---------------------------------------------------------------- the GpuMat surface OpenCV's tests use

@pytest.mark.sim
@pytest.mark.parametrize("shape,cn", [((1, 1), 3), ((5, 7), 1), ((5, 7), 3), ((3, 4), 4)])
def test_copy_to_with_a_mask_of_the_images_channels(shape, cn):
    from tests.conftest import assert_fused_equals_eager, run_both
    rng = np.random.default_rng(cn)
    src = rng.integers(0, 255, shape + (cn,), dtype=np.uint8)
    old = rng.integers(0, 255, shape + (cn,), dtype=np.uint8)
    mask = (rng.random(shape + (cn,)) > 0.5).astype(np.uint8)

    def masked_copy():
        dst = cv2.cuda_GpuMat(old)
        cv2.cuda_GpuMat(src).copyTo(cv2.cuda_GpuMat(mask), dst)
        return dst.download()
    fused, eager = run_both(masked_copy)
    assert_fused_equals_eager(fused, eager)
    ref = old.copy()
    cv2.copyTo(src, mask, ref)                        # CPU OpenCV: a mask of the image's channels
    np.testing.assert_array_equal(fused.reshape(ref.shape), ref)


def test_copy_to_mask_of_other_channels_is_an_error():
    src = cv2.cuda_GpuMat(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(cv2.error, match="CV_8UC1 or CV_8UC3"):
        src.copyTo(cv2.cuda_GpuMat(np.zeros((4, 4, 2), np.uint8)), cv2.cuda_GpuMat())


@pytest.mark.parametrize("cn", [5, 6, 16])
def test_gpumats_of_more_than_4_channels(cn):
    rng = np.random.default_rng(cn)
    a = rng.integers(0, 255, (5, 7, cn), dtype=np.uint8)
    g = cv2.cuda_GpuMat(a)
    assert g.type() == cv2.CV_8UC(cn) and g.channels() == cn and g.size() == (7, 5)
    np.testing.assert_array_equal(g.download(), a)
    f = g.convertTo(cv2.CV_32FC(cn), alpha=0.5, beta=1.0)
    assert f.type() == cv2.CV_32FC(cn)
    np.testing.assert_array_equal(f.download(), a.astype(np.float32) * np.float32(0.5) + np.float32(1))
    np.testing.assert_array_equal(np.from_dlpack(g), a)
    back = cv2.cuda_GpuMat.from_dlpack(a)
    assert back.type() == cv2.CV_8UC(cn)
    np.testing.assert_array_equal(back.download(), a)
    assert cv2.cuda_GpuMat(3, 2, cv2.CV_16SC(cn)).channels() == cn


@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (4, 3, 2), (3, 5, 4)])
def test_gpumats_of_cv_16f(shape):
    rng = np.random.default_rng(len(shape))
    h = (rng.random(shape) * 100 - 50).astype(np.float16)
    g = cv2.cuda_GpuMat(h)
    cn = shape[2] if len(shape) == 3 else 1
    assert g.type() == cv2.CV_MAKETYPE(cv2.CV_16F, cn) and g.depth() == cv2.CV_16F
    np.testing.assert_array_equal(g.download(), h)
    as32 = g.convertTo(cv2.CV_32F)
    np.testing.assert_array_equal(as32.download(), h.astype(np.float32))
    as8 = g.convertTo(cv2.CV_8U, 2.0, 60.0)
    np.testing.assert_array_equal(as8.download(),
                                  np.clip(np.rint(h.astype(np.float32) * 2 + 60), 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(as32.convertTo(cv2.CV_16F).download(), h)
    np.testing.assert_array_equal(g.clone().download(), h)
    np.testing.assert_array_equal(np.from_dlpack(g), h)
    np.testing.assert_array_equal(cv2.cuda_GpuMat.from_dlpack(h).download(), h)
    assert cv2.cuda_GpuMat(2, 3, cv2.CV_16FC3).type() == cv2.CV_16FC3
