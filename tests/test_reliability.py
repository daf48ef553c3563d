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
