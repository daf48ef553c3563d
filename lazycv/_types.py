"""OpenCV type codes, derived from cv2's own constants so 4.x and 5.x both work.

OpenCV 5 shifts the channel count differently from 4.x (CV_32FC3 is 69 in 5.x, 21 in 4.x), so
nothing here hard-codes a shift: every table is built from ``cv2.CV_MAKETYPE``.
"""
import cv2
import numpy as np

MAX_CHANNELS = 4      # what the ops compute on (OpenCV's CUDA functions take 1 to 4 channels)
# what a GpuMat holds: OpenCV's CV_CN_MAX, from its 12-bit type code (512 channels in 4.x, 128 in 5.x)
CN_MAX = 4096 // int(cv2.CV_MAKETYPE(cv2.CV_8U, 2))

DEPTH_DTYPE = {
    cv2.CV_8U: np.dtype(np.uint8),
    cv2.CV_8S: np.dtype(np.int8),
    cv2.CV_16U: np.dtype(np.uint16),
    cv2.CV_16S: np.dtype(np.int16),
    cv2.CV_32S: np.dtype(np.int32),
    cv2.CV_32F: np.dtype(np.float32),
    cv2.CV_64F: np.dtype(np.float64),
    cv2.CV_16F: np.dtype(np.float16),      # (storage: upload, download, convertTo, copies, DLPack)
}
DTYPE_DEPTH = {dt: d for d, dt in DEPTH_DTYPE.items()}
DEPTH_NAME = {cv2.CV_8U: "CV_8U", cv2.CV_8S: "CV_8S", cv2.CV_16U: "CV_16U", cv2.CV_16S: "CV_16S",
              cv2.CV_32S: "CV_32S", cv2.CV_32F: "CV_32F", cv2.CV_64F: "CV_64F", cv2.CV_16F: "CV_16F"}
FLOAT_DEPTHS = frozenset((cv2.CV_32F, cv2.CV_64F, cv2.CV_16F))

# Saturation range of each integer depth.
DEPTH_RANGE = {d: (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
               for d, dt in DEPTH_DTYPE.items() if dt.kind in "iu"}
# The value an alpha channel gets when cvtColor adds one (OpenCV's ColorChannel<T>::max()).
DEPTH_ALPHA = {cv2.CV_8U: 255, cv2.CV_16U: 65535, cv2.CV_32F: 1.0, cv2.CV_64F: 1.0}

_TYPE_TABLE = {}
for _d in DEPTH_DTYPE:
    for _cn in range(1, CN_MAX + 1):
        _TYPE_TABLE[int(cv2.CV_MAKETYPE(_d, _cn))] = (_d, _cn)
_MAKE = {v: k for k, v in _TYPE_TABLE.items()}


def make_type(depth, cn):
    """Type code for (depth, channels), as cv2.CV_MAKETYPE gives it."""
    return _MAKE[(depth, cn)]


def split_type(type_code):
    """(depth, channels) of a type code, or None when lazycv does not know it."""
    return _TYPE_TABLE.get(int(type_code))


def type_name(type_code):
    dc = split_type(type_code)
    if dc is None:
        return f"type {type_code}"
    return f"{DEPTH_NAME[dc[0]]}C{dc[1]}"


def host_shape(rows, cols, cn):
    """The numpy shape of a rows x cols image of ``cn`` channels, as cv2 gives it: 2-D for one."""
    return (rows, cols) if cn == 1 else (rows, cols, cn)


def is_float(depth):
    return depth in FLOAT_DEPTHS
