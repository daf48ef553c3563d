"""``cv2.cuda.GpuMat``: a lazy handle that is either memory (a region of an Allocation) or a
pending result (an IR node), and sometimes both (a pending write into its own memory)."""
import functools
import weakref

import cv2
import numpy as np

from .. import recipes, runtime
from .._types import CN_MAX, DEPTH_DTYPE, DTYPE_DEPTH, host_shape, make_type, split_type, type_name
from ..errors import (StsBadArg, StsBadSize, StsOutOfRange, StsUnsupportedFormat, binding_class, binding_keywords,
                      check, cv_error)
from .. import ir
from ..ir import Allocation, Node, PendingWrite, Source, source_bufs
from ..ops.common import int_arg
from ..ops.convert import convert_to
from ..ops.core import copy_to, crop_node, set_to
from ..runtime import STATE
from .interop import device_to_host, host_to_device
from .stream import Stream


def _is_stream(obj):
    return isinstance(obj, Stream)


def _size_arg(func, size):
    try:
        w, h = (int(size[0]), int(size[1]))
    except Exception:
        raise cv_error(func, f"size must be a (width, height) pair, got {size!r}", StsBadArg)
    return w, h


def _rect_arg(func, rect):
    if type(rect) is tuple and len(rect) == 4 and all(type(v) is int for v in rect):
        return rect                      # (the common case: a tuple of ints)
    try:
        x, y, w, h = (int(v) for v in rect)
    except Exception:
        raise cv_error(func, f"roi must be a rect (x, y, width, height), got {rect!r}", StsBadArg)
    return x, y, w, h


def _range_arg(func, rng, total):
    """(start, end) of a cv::Range argument: None or an empty sequence is Range::all(), as in
    OpenCV's binding; lazycv also reads (0, -1) as all."""
    if rng is None or (isinstance(rng, (tuple, list)) and len(rng) == 0):
        return 0, total
    try:
        a, b = int(rng[0]), int(rng[1])
    except Exception:
        raise cv_error(func, f"range must be (start, end), got {rng!r}", StsBadArg)
    if a == 0 and b == -1:       # cv::Range::all()
        return 0, total
    return a, b


def _type_arg(func, t):
    dc = split_type(t) if isinstance(t, (int, np.integer)) else None
    if dc is None:
        raise cv_error(func, f"unsupported type {t!r}: expected a CV_<depth>C<n> code with "
                             f"n <= {CN_MAX} and depth 8U/8S/16U/16S/32S/32F/64F/16F", StsUnsupportedFormat)
    return dc


def host_array_info(func, arr):
    """(rows, cols, depth, cn, 2-D row view) of a numpy image, or a clear error."""
    if not isinstance(arr, np.ndarray):
        raise cv_error(func, f"expected a numpy.ndarray, got {type(arr).__name__}", StsBadArg)
    if arr.ndim == 1:                    # OpenCV: a 1-D array is a column (N rows, 1 column)
        arr = arr.reshape(-1, 1)
    if arr.ndim == 2:
        rows, cols, cn = arr.shape[0], arr.shape[1], 1
    elif arr.ndim == 3 and 1 <= arr.shape[2] <= CN_MAX:
        rows, cols, cn = arr.shape
    else:
        raise cv_error(func, f"expected an array of shape (rows, cols) or (rows, cols, cn<={CN_MAX}), "
                             f"got shape {arr.shape}", StsBadSize)
    depth = DTYPE_DEPTH.get(arr.dtype.newbyteorder("=") if arr.dtype.byteorder not in "=|" else arr.dtype)
    if depth is None or not arr.dtype.isnative:
        raise cv_error(func, f"unsupported dtype {arr.dtype}: expected uint8, int8, uint16, int16, "
                             "int32, float32, float64 or float16", StsUnsupportedFormat)
    if rows == 0 or cols == 0:
        raise cv_error(func, f"empty array of shape {arr.shape}", StsBadSize)
    inner_ok = arr.strides[-1] == arr.itemsize and (arr.ndim == 2 or arr.strides[1] == arr.itemsize * cn)
    if not inner_ok or arr.strides[0] < 0:
        arr = np.ascontiguousarray(arr)        # (a channel-reversed or strided view: cv2 copies too)
    if arr.strides[0] == cols * cn * arr.itemsize or rows == 1:
        rows2d = arr.reshape(rows, cols * cn)
    else:
        rows2d = np.lib.stride_tricks.as_strided(arr, (rows, cols * cn), (arr.strides[0], arr.itemsize))
    return rows, cols, depth, cn, rows2d


def _convert(args, kw, answer):
    """GpuMat.convertTo's call (the runtime lock held; ``answer``: as ops.common.cuda_api's)."""
    return recipes.answered(convert_to, args, kw or {}, GpuMat, answer)     # (lazycv/recipes.py)


@binding_class
class GpuMat:
    """OpenCV's ``cv::cuda::GpuMat`` with lazy results.

    A result of a cv2.cuda call is pending until something needs its data (download, cudaPtr,
    a foreign consumer, a stream sync, ``lazycv.materialize``); its size and type are known
    at once.
    """
    __slots__ = ("_alloc", "_y0", "_x0", "_rows", "_cols", "_depth", "_cn", "_node", "_src",
                 "_parent", "_views", "_stream", "__weakref__")

    Allocator = None

    def __init__(self, *args, **kw):
        self._alloc = None
        self._y0 = self._x0 = 0
        self._rows = self._cols = 0
        self._depth, self._cn = cv2.CV_8U, 1
        self._node = self._src = self._parent = self._views = self._stream = None
        with STATE.lock:
            if not kw and len(args) == 2 and type(args[0]) is GpuMat and type(args[1]) is tuple:
                self._init_from(args[0], args[1], None, None)     # GpuMat(m, roi): a frame loop's crop
            else:
                self._construct(args, kw)

    if recipes.INIT_TYPE is not None:     # GpuMat(m, roi) of memory in C; the rest as above
        __init__ = functools.update_wrapper(recipes.INIT_TYPE(__init__), __init__)

    # ---------------------------------------------------------------- construction
    def _construct(self, args, kw):
        kw = dict(kw)
        kw.pop("allocator", None)
        args = list(args)
        if args and type(args[-1]).__name__.endswith("Allocator"):
            args.pop()                                   # a trailing allocator object
        m = kw.pop("m", None)
        arr = kw.pop("arr", None)
        if arr is None and args and hasattr(args[0], "createMatHeader") and not isinstance(args[0], GpuMat):
            args[0] = args[0].createMatHeader()          # a HostMem: its memory, as upload takes it
        for a in args:
            if not isinstance(a, (int, np.integer, float, np.floating, tuple, list, np.ndarray, GpuMat)) \
                    and not hasattr(a, "__cuda_array_interface__"):
                raise cv_error("GpuMat", f"unexpected argument of type {type(a).__name__}", StsBadArg)
        if m is None and args and isinstance(args[0], GpuMat):
            m = args.pop(0)
        if m is not None:
            roi = kw.pop("roi", None)
            rr, cr = kw.pop("rowRange", None), kw.pop("colRange", None)
            if kw or len(args) > 2:
                raise cv_error("GpuMat", f"Overload resolution failed: GpuMat(m[, roi | rowRange, colRange]) "
                                         f"got {len(args) + 1} positional arguments"
                               + (f" and unexpected keywords {sorted(kw)}" if kw else ""), StsBadArg)
            if args and roi is None and rr is None:
                if len(args) == 1:
                    roi = args[0]
                else:
                    rr, cr = args[0], args[1]
            self._init_from(m, roi, rr, cr)
            return
        if arr is None and args and isinstance(args[0], np.ndarray):
            arr = args.pop(0)
        if arr is not None:
            if args or kw.get("roi") is not None or kw.get("rowRange") is not None:
                raise cv_error("GpuMat", "a ROI view needs a GpuMat parent, got a numpy.ndarray "
                                         "(upload it first)", StsBadArg)
            self.upload(arr)
            return
        if args and not isinstance(args[0], (int, np.integer, tuple, list)) and \
                hasattr(args[0], "__cuda_array_interface__"):
            self._wrap_foreign(args.pop(0))
            return
        size = kw.pop("size", None)
        rows, cols, typ = kw.pop("rows", None), kw.pop("cols", None), kw.pop("type", None)
        s = kw.pop("s", None)
        if kw:
            raise cv_error("GpuMat", f"unexpected arguments {sorted(kw)}", StsBadArg)
        if size is None and rows is None and args and isinstance(args[0], (tuple, list)):
            size = args.pop(0)
        if size is not None:
            cols, rows = _size_arg("GpuMat", size)
        elif rows is None and args:
            rows = args.pop(0)
            if args:
                cols = args.pop(0)
        if typ is None and args:
            typ = args.pop(0)
        if s is None and args:
            s = args.pop(0)
        if args:
            raise cv_error("GpuMat", f"Overload resolution failed: GpuMat() takes at most 4 positional "
                                     f"arguments (rows, cols, type, s), {len(args)} too many", StsBadArg)
        if rows is None and cols is None and typ is None:
            return                                       # GpuMat()
        if rows is None or cols is None or typ is None:
            raise cv_error("GpuMat", "expected GpuMat(rows, cols, type[, s]) or GpuMat(size, type[, s])")
        self.create(int(rows), int(cols), typ)
        if s is not None:
            self.setTo(s)

    def _init_from(self, m, roi, rr, cr):
        if not isinstance(m, GpuMat):
            raise cv_error("GpuMat", f"expected a GpuMat, got {type(m).__name__}", StsBadArg)
        if roi is None and rr is None and cr is None:
            self._share(m)
            return
        if roi is not None:
            x, y, w, h = _rect_arg("GpuMat", roi)
        else:
            y, y1 = _range_arg("GpuMat", rr, m._rows)
            x, x1 = _range_arg("GpuMat", cr, m._cols)
            w, h = x1 - x, y1 - y
        if not (m._rows and m._cols):                        # (m.empty())
            raise cv_error("GpuMat", "cannot take a ROI of an empty GpuMat", StsBadSize)
        if not (0 <= x and 0 <= y and w >= 0 and h >= 0 and x + w <= m._cols and y + h <= m._rows):
            raise cv_error("GpuMat", f"ROI (x={x}, y={y}, w={w}, h={h}) is outside the parent "
                           f"{m._cols}x{m._rows} (0 <= roi.x && 0 <= roi.width && roi.x + roi.width <= m.cols "
                           f"&& 0 <= roi.y && 0 <= roi.height && roi.y + roi.height <= m.rows)", StsOutOfRange)
        self._depth, self._cn = m._depth, m._cn
        if w == 0 or h == 0:             # OpenCV: an empty range or rect gives an empty GpuMat
            return
        self._rows, self._cols = h, w
        if m._parent is not None and m._node is not None:    # a view of a lazy view: of its parent
            m, y, x = m._parent[0], m._parent[1] + y, m._parent[2] + x
        if m._node is not None and m._alloc is not None:
            runtime.flush([m])                           # a view must see the pending write
        if m._alloc is not None:
            self._alloc, self._y0, self._x0 = m._alloc, m._y0 + y, m._x0 + x
            return
        # A view of a pending result: a lazy crop that becomes a real view once the parent has
        # memory (see _bind_result), so writes through either side stay shared.
        self._node = crop_node(m._node, y, x, h, w)
        self._parent = (m, y, x)
        if m._views is None:
            m._views = []
        m._views.append(weakref.ref(self))
        runtime.register_pending(self)

    def _share(self, m):
        """A header copy (``GpuMat(m)``, ``assignTo``): the same memory, so a pending result is
        computed into memory first (OpenCV's result already is; writes through either handle
        must reach the other)."""
        if m._node is not None and m._alloc is None:
            m._materialize()
        for f in ("_alloc", "_y0", "_x0", "_rows", "_cols", "_depth", "_cn", "_node", "_src", "_parent"):
            setattr(self, f, getattr(m, f))
        if self._node is not None:
            runtime.register_pending(self)
            if self._alloc is not None:
                self._alloc.add_writer(PendingWrite(self, self._node))
                STATE.written.add(self._alloc)

    def _wrap_foreign(self, obj):
        from .interop import wrap_foreign
        wrap_foreign(self, obj)

    @staticmethod
    def from_dlpack(src):
        """``cv2.cuda_GpuMat.from_dlpack(src)`` (OpenCV 5): a GpuMat over the memory of an
        object that exports DLPack, no copy; for a lazycv GpuMat, a view of all of it."""
        with STATE.lock:
            if isinstance(src, GpuMat):
                if src.empty():
                    raise cv_error("GpuMat::from_dlpack", "src is empty", StsBadArg)
                return GpuMat(src, (0, 0, src._cols, src._rows))
            from .interop import wrap_dlpack
            m = GpuMat()
            wrap_dlpack(m, src)
            return m

    @classmethod
    def _lazy(cls, node):
        m = cls.__new__(cls)
        m._alloc = None
        m._y0 = m._x0 = 0
        m._rows, m._cols, m._depth, m._cn = node.rows, node.cols, node.depth, node.cn
        m._node = node
        m._src = m._parent = m._views = m._stream = None
        # runtime.register_pending, inline: this runs for every recorded call
        runtime.THREAD.pending.append(weakref.ref(m))
        STATE.since_flush += 1
        if STATE.since_flush > runtime.AUTO_FLUSH_OPS:
            runtime.flush()
        return m

    @classmethod
    def _over(cls, alloc, rows, cols, depth, cn):
        """A GpuMat of memory lazycv already computed (a batch program's result)."""
        m = cls.__new__(cls)
        m._alloc = alloc
        m._y0 = m._x0 = 0
        m._rows, m._cols, m._depth, m._cn = rows, cols, depth, cn
        m._node = m._src = m._parent = m._views = m._stream = None
        return m

    # ---------------------------------------------------------------- state transitions
    def _bind_result(self, alloc, y0, x0):
        """The flush computed this mat into ``alloc`` at (y0, x0)."""
        n = self._node
        if alloc.writers:                                    # this write is done
            alloc.writers = [w for w in alloc.writers if w.node is not n]
        if n is not None and n.op.name == "fill" and not alloc.exported:
            alloc.constant = (alloc.buf, y0, x0, n, None)    # see _constant
        self._alloc, self._y0, self._x0 = alloc, y0, x0
        self._node = None
        self._src = None
        self._parent = None
        if self._views:
            for r in self._views:
                v = r()
                if v is not None and v._parent is not None and v._parent[0] is self:
                    _, y, x = v._parent
                    v._alloc, v._y0, v._x0 = alloc, y0 + y, x0 + x
                    v._node = v._parent = v._src = None
            self._views = None

    def _drop(self):
        self._alloc = None
        self._node = self._src = self._parent = None
        self._y0 = self._x0 = 0

    def _materialize(self):
        """Make sure this mat's data is in memory (flushing pending work if needed)."""
        if self._parent is not None and self._node is not None:
            runtime.flush([self._parent[0]])
        if self._node is not None:
            runtime.flush([self])
        if self._alloc is not None:
            runtime.before_read(self._alloc, exclude=self)

    def _value(self, func="", name="src"):
        """This mat as an input of a new node: its pending node, or a snapshot of its memory."""
        if ir.MULTI_DEVICE:
            self._check_device(func, name)
        if self._node is not None:
            if self._alloc is None or id(self._alloc.buf) not in source_bufs([self._node]):
                return self._node
            # an in-place write (add(g, 1, dst=g)) is computed before anything reads it: a
            # consumer in another kernel would recompute it from memory it has overwritten
            runtime.flush([self])
        if self._alloc is None:
            raise cv_error(func, f"{name} is empty", StsBadArg)
        if self._alloc.writers:
            runtime.before_read(self._alloc, exclude=self)
        if self._alloc.constant is not None and STATE.fuse:      # (eager: one kernel an op)
            c = self._constant()
            if c is not None:
                return c
        s = self._src
        if s is None or s.buf is not self._alloc.buf:
            s = self._src = Source(self._alloc.buf, self._y0, self._x0, self._rows, self._cols,
                                   self._depth, self._cn)
        return s

    def _check_device(self, func, name):
        """A kernel reads memory of the current device only (OpenCV would fault or read
        garbage: a GpuMat of another device must be copied over, e.g. by download/upload)."""
        if (self._node is not None or self._alloc is not None) and \
                runtime.device_of(self) != ir.current_device():
            raise cv_error(func, f"{name} is on device {runtime.device_of(self)}, but the current device is "
                                 f"{ir.current_device()} (cv2.cuda.setDevice): copy it to this device first",
                           StsBadArg)

    def _constant(self):
        """A fill node of this mat's region when its memory holds a fill's values (setTo, and
        nothing written since: Allocation.constant), else None. Read as values, a constant
        image (a std GpuMat) costs a kernel no loads."""
        a = self._alloc
        buf, y0, x0, n, last = a.constant
        if buf is not a.buf or a.exported or (n.depth, n.cn) != (self._depth, self._cn) or \
                not (y0 <= self._y0 and self._y0 + self._rows <= y0 + n.rows and
                     x0 <= self._x0 and self._x0 + self._cols <= x0 + n.cols):
            return None
        if last is not None and last.rgen == ir.recording().gen and last.result is None and \
                (last.rows, last.cols) == (self._rows, self._cols):
            return last                  # one node a recording (64 frames dividing by one std)
        c = Node(n.op, (), n.static, n.dyn, self._rows, self._cols, n.depth, n.cn)
        a.constant = (buf, y0, x0, n, c)
        return c

    def _prepare_write(self, whole_region=True, writing=None):
        """Before this mat's memory is overwritten: give it memory and honour memory order
        (``writing``: the node that will write it, which may read it too — in place)."""
        if self._parent is not None and self._node is not None:
            runtime.flush([self._parent[0]])
        if self._node is not None and (self._alloc is not None or self._views or not whole_region):
            runtime.flush([self])
        if self._alloc is None:
            self._node = None
            buf = runtime.backend().alloc(self._rows, self._cols * self._cn, DEPTH_DTYPE[self._depth])
            self._alloc, self._y0, self._x0 = Allocation(buf), 0, 0
            return
        a = self._alloc
        whole = whole_region and self._y0 == 0 and self._x0 == 0 and self._rows == a.rows and \
            self._cols * self._cn == a.row_elems
        runtime.before_write(a, whole=whole, exclude=self, writing=writing)
        self._src = None

    def _set_pending_write(self, node):
        """Record ``node`` as a pending write into this mat's own memory (done at once when
        foreign code can see that memory)."""
        self._node = node
        self._src = None
        self._alloc.add_writer(PendingWrite(self, node))
        STATE.written.add(self._alloc)
        runtime.register_pending(self)
        if self._alloc.exported:
            runtime.flush([self])

    def _assign_result(self, node):
        """``dst=self`` for a new result: write into this memory when it fits, else rebind."""
        if self._node is not None and self._alloc is None and \
                (self._rows, self._cols, self._depth, self._cn) == (node.rows, node.cols, node.depth, node.cn) and \
                (self._parent is not None or any(r() is not None for r in self._views or ())):
            # a view of a pending result, or a pending result others view: OpenCV writes into
            # the memory they share, so the result gets its memory first
            self._materialize()
        if self._alloc is not None and self._node is None and (self._rows, self._cols, self._depth, self._cn) == \
                (node.rows, node.cols, node.depth, node.cn):
            self._prepare_write(writing=node)
            self._set_pending_write(node)
            return self
        if self._node is not None and self._alloc is not None and \
                (self._rows, self._cols, self._depth, self._cn) == (node.rows, node.cols, node.depth, node.cn):
            runtime.flush([self])
            return self._assign_result(node)
        # OpenCV's create(): a different size/type gets new memory (detaching from any parent)
        self._drop()
        self._rows, self._cols, self._depth, self._cn = node.rows, node.cols, node.depth, node.cn
        self._node = node
        runtime.register_pending(self)
        return self

    # ---------------------------------------------------------------- OpenCV API: geometry
    def size(self):
        return (self._cols, self._rows)

    def type(self):
        return make_type(self._depth, self._cn)

    def depth(self):
        return self._depth

    def channels(self):
        return self._cn

    def elemSize(self):
        return DEPTH_DTYPE[self._depth].itemsize * self._cn

    def elemSize1(self):
        return DEPTH_DTYPE[self._depth].itemsize

    def empty(self):
        return self._rows == 0 or self._cols == 0

    @property
    def rows(self):
        return self._rows

    @property
    def cols(self):
        return self._cols

    @property
    def step(self):
        if self._alloc is None:
            if self._parent is not None:             # a view of a pending result: its parent's rows
                return self._parent[0].step
            return self._cols * self.elemSize()
        return self._alloc.row_elems * DEPTH_DTYPE[self._depth].itemsize

    def step1(self):
        return self.step // self.elemSize1() if not self.empty() else 0

    def isContinuous(self):
        if self.empty():
            return False                 # OpenCV: an empty GpuMat has no flags set
        if self._rows == 1:
            return True
        if self._alloc is None:
            return self._parent is None or self._cols == self._parent[0]._cols
        return self._cols * self._cn == self._alloc.row_elems

    def updateContinuityFlag(self):
        return None

    def __repr__(self):
        state = "empty" if self.empty() else ("pending" if self._node is not None else "ready")
        return f"<lazycv GpuMat {self._cols}x{self._rows} {type_name(self.type())} {state}>"

    # ---------------------------------------------------------------- memory
    @binding_keywords("rows", "cols", "type", "size", most=3)
    def create(self, *args, **kw):
        """create(rows, cols, type) or create(size, type): new memory unless it already fits."""
        with STATE.lock:
            if "size" in kw or (args and isinstance(args[0], (tuple, list))):
                size = kw.get("size", args[0] if args else None)
                cols, rows = _size_arg("GpuMat::create", size)
                typ = kw.get("type", args[1] if len(args) > 1 else None)
            else:
                rows = kw.get("rows", args[0] if args else None)
                cols = kw.get("cols", args[1] if len(args) > 1 else None)
                typ = kw.get("type", args[2] if len(args) > 2 else None)
            check(rows is not None and cols is not None and typ is not None, "GpuMat::create",
                  "expected create(rows, cols, type) or create(size, type)")
            depth, cn = _type_arg("GpuMat::create", typ)
            rows, cols = int_arg("GpuMat::create", rows, "rows"), int_arg("GpuMat::create", cols, "cols")
            check(rows >= 0 and cols >= 0, "GpuMat::create", f"negative size {cols}x{rows}", StsBadSize)
            if (rows, cols, depth, cn) == (self._rows, self._cols, self._depth, self._cn) and \
                    (self._alloc is not None or self._node is not None):
                return
            self._drop()
            self._rows, self._cols, self._depth, self._cn = rows, cols, depth, cn
            if rows and cols:
                buf = runtime.backend().alloc(rows, cols * cn, DEPTH_DTYPE[depth])
                self._alloc = Allocation(buf)

    def release(self):
        with STATE.lock:
            self._drop()
            self._rows = self._cols = 0

    def swap(self, other):
        with STATE.lock:
            if ir.TRACK is not None:       # a lazy result the C hot path left out of the cyclic
                ir.TRACK(self)             # GC may take a view's parent here: a possible cycle
                ir.TRACK(other)
            for f in GpuMat.__slots__[:-1]:
                a, b = getattr(self, f), getattr(other, f)
                setattr(self, f, b)
                setattr(other, f, a)
            for m, old in ((self, other), (other, self)):
                for r in m._views or ():          # views of a pending result follow its header
                    v = r()
                    if v is not None and v._parent is not None and v._parent[0] is old:
                        v._parent = (m,) + v._parent[1:]
                if m._node is not None:
                    runtime.register_pending(m)

    def upload(self, arr, stream=None):
        """Copy a host array into this GpuMat (reallocating when the size or type differ)."""
        with STATE.lock:
            if hasattr(arr, "createMatHeader") and not isinstance(arr, np.ndarray):
                arr = arr.createMatHeader()
            rows, cols, depth, cn, rows2d = host_array_info("GpuMat::upload", arr)
            _check_stream("GpuMat::upload", stream)
            if (rows, cols, depth, cn) != (self._rows, self._cols, self._depth, self._cn) or \
                    (self._alloc is None and self._node is None):
                self._drop()
                self._rows, self._cols, self._depth, self._cn = rows, cols, depth, cn
                buf = runtime.backend().alloc(rows, cols * cn, DEPTH_DTYPE[depth])
                self._alloc = Allocation(buf)
            else:
                self._prepare_write()
            host_to_device(self._alloc.buf, self._y0, self._x0 * cn, rows2d, stream)

    def download(self, dst=None, stream=None):
        """Copy this GpuMat to a host array (materialising pending work first)."""
        if _is_stream(dst):
            dst, stream = stream, dst              # download(stream[, dst]), OpenCV's other order
        if hasattr(dst, "createMatHeader"):
            dst = dst.createMatHeader()            # a HostMem: into its memory
        with STATE.lock:
            check(self._rows and self._cols, "GpuMat::download", "the GpuMat is empty", StsBadArg)   # (empty())
            _check_stream("GpuMat::download", stream)
            self._materialize()
            shape = host_shape(self._rows, self._cols, self._cn)
            dt = DEPTH_DTYPE[self._depth]
            into = None                    # a region of a bigger host image: written through
            fits = isinstance(dst, np.ndarray) and dst.dtype == dt and (
                dst.shape == shape or self._cn == 1 and dst.shape == shape + (1,))   # (h, w, 1): one channel
            if fits:
                check(dst.flags.writeable, "GpuMat::download", "dst is read-only", StsBadArg)
                if not dst.flags.c_contiguous:
                    into, fits, stream = dst, False, None
            if not fits:
                # a synchronous download may reuse warm memory (an asynchronous copy could
                # still be writing into storage that its dropped array gave back)
                dst = STATE.host_arrays.alloc(shape, dt) if stream is None else np.empty(shape, dt)
            device_to_host(self._alloc.buf, self._y0, self._x0 * self._cn, self._rows,
                           self._cols * self._cn, dst.reshape(self._rows, self._cols * self._cn), stream)
            if into is not None:
                into[...] = dst.reshape(into.shape)
                dst = into
            if runtime.OBSERVERS:
                runtime.notify("download", self, dst)
            return dst

    def cudaPtr(self):
        """Device address of the first pixel; the buffer is pinned from now on (never renamed)."""
        with STATE.lock:
            if self.empty():
                return 0
            self._materialize()
            runtime.export(self._alloc)
            be = runtime.backend()
            return be.pointer(self._alloc.buf) + (self._y0 * self._alloc.row_elems + self._x0 * self._cn) \
                * DEPTH_DTYPE[self._depth].itemsize

    # ---------------------------------------------------------------- views
    def rowRange(self, start, end=None):
        """rowRange(startrow, endrow) or rowRange(range); an empty range is all rows."""
        return GpuMat(self, start if end is None else (start, end), ())

    def colRange(self, start, end=None):
        return GpuMat(self, (), start if end is None else (start, end))

    def row(self, y):
        return GpuMat(self, (y, y + 1), (0, -1))

    def col(self, x):
        return GpuMat(self, (0, -1), (x, x + 1))

    def locateROI(self, wholeSize=None, ofs=None):
        """(wholeSize, ofs): the parent's size and this view's offset, both as (x, y) pairs.
        (OpenCV's binding takes the two as arguments it cannot fill; they are accepted and
        the answer is returned.)"""
        if self._alloc is None:
            if self._parent is not None:
                p, y, x = self._parent
                (w, h), (px, py) = p.locateROI()
                return (w, h), (px + x, py + y)
            return (self._cols, self._rows), (0, 0)
        a = self._alloc
        return (a.cols or a.row_elems // self._cn, a.rows), (self._x0, self._y0)

    def adjustROI(self, dtop, dbottom, dleft, dright):
        """Move this view's edges within its parent (OpenCV semantics, clamped to the parent)."""
        with STATE.lock:
            self._materialize()
            (W, H), (ox, oy) = self.locateROI()
            y0 = max(oy - dtop, 0)
            y1 = min(oy + self._rows + dbottom, H)
            x0 = max(ox - dleft, 0)
            x1 = min(ox + self._cols + dright, W)
            check(y1 > y0 and x1 > x0, "GpuMat::adjustROI", "the adjusted ROI is empty", StsBadSize)
            self._y0, self._x0, self._rows, self._cols = y0, x0, y1 - y0, x1 - x0
            self._src = None
            return self

    def reshape(self, cn, rows=0):
        """Same memory seen with another channel count (and row count), by OpenCV's rules
        (GpuMat::reshape): a channel count that does not divide a row's elements, with no row
        count given, takes the rows that make it fit; a new row count needs a continuous mat."""
        func = "GpuMat::reshape"
        with STATE.lock:
            self._materialize()
            cn = int_arg(func, cn, "cn") or self._cn
            rows = int_arg(func, rows, "rows")
            check(1 <= cn <= CN_MAX, func, f"channels must be 1..{CN_MAX}, got {cn}")
            check(rows >= 0, func, f"rows must be >= 0, got {rows}", StsBadSize)
            width = self._cols * self._cn                  # elements a row
            if (cn > width or width % cn) and rows == 0:
                rows = self._rows * width // cn
            if rows and rows != self._rows:
                total = width * self._rows
                check(self.isContinuous(), func, "the matrix is not continuous, so its row count cannot "
                                                 "change (isContinuous())", StsBadSize)
                check(rows <= total and total % rows == 0, func,
                      f"{total} elements cannot be seen as {rows} rows", StsBadSize)
                width = total // rows
            else:
                rows = self._rows
            check(width % cn == 0, func, f"a row of {width} elements cannot be seen as {cn}-channel pixels",
                  StsBadSize)
            out = GpuMat()
            out._depth, out._cn, out._rows, out._cols = self._depth, cn, rows, width // cn
            if rows == self._rows:
                out._alloc, out._y0 = self._alloc, self._y0
                check((self._x0 * self._cn) % cn == 0, func, "the view's offset does not divide "
                      "into whole pixels of the new channel count", StsBadSize)
                out._x0 = self._x0 * self._cn // cn
                return out
            # the continuous region as a flat run of the buffer, seen with the new rows
            runtime.export(self._alloc)
            buf = self._alloc.buf
            dense = buf.strides[1] == buf.dtype.itemsize and buf.strides[0] == buf.shape[1] * buf.dtype.itemsize
            check(dense, func, "reshape to another row count of memory with padded rows", StsBadSize)
            start = self._y0 * buf.shape[1] + self._x0 * self._cn
            flat = buf.reshape(buf.shape[0] * buf.shape[1])[start:start + rows * width]
            out._alloc = Allocation(flat.reshape(rows, width))
            runtime.export(out._alloc)      # (two allocations over one buffer: read and written at the call)
            return out

    # ---------------------------------------------------------------- data ops (lazy)
    def copyTo(self, *args, **kw):
        return copy_to(self, *args, **kw)

    def setTo(self, *args, **kw):
        return set_to(self, *args, **kw)

    def convertTo(self, *args, **kw):
        with STATE.lock:
            return _convert((self,) + args, kw, None)

    if recipes.API_TYPE is not None:      # the lock and the recipe replay in C, as cv2.cuda functions
        convertTo = recipes.API_TYPE(convert_to, _convert, STATE.lock)
        convertTo.__name__ = convertTo.__qualname__ = "convertTo"
        convertTo.__doc__, convertTo.__module__ = convert_to.__doc__, __name__

    def clone(self):
        return copy_to(self)

    def assignTo(self, m, type=-1):
        m._share(self if type < 0 else self.convertTo(type))

    # ---------------------------------------------------------------- interop
    @property
    def __cuda_array_interface__(self):
        from .interop import cuda_array_interface
        return cuda_array_interface(self)

    @property
    def __array_interface__(self):
        from .interop import host_array_interface
        return host_array_interface(self)

    def __dlpack__(self, *args, **kw):
        from .interop import to_dlpack
        return to_dlpack(self, *args, **kw)

    def __dlpack_device__(self):
        from .interop import dlpack_device
        return dlpack_device(self)

    @staticmethod
    def defaultAllocator():
        """lazycv's one allocator (its memory pool), as an object the constructors accept."""
        return ALLOCATOR

    @staticmethod
    def setDefaultAllocator(allocator):
        """Accepted and ignored: lazycv's pool serves every GpuMat."""

    @staticmethod
    def getStdAllocator():
        return ALLOCATOR


@binding_class(name="GpuMat_Allocator")
class GpuMatAllocator:
    """``cv2.cuda.GpuMat_Allocator``: stands for lazycv's memory pool where OpenCV code passes
    an allocator (constructors, ``Stream(allocator)``); it changes nothing."""

    def __repr__(self):
        return "<lazycv GpuMat allocator: the memory pool>"


ALLOCATOR = GpuMatAllocator()


def _check_stream(func, stream):
    if stream is not None and not _is_stream(stream):
        raise cv_error(func, f"stream must be a cv2.cuda.Stream, got {type(stream).__name__}", StsBadArg)
