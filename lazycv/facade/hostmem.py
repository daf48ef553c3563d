"""``cv2.cuda.HostMem`` and page-locking: host buffers the GPU can copy from asynchronously.

On the cuda backend the memory is page-locked (pinned); on the CPU backend and the simulator it
is ordinary memory, since nothing copies asynchronously there."""
import cv2
import numpy as np

from .. import runtime
from .._types import DEPTH_DTYPE, DTYPE_DEPTH, host_shape, make_type, split_type
from ..errors import (StsBadArg, StsNullPtr, StsUnsupportedFormat, binding_call, binding_class, binding_keywords,
                      cv_error)
from ..ops.common import int_arg, size_arg
from ..runtime import STATE

PAGE_LOCKED, SHARED, WRITE_COMBINED = 1, 2, 4
_registered = {}


def _pinned(shape, dtype):
    if STATE.backend_name == "cuda":
        return runtime.backend().pinned(shape, dtype)      # (recycled page-locked memory)
    return np.empty(shape, dtype)


@binding_class
class HostMem:
    """HostMem(), HostMem(rows, cols, type[, alloc_type]), HostMem(size, type[, alloc_type]),
    HostMem(arr[, alloc_type])."""
    PAGE_LOCKED, SHARED, WRITE_COMBINED = PAGE_LOCKED, SHARED, WRITE_COMBINED

    @binding_keywords("rows", "cols", "type", "size", "arr", "alloc_type", most=4)
    def __init__(self, *args, **kw):
        self._arr = None
        self._released = False
        shape, dtype, arr = self._parse(args, kw)
        if shape is not None:
            self._arr = _pinned(shape, dtype)
            if arr is not None:
                self._arr[...] = arr.reshape(shape)

    def _parse(self, args, kw):
        """(shape, dtype, source array or None) of the constructor's arguments — (None, None,
        None) for an empty HostMem — and ``alloc_type`` set; nothing allocated."""
        self.alloc_type = kw.pop("alloc_type", PAGE_LOCKED)
        args = list(args)
        if len(args) == 1 and isinstance(args[0], (int, np.integer)):
            self.alloc_type = args.pop()                 # HostMem(alloc_type)
        arr = kw.pop("arr", None)
        if arr is None and args and isinstance(args[0], np.ndarray):
            arr = args.pop(0)
        if arr is not None:
            if args:
                self.alloc_type = args.pop(0)
            self.alloc_type = _alloc_type(self.alloc_type)
            from .gpumat import host_array_info
            rows, cols, depth, cn, _ = host_array_info("HostMem", arr)   # a 1-D array is a column
            return host_shape(rows, cols, cn), arr.dtype, arr
        size = kw.pop("size", None)
        if size is None and args and isinstance(args[0], (tuple, list)):
            size = args.pop(0)
        if size is not None:
            cols, rows = size_arg("HostMem", size, "size")
        else:
            rows = kw.pop("rows", args.pop(0) if args else None)
            cols = kw.pop("cols", args.pop(0) if args else None)
        typ = kw.pop("type", args.pop(0) if args else None)
        if args:
            self.alloc_type = args.pop(0)
        self.alloc_type = _alloc_type(self.alloc_type)
        if rows is None:
            return None, None, None
        rows, cols = int_arg("HostMem", rows, "rows"), int_arg("HostMem", cols, "cols")
        dc = split_type(typ) if isinstance(typ, (int, np.integer)) else None
        if dc is None:
            raise cv_error("HostMem", f"unsupported type {typ!r}", StsUnsupportedFormat)
        if rows < 0 or cols < 0:
            raise cv_error("HostMem", f"rows and cols must be >= 0, got {rows}x{cols}", StsBadArg)
        depth, cn = dc
        return host_shape(rows, cols, cn), DEPTH_DTYPE[depth], None

    def _live(self, func):
        if self._released:
            raise cv_error(f"HostMem::{func}", "the HostMem was released", StsNullPtr)
        if self._arr is None:
            raise cv_error(f"HostMem::{func}", "the HostMem is empty", StsBadArg)
        return self._arr

    def createMatHeader(self):
        """A numpy array over the page-locked memory (no copy)."""
        return self._live("createMatHeader")

    def createGpuMatHeader(self):
        raise cv_error("HostMem::createGpuMatHeader", "mapped (SHARED) host memory is not supported; "
                       "upload() the header instead", StsBadArg)

    def empty(self):
        return self._arr is None or self._released

    def size(self):
        if self.empty():
            return (0, 0)
        return (self._arr.shape[1], self._arr.shape[0])

    # An empty (or released) HostMem answers what OpenCV's empty flags give: CV_8UC1.
    def type(self):
        return make_type(self.depth(), self.channels())

    def channels(self):
        return 1 if self.empty() or self._arr.ndim == 2 else self._arr.shape[2]

    def depth(self):
        return cv2.CV_8U if self.empty() else DTYPE_DEPTH[self._arr.dtype]

    def elemSize(self):
        return self.elemSize1() * self.channels()

    @property
    def step(self):
        return 0 if self.empty() else self._arr.strides[0]

    def isContinuous(self):
        return True

    def elemSize1(self):
        return 1 if self.empty() else self._arr.itemsize

    def step1(self):
        return 0 if self.empty() else self._arr.strides[0] // self._arr.itemsize

    def create(self, *args):
        """create(rows, cols, type) / create(size, type): new memory unless it already fits."""
        # (sizes compared before anything is allocated: page-locking costs milliseconds, and a
        # loop calls create on the same HostMem every frame)
        alloc_type = self.alloc_type
        shape, dtype, arr = self._parse(args, {"alloc_type": alloc_type})
        self.alloc_type = alloc_type
        if not self.empty() and shape is not None and self._arr.shape == shape and self._arr.dtype == dtype:
            return
        self._arr, self._released = (None if shape is None else _pinned(shape, dtype)), False

    def clone(self):
        return HostMem(self._live("clone"), alloc_type=self.alloc_type)

    def reshape(self, cn, rows=0):
        """The same memory seen with another channel count (and row count)."""
        a = self._live("reshape")
        cn = cn or (1 if a.ndim == 2 else a.shape[2])
        total = a.size
        rows = rows or a.shape[0]
        if total % (rows * cn):
            raise cv_error("HostMem::reshape", f"{total} elements cannot be seen as {rows} rows of "
                                               f"{cn}-channel pixels", StsBadArg)
        out = HostMem(alloc_type=self.alloc_type)
        cols = total // (rows * cn)
        out._arr = a.reshape(host_shape(rows, cols, cn))
        return out

    def swap(self, other):
        self._arr, other._arr = other._arr, self._arr
        self._released, other._released = other._released, self._released
        self.alloc_type, other.alloc_type = other.alloc_type, self.alloc_type

    def release(self):
        self._arr = None
        self._released = True


def _alloc_type(t):
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or int(t) not in (PAGE_LOCKED, SHARED,
                                                                                   WRITE_COMBINED):
        raise cv_error("HostMem", f"alloc_type must be HostMem_PAGE_LOCKED, HostMem_SHARED or "
                                  f"HostMem_WRITE_COMBINED, got {t!r}", StsBadArg)
    return int(t)


def registerPageLocked(m):
    """Page-lock an existing numpy array so uploads from it can be asynchronous."""
    if not isinstance(m, np.ndarray):
        raise cv_error("registerPageLocked", f"expected a numpy.ndarray, got {type(m).__name__}", StsBadArg)
    if not m.flags.c_contiguous:
        raise cv_error("registerPageLocked", "the array must be continuous (m.isContinuous())", StsBadArg)
    if STATE.backend_name == "cuda":
        ctx = runtime.backend().cuda.current_context()
        _registered[id(m)] = ctx.mempin(m, m.ctypes.data, m.nbytes)
    else:
        _registered[id(m)] = True


def unregisterPageLocked(m):
    _registered.pop(id(m), None)


API = {"HostMem": HostMem, "registerPageLocked": binding_call(registerPageLocked, "registerPageLocked"),
       "unregisterPageLocked": binding_call(unregisterPageLocked, "unregisterPageLocked")}
