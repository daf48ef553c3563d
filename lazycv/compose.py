"""Layer 2: explicit, reusable pipelines over the same IR, planner, kernel cache and backends.

::

    p = lazycv.compose(lazycv.read(), lazycv.crop((x, y, w, h)), lazycv.resize((640, 640)),
                       lazycv.cvt_color(cv2.COLOR_BGR2RGB), lazycv.convert(np.float32, 1 / 255),
                       lazycv.normalize(mean, std), lazycv.to_planar(), lazycv.write())
    chw = p(frame)                  # (3, 640, 640) float32
    nchw = p(batch, stream=s)       # a list of frames or a (B, H, W, C) array -> (B, 3, 640, 640)

Each step's ``apply(value, stream)`` makes the same cv2.cuda calls a user would write by hand
(``GpuMat(m, rect)``, ``resize``, ``cvtColor``, ``convertTo``, ``subtract``/``divide``,
``split``), so a pipeline records exactly the IR nodes the equivalent cv2.cuda code records, and
its result equals that code's. A batch is recorded item by item and then computed with one
``lazycv.materialize`` call, so all items are planned together (one compile serves them all).

Any callable ``GpuMat -> GpuMat`` is a step too (a ``lazycv.op``, a lambda calling cv2.cuda);
a pipeline without ``write()`` returns lazy GpuMats that fuse with whatever the caller does next.
"""
import functools
import numbers

import cv2
import numpy as np

from . import ir, runtime
from ._types import DEPTH_DTYPE, DTYPE_DEPTH, is_float
from .errors import StsBadArg, StsBadSize, StsUnsupportedFormat, cv_error
from .program import BatchProgram, batch_key
from .runtime import STATE, capturing, flush, is_shared

__all__ = ["compose", "Pipeline", "Step", "read", "crop", "resize", "cvt_color", "convert", "normalize",
           "to_planar", "write", "Call"]


@functools.cache
def _gpumat():
    """The façade's GpuMat class, imported on first use (lazycv imports this module before the
    façade) and kept: an import statement costs a microsecond or two every time it runs."""
    from .facade.gpumat import GpuMat
    return GpuMat


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(e) for e in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


class Step:
    """One pipeline stage: ``apply(value, stream)`` takes a GpuMat and returns the next value."""
    name = "step"
    planar_ok = False            # accepts the list of planes to_planar() produces

    def apply(self, m, stream=None):  # pragma: no cover - abstract
        raise NotImplementedError

    def _args(self):
        return ""

    def __repr__(self):
        return f"{self.name}({self._args()})"


class Call(Step):
    """Any function ``fn(gpumat, *args, **kw)`` (a cv2.cuda-style call or a lazycv.op)."""

    def __init__(self, fn, args=(), kw=None, label=None):
        if not callable(fn):
            raise cv_error("lazycv::compose", f"a step must be callable, got {type(fn).__name__}", StsBadArg)
        self.fn, self.args, self.kw = fn, tuple(args), dict(kw or {})
        self.name = label or getattr(fn, "__name__", type(fn).__name__)

    def apply(self, m, stream=None):
        kw = dict(self.kw)
        if stream is not None and _takes_stream(self.fn):
            kw.setdefault("stream", stream)
        out = self.fn(m, *self.args, **kw)
        if not isinstance(out, _gpumat()):
            raise cv_error("lazycv::compose", f"step {self.name} returned {type(out).__name__}, "
                                              "expected a GpuMat", StsBadArg)
        return out

    def _args(self):
        return ", ".join([_fmt(a) for a in self.args] + [f"{k}={_fmt(v)}" for k, v in self.kw.items()])


def _takes_stream(fn):
    from .userops import UserOp
    if isinstance(fn, UserOp):
        return True
    import inspect
    try:
        ps = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "stream" in ps or any(p.kind == p.VAR_KEYWORD for p in ps.values())


# ---------------------------------------------------------------- the steps

class Read(Step):
    """The pipeline's input: a GpuMat, a numpy image (H, W) or (H, W, C), a list of either (a
    batch), or a 4-D numpy array (B, H, W, C) (a batch, uploaded with one copy)."""
    name = "read"

    def load(self, frames, stream=None):
        """(list of GpuMats, is_batch)."""
        func = "lazycv::read"
        GpuMat = _gpumat()
        if isinstance(frames, GpuMat):
            return [self._mat(frames, func, "input")], False
        if isinstance(frames, np.ndarray):
            if frames.ndim in (2, 3):
                return [self._upload(frames, stream)], False
            if frames.ndim == 4:
                return self._upload_batch(frames, stream), True
            raise cv_error(func, f"a numpy input must be (H, W), (H, W, C) or a batch (B, H, W, C); got shape "
                                 f"{frames.shape}", StsBadSize)
        if isinstance(frames, (list, tuple)):
            if not frames:
                raise cv_error(func, "the batch is empty", StsBadSize)
            out = []
            for i, f in enumerate(frames):
                if isinstance(f, GpuMat):
                    out.append(self._mat(f, func, f"input[{i}]"))
                elif isinstance(f, np.ndarray) and f.ndim in (2, 3):
                    out.append(self._upload(f, stream))
                else:
                    what = f"array of shape {f.shape}" if isinstance(f, np.ndarray) else type(f).__name__
                    raise cv_error(func, f"input[{i}] must be a GpuMat or a numpy image (H, W[, C]), got {what}",
                                   StsBadArg)
            return out, True
        raise cv_error(func, "the input must be a GpuMat, a numpy image, a list of them or a (B, H, W, C) "
                             f"array; got {type(frames).__name__}", StsBadArg)

    @staticmethod
    def _mat(m, func, what):
        if m.empty():
            raise cv_error(func, f"{what} is an empty GpuMat", StsBadArg)
        return m

    @staticmethod
    def _upload(arr, stream):
        g = _gpumat()()
        g.upload(np.ascontiguousarray(arr), stream)
        return g

    @staticmethod
    def _upload_batch(arr, stream):
        """One upload of the whole batch seen as a tall image, then a ROI view per frame."""
        b, h, w = arr.shape[:3]
        if b == 0:
            raise cv_error("lazycv::read", "the batch is empty", StsBadSize)
        big = _gpumat()()
        big.upload(np.ascontiguousarray(arr).reshape(b * h, w, arr.shape[3]), stream)
        GpuMat = _gpumat()
        return [GpuMat(big, (0, i * h, w, h)) for i in range(b)]


class Crop(Step):
    """A ROI view ``GpuMat(m, rect)``; ``rect`` is (x, y, w, h) or a function (w, h) -> rect
    (e.g. a centre crop for frames of any size)."""
    name = "crop"

    def __init__(self, rect):
        if not callable(rect):
            try:
                rect = tuple(int(v) for v in rect)
                assert len(rect) == 4
            except Exception:
                raise cv_error("lazycv::crop", f"rect must be (x, y, width, height) or a function (w, h) -> rect, "
                                               f"got {rect!r}", StsBadArg)
        self.rect = rect

    def apply(self, m, stream=None):
        rect = self.rect(*m.size()) if callable(self.rect) else self.rect
        try:
            rect = tuple(int(v) for v in rect)
        except (TypeError, ValueError):
            raise cv_error("lazycv::crop", f"the rect function must return (x, y, width, height), got {rect!r}",
                           StsBadArg) from None
        if len(rect) != 4:
            raise cv_error("lazycv::crop", f"a rect is (x, y, width, height), got {rect!r}", StsBadArg)
        return _gpumat()(m, rect)

    def _args(self):
        return getattr(self.rect, "__name__", "fn") if callable(self.rect) else _fmt(self.rect)


class Resize(Step):
    """``cv2.cuda.resize(m, dsize, fx=, fy=, interpolation=)``."""
    name = "resize"

    def __init__(self, dsize, fx=0, fy=0, interpolation=cv2.INTER_LINEAR):
        from .ops.common import int_arg, size_arg
        func = "lazycv::resize"
        self.dsize = None if dsize is None else size_arg(func, dsize)
        self.fx, self.fy = _number(func, fx, "fx"), _number(func, fy, "fy")
        self.interpolation = int_arg(func, interpolation, "interpolation")

    def apply(self, m, stream=None):
        from .ops.geometry import resize
        return resize(m, self.dsize or (0, 0), fx=self.fx, fy=self.fy, interpolation=self.interpolation,
                      stream=stream)

    def _args(self):
        a = [_fmt(self.dsize)]
        if self.fx or self.fy:
            a += [f"fx={self.fx}", f"fy={self.fy}"]
        if self.interpolation != cv2.INTER_LINEAR:
            a.append(f"interpolation={self.interpolation}")
        return ", ".join(a)


class CvtColor(Step):
    """``cv2.cuda.cvtColor(m, code, dcn=)``."""
    name = "cvt_color"

    def __init__(self, code, dcn=0):
        from .ops.common import int_arg
        self.code = int_arg("lazycv::cvt_color", code, "code")
        self.dcn = 0 if dcn is None else int_arg("lazycv::cvt_color", dcn, "dcn")

    def apply(self, m, stream=None):
        from .ops.color import cvtColor
        return cvtColor(m, self.code, dcn=self.dcn, stream=stream)

    def _args(self):
        names = [n for n in dir(cv2) if n.startswith("COLOR_") and getattr(cv2, n) == self.code]
        return f"cv2.{names[0]}" if names else str(self.code)


def _depth(func, dtype):
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool) and int(dtype) in DEPTH_DTYPE:
        return int(dtype)
    try:
        dt = np.dtype(dtype)
    except Exception:
        dt = None
    if dt is None or dt not in DTYPE_DEPTH:
        raise cv_error(func, f"dtype must be a numpy dtype (uint8 ... float64) or a cv2.CV_* depth, got {dtype!r}",
                       StsUnsupportedFormat)
    return DTYPE_DEPTH[dt]


class Convert(Step):
    """``m.convertTo(depth, alpha=, beta=)``: depth from a numpy dtype or a cv2.CV_* depth."""
    name = "convert"

    def __init__(self, dtype, alpha=1.0, beta=0.0):
        self.depth = _depth("lazycv::convert", dtype)
        self.alpha = _number("lazycv::convert", alpha, "alpha")
        self.beta = _number("lazycv::convert", beta, "beta")

    def apply(self, m, stream=None):
        return m.convertTo(self.depth, alpha=self.alpha, beta=self.beta, stream=stream)

    def _args(self):
        a = [f"np.{DEPTH_DTYPE[self.depth].name}"]
        if self.alpha != 1 or self.beta != 0:
            a.append(_fmt(self.alpha))
        if self.beta != 0:
            a.append(_fmt(self.beta))
        return ", ".join(a)


def _number(func, v, name, kind=float):
    """``kind(v)``, or a cv2.error naming the step and the argument."""
    try:
        return kind(v)
    except (TypeError, ValueError):
        raise cv_error(func, f"{name} must be a number, got {v!r}", StsBadArg) from None


def _scalar(func, v, name):
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    try:
        t = tuple(float(e) for e in np.asarray(v, dtype=np.float64).ravel()) if v is not None else ()
    except Exception:
        t = ()
    if any(e != e for e in t):
        t = ()                                   # NaN: no per-channel value
    if not 1 <= len(t) <= 4:
        raise cv_error(func, f"{name} must be a number or 1 to 4 numbers (one per channel), got {v!r}", StsBadArg)
    return t[0] if len(t) == 1 else t


class Normalize(Step):
    """``cv2.cuda.divide(cv2.cuda.subtract(m, mean), std)`` (scalars or one value per channel).
    An integer image is subtracted into CV_32F (``dtype=cv2.CV_32F``) so nothing saturates."""
    name = "normalize"

    def __init__(self, mean, std):
        self.mean = _scalar("lazycv::normalize", mean, "mean")
        self.std = _scalar("lazycv::normalize", std, "std")
        if any(s == 0 for s in (self.std if isinstance(self.std, tuple) else (self.std,))):
            raise cv_error("lazycv::normalize", f"std must not be zero, got {std!r}", StsBadArg)

    def apply(self, m, stream=None):
        from .ops.arith import divide, subtract
        for what, v in (("mean", self.mean), ("std", self.std)):
            if isinstance(v, tuple) and len(v) not in (1, m.channels()):
                raise cv_error("lazycv::normalize", f"{what} has {len(v)} values for a {m.channels()}-channel "
                                                    "image", StsBadArg)
        dtype = -1 if is_float(m.depth()) else cv2.CV_32F
        f = subtract(m, self.mean, dtype=dtype, stream=stream)
        return divide(f, self.std, stream=stream)

    def _args(self):
        return f"{_fmt(self.mean)}, {_fmt(self.std)}"


class ToPlanar(Step):
    """``cv2.cuda.split(m)``: the value becomes a list of single-channel planes (CHW)."""
    name = "to_planar"

    def apply(self, m, stream=None):
        from .ops.channels import split
        return split(m, stream=stream)


class Write(Step):
    """The pipeline's output. Host (default): numpy arrays — (H, W[, C]) per frame, (C, H, W) after
    to_planar, a batch stacked on a new first axis (or a list with ``stack=False``), written into
    ``out`` when given. ``device=True``: materialised GpuMats (lists of planes after to_planar),
    written into ``out`` GpuMats when given. ``tensor=True``: the whole result as one device
    array — (B, C, H, W) after to_planar, else (B, H, W[, C]); no B for one frame — with
    ``__cuda_array_interface__`` on CUDA (torch.as_tensor, cupy.asarray take it without a copy), a
    numpy array on the CPU backend."""
    name = "write"
    planar_ok = True

    def __init__(self, out=None, device=False, stack=True, tensor=False):
        self.out, self.device, self.stack, self.tensor = out, bool(device), bool(stack), bool(tensor)
        if self.tensor and out is not None:
            raise cv_error("lazycv::write", "out= cannot be combined with tensor=True", StsBadArg)

    def _args(self):
        a = []
        if self.tensor:
            a.append("tensor=True")
        elif self.device:
            a.append("device=True")
        if self.out is not None:
            a.append("out=...")
        if not self.stack:
            a.append("stack=False")
        return ", ".join(a)


# ---------------------------------------------------------------- the pipeline

_DETERMINISTIC = (Crop, Resize, CvtColor, Convert, Normalize, ToPlanar)

def _flat(values):
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


class Pipeline:
    """A reusable chain of steps. ``p(frames, stream=None, out=None)`` runs it; ``p.record``
    returns the lazy results; ``p.launch`` computes them on the device without downloading;
    ``p.explain`` shows the kernels a run would launch."""

    def __init__(self, steps):
        self.steps = tuple(steps)
        body = list(self.steps)
        self.reader = body.pop(0) if body and isinstance(body[0], Read) else Read()
        self.writer = body.pop() if body and isinstance(body[-1], Write) else None
        for s in body:
            if isinstance(s, (Read, Write)):
                where = "first" if isinstance(s, Read) else "last"
                pos = next(j for j, t in enumerate(self.steps) if t is s) + 1
                raise cv_error("lazycv::compose", f"{s.name}() must be the {where} step (found at position "
                                                  f"{pos})", StsBadArg)
        for s in body[:-1]:
            if isinstance(s, ToPlanar):
                raise cv_error("lazycv::compose", "to_planar() must be the last step before write()", StsBadArg)
        self.body = tuple(body)
        # built-in steps record the same nodes for every input of one size and type, so later
        # items come from the first one's template (lazycv.template); a callable may not
        self._templates = {} if all(type(s) in _DETERMINISTIC and not (type(s) is Crop and callable(s.rect))
                                    for s in body) else None
        # ... and a batch computed by one launch is that launch again (lazycv.program)
        self._programs = {} if self._templates is not None else None

    def __repr__(self):
        return "compose(" + ", ".join(repr(s) for s in self.steps) + ")"

    # ---- running
    def _item(self, m, stream):
        for s in self.body:
            m = s.apply(m, stream)
        return m

    def _items(self, mats, stream):
        """Every item through the steps. An item whose input has the size and type of an
        earlier one is made from that item's template instead of calling each step again (the
        same nodes, ~3x less Python); memory shared with foreign code is read at each call, so
        such an input goes through the steps."""
        if self._templates is None:
            return [self._item(m, stream) for m in mats]
        from .ops.common import check_stream, gpumat_cls
        from .template import ItemTemplate, input_key
        check_stream("lazycv::compose", stream)
        GpuMat = gpumat_cls()
        out = []
        for m in mats:
            v = m._value()
            key = input_key(v)
            t = self._templates.get(key)
            if t is not None and not (STATE.any_shared and is_shared(v)):
                out.append(t.instantiate(v, GpuMat))
                continue
            since = ir.mark()
            r = self._item(m, stream)
            if key not in self._templates:
                if len(self._templates) >= 16:
                    self._templates.clear()
                self._templates[key] = ItemTemplate.capture(v, r, since)
            out.append(r)
        return out

    def record(self, frames, stream=None):
        """The lazy results (nothing runs): one per frame for a batch (a list), else one. A
        result is a GpuMat, or a list of planes after to_planar()."""
        with STATE.lock:
            mats, batch = self.reader.load(frames, stream)
            outs = self._items(mats, stream)
        return outs if batch else outs[0]

    def launch(self, frames, stream=None):
        """Record and compute now (every item planned together); returns the device results."""
        with STATE.lock:
            res = self.record(frames, stream)
            from . import materialize
            materialize(*_flat([res]))
        return res

    def __call__(self, frames, stream=None, out=None):
        if self.writer is None:
            if out is not None:
                raise cv_error("lazycv::compose", "out= needs a write() step", StsBadArg)
            return self.record(frames, stream)
        w = self.writer
        if out is not None and w.tensor:
            raise cv_error("lazycv::write", "out= cannot be combined with tensor=True", StsBadArg)
        out = w.out if out is None else out
        with STATE.lock:
            mats, batch = self.reader.load(frames, stream)
            got = None
            # one frame is a batch of one: the same program, its result without the batch axis
            if self._programs is not None and not (w.device and out is not None) and \
                    (w.device or w.tensor or (w.stack and batch)):
                got = self._by_program(mats, stream, single=not batch)
            if got is None:
                res = self._items(mats, stream)
            elif got[0] is None:
                res = got[1]                     # the capture's results (general path)
            else:
                return self._deliver(got, out, stream, batch)
            if w.tensor:
                return self._write_tensor(res, batch)
            if w.device:
                return self._write_device(res, batch, out, stream)
            from . import materialize
            materialize(*_flat(res))
            return self._write_host(res, batch, out, stream, w.stack)

    def _planar(self):
        return bool(self.body) and isinstance(self.body[-1], ToPlanar)

    # ---- batch programs
    def _by_program(self, mats, stream, single=False):
        """The batch computed by its program (captured on the first batch of its shape): (the
        program, what it launched — a tensor, or per-plane buffers for GpuMat results); (None,
        results) when this call captured a program but must return the general path's results;
        None where no program applies — the batch then takes the general path."""
        values = []
        for m in mats:
            if m._node is not None:
                return None                      # a pending input: recorded with the rest
            v = m._value("lazycv::compose", "input")
            if not v.is_source or (STATE.any_shared and is_shared(v)):
                return None                      # (a constant image is a node, not memory)
            values.append(v)
        # the tables hold each item's sizes: a batch of other sizes (new ROIs) is another program
        key = (batch_key(values), STATE.resize_mapping, STATE.backend, STATE.fuse)   # (per device)
        items = self.writer.device and not self.writer.tensor
        prog = self._programs.get(key, False)
        if prog is None:
            return None                          # this shape's batch is not one launch
        if prog is False:
            if not STATE.fuse:
                return None
            flush()                              # other pending work must not join the capture
            from . import materialize
            with capturing() as launches:
                res = self._items(mats, stream)
                materialize(*_flat(res))
            planes = [r if isinstance(r, list) else [r] for r in res]
            prog = BatchProgram.capture(launches, values, planes, self._planar())
            if len(self._programs) >= 16:
                self._programs.clear()
            self._programs[key] = prog
            if prog is None or items:
                return None, res
            # one more launch into the tensor: cheaper than copying the results there plane by
            # plane (host output: than downloading them plane by plane)
            got = prog.run(values, single=single)
            return (None, res) if got is None else (prog, got)
        got = prog.run(values, items, single)
        return None if got is None else (prog, got)

    def _deliver(self, got, out, stream, batch=True):
        """A program's launch as the writer's form (one frame: without the batch axis)."""
        prog, result = got
        w = self.writer
        if w.tensor:
            return result
        if w.device:
            group = prog.planes if prog.planar else 0
            hot = runtime.HOTPATH
            if hot is not None:
                mats = hot.over(result, prog.rows, prog.cols, prog.depth, prog.cn, group)
            else:
                GpuMat, Allocation = _gpumat(), ir.Allocation
                mats = [GpuMat._over(Allocation(buf), prog.rows, prog.cols, prog.depth, prog.cn) for buf in result]
                if group:
                    mats = [mats[i:i + group] for i in range(0, len(mats), group)]
            return mats if batch else mats[0]
        shape, dt = prog.tensor_shape, prog.dtype
        if out is None:
            out = np.empty(shape, dt)
        self._check_out("lazycv::write", out, shape, dt)
        STATE.backend.download_array(result, out)
        return out

    def _write_tensor(self, res, batch):
        """The general path's results copied into one device array (the batch-program path
        writes there directly)."""
        from . import materialize
        shapes = [self._shape(r) for r in res]
        if any(sd != shapes[0] for sd in shapes):
            raise cv_error("lazycv::write", "the batch's results differ in shape or type and cannot be one tensor: "
                                            f"{sorted(set(s for s, _ in shapes))}; add a resize() step",
                           StsBadSize)
        s0, dt = shapes[0]
        be = STATE.backend
        tensor = be.buffers.alloc(((len(res),) + s0) if batch else s0, np.dtype(dt))
        GpuMat = _gpumat()
        copies = []
        for i, r in enumerate(res):
            item = tensor[i] if batch else tensor
            for k, p in enumerate(r if isinstance(r, list) else [r]):
                plane = item[k] if isinstance(r, list) else item.reshape(p.rows, p.cols * p.channels())
                dst = GpuMat._over(ir.Allocation(plane, foreign=tensor), p.rows, p.cols, p.depth(), p.channels())
                copies.append(p.copyTo(dst))
        materialize(*copies)
        return tensor

    def explain(self, frames, format="text"):
        """``lazycv.explain`` of a run on ``frames`` (nothing runs)."""
        from . import explain
        return explain(*_flat([self.record(frames)]), format=format)

    # ---- output
    @staticmethod
    def _shape(r):
        if isinstance(r, list):
            p = r[0]
            return (len(r), p.rows, p.cols), DEPTH_DTYPE[p.depth()]
        return ((r.rows, r.cols) if r.channels() == 1 else (r.rows, r.cols, r.channels())), DEPTH_DTYPE[r.depth()]

    @staticmethod
    def _download(r, dst, stream):
        """Download result ``r`` (a GpuMat or a list of planes) into the numpy array ``dst``."""
        parts = [(p, dst[c]) for c, p in enumerate(r)] if isinstance(r, list) else [(r, dst)]
        for m, d in parts:
            got = m.download(d, stream) if stream is not None else m.download(d)
            if got is not d:
                d[...] = got

    def _write_host(self, res, batch, out, stream, stack):
        func = "lazycv::write"
        shapes = [self._shape(r) for r in res]
        if batch and not stack:
            if out is None:
                out = [np.empty(s, dt) for s, dt in shapes]
            elif not isinstance(out, (list, tuple)) or len(out) != len(res):
                raise cv_error(func, f"out must be a list of {len(res)} arrays (stack=False)", StsBadArg)
            for r, (s, dt), o in zip(res, shapes, out):
                self._check_out(func, o, s, dt)
                self._download(r, o, stream)
            self._sync(stream)
            return list(out)
        s0, dt0 = shapes[0]
        if batch and any(sd != shapes[0] for sd in shapes):
            raise cv_error(func, "the batch's results differ in shape or type and cannot be stacked: "
                                 f"{sorted(set(s for s, _ in shapes))}; add a resize() step or use "
                                 "write(stack=False)", StsBadSize)
        full = ((len(res),) + s0) if batch else s0
        if out is None:
            out = np.empty(full, dt0)
        self._check_out(func, out, full, dt0)
        if batch:
            for i, r in enumerate(res):
                self._download(r, out[i], stream)
        else:
            self._download(res[0], out, stream)
        self._sync(stream)
        return out

    @staticmethod
    def _sync(stream):
        if stream is not None:
            stream.waitForCompletion()

    @staticmethod
    def _check_out(func, o, shape, dt):
        if not isinstance(o, np.ndarray) or o.shape != tuple(shape) or o.dtype != dt:
            what = f"{o.dtype} array of shape {o.shape}" if isinstance(o, np.ndarray) else type(o).__name__
            raise cv_error(func, f"out must be a {np.dtype(dt)} array of shape {tuple(shape)}, got {what}",
                           StsBadArg)
        if not o.flags.writeable:
            raise cv_error(func, "out is read-only", StsBadArg)

    def _write_device(self, res, batch, out, stream):
        func = "lazycv::write"
        from . import materialize
        if out is not None:
            outs = out if batch else [out]
            if not isinstance(outs, (list, tuple)) or len(outs) != len(res):
                raise cv_error(func, f"out must be a list of {len(res)} results (one per frame)", StsBadArg)
            GpuMat = _gpumat()
            placed = []
            for r, o in zip(res, outs):
                if isinstance(r, list):
                    if not isinstance(o, (list, tuple)) or len(o) != len(r) or \
                            not all(isinstance(d, GpuMat) for d in o):
                        raise cv_error(func, f"out must hold a list of {len(r)} GpuMats per frame (to_planar)",
                                       StsBadArg)
                    placed.append([p.copyTo(stream=stream, dst=d) if stream is not None else p.copyTo(d)
                                   for p, d in zip(r, o)])
                else:
                    if not isinstance(o, GpuMat):
                        raise cv_error(func, f"out must be a GpuMat, got {type(o).__name__}", StsBadArg)
                    placed.append(r.copyTo(stream=stream, dst=o) if stream is not None else r.copyTo(o))
            res = placed
        materialize(*_flat(res))
        return res if batch else res[0]


# ---------------------------------------------------------------- public constructors

def compose(*steps):
    """A :class:`Pipeline` of ``steps`` (pipelines are flattened; plain callables
    ``GpuMat -> GpuMat`` and lazycv.op objects become steps)."""
    flat = []
    for s in steps:
        if isinstance(s, Pipeline):
            flat.extend(s.steps)
        elif isinstance(s, Step):
            flat.append(s)
        elif callable(s):
            flat.append(Call(s))
        else:
            raise cv_error("lazycv::compose", f"step {len(flat) + 1} must be a lazycv step or a callable, got "
                                              f"{type(s).__name__}", StsBadArg)
    return Pipeline(flat)


def read():
    """The input step (optional: a pipeline always reads its input)."""
    return Read()


def crop(rect):
    """ROI (x, y, width, height), or a function (width, height) -> rect."""
    return Crop(rect)


def resize(dsize, fx=0, fy=0, interpolation=cv2.INTER_LINEAR):
    """cv2.cuda.resize; ``dsize`` is (width, height) (or None with fx, fy)."""
    return Resize(dsize, fx, fy, interpolation)


def cvt_color(code, dcn=0):
    """cv2.cuda.cvtColor with a cv2.COLOR_* code."""
    return CvtColor(code, dcn)


def convert(dtype, alpha=1.0, beta=0.0):
    """GpuMat.convertTo(dtype, alpha, beta): dtype is a numpy dtype or a cv2.CV_* depth."""
    return Convert(dtype, alpha, beta)


def normalize(mean, std):
    """(x - mean) / std, per channel (cv2.cuda.subtract then cv2.cuda.divide)."""
    return Normalize(mean, std)


def to_planar():
    """HWC -> CHW: cv2.cuda.split; the planes of one frame come out of one kernel."""
    return ToPlanar()


def write(out=None, device=False, stack=True, tensor=False):
    """The output step: numpy arrays (default), GpuMats (``device=True``), into ``out`` if given,
    or one device array for the whole batch (``tensor=True``)."""
    return Write(out, device, stack, tensor)

