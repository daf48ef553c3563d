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
