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
