"""cv2.cuda functions (not objects) computed on the host: mean shift, connected components,
reprojectImageTo3D, spectrum products. Installed only where no fused op of the same name is
registered (see algorithms.py for the why and the counting).

Mean shift has no CPU OpenCV function returning what the CUDA one does (the mapped positions,
CUDA's per-pixel window), so it is CUDA's procedure written with numpy: for each pixel, up to
``maxCount`` times, average the colours and positions of the (2sp+1)^2 window's pixels whose
colour is within ``sr`` (reads past the border take the edge pixel, as CUDA's clamped texture
does), truncate, and stop when the point does not move or moves by at most ``eps``.
"""
import cv2
import numpy as np

from ..errors import StsUnsupportedFormat, binding_call, binding_keywords, cv_error
from .algorithms import FALLBACK_API, cpu, device, fallback_api, host, take_stream
from .common import gpumat_cls
from .fallback import count_fallback

_DEFAULT_CRITERIA = (cv2.TERM_CRITERIA_MAX_ITER + cv2.TERM_CRITERIA_EPS, 5, 1)


def _criteria(criteria):
    """(maxIter, eps) as CUDA's mean shift reads a TermCriteria."""
    kind, count, eps = criteria if criteria is not None else _DEFAULT_CRITERIA
    max_iter = min(max(int(count), 1), 100) if kind & cv2.TERM_CRITERIA_MAX_ITER else 5
    return max_iter, (max(float(eps), 0.0) if kind & cv2.TERM_CRITERIA_EPS else 1.0)


def _mean_shift(func, src, sp, sr, criteria):
    """(colours CV_8UC4, positions CV_16SC2) of every pixel's mean-shift procedure."""
    if src.ndim != 3 or src.shape[2] != 4 or src.dtype != np.uint8:
        raise cv_error(func, "only CV_8UC4 images are supported", StsUnsupportedFormat)
    sp, sr = int(sp), int(sr)
    max_iter, eps = _criteria(criteria)
    h, w = src.shape[:2]
    img = src[..., :3].astype(np.int64)
    ys, xs = np.mgrid[0:h, 0:w]
    x0, y0 = xs.ravel().copy(), ys.ravel().copy()
    colour = img.reshape(-1, 3).copy()
    live = np.arange(h * w)
    for _ in range(max_iter):
        if live.size == 0:
            break
        cx, cy, cc = x0[live], y0[live], colour[live]
        s = np.zeros((live.size, 3), np.int64)
        sx, sy, count = (np.zeros(live.size, np.int64) for _ in range(3))
        for dy in range(-sp, sp + 1):
            py = cy + dy
            rows = img[np.clip(py, 0, h - 1)]
            for dx in range(-sp, sp + 1):
                px = cx + dx
                t = rows[np.arange(live.size), np.clip(px, 0, w - 1)]
                d = t - cc
                near = (d * d).sum(1) <= sr * sr
                s += t * near[:, None]
                sx += px * near
                sy += py * near
                count += near
        moved = count > 0
        n = np.maximum(count, 1)
        x1, y1 = np.trunc(sx / n).astype(np.int64), np.trunc(sy / n).astype(np.int64)
        c1 = np.trunc(s / n[:, None]).astype(np.int64)
        step = np.abs(x1 - cx) + np.abs(y1 - cy) + ((c1 - cc) ** 2).sum(1)
        stop = ~moved | ((x1 == cx) & (y1 == cy)) | (step <= eps)
        upd = live[moved]
        x0[upd], y0[upd], colour[upd] = x1[moved], y1[moved], c1[moved]
        live = live[~stop]
    out = np.zeros((h, w, 4), np.uint8)
    out[..., :3] = colour.reshape(h, w, 3)
    pos = np.stack([x0, y0], 1).reshape(h, w, 2).astype(np.int16)
    return out, pos


def _split_dst_criteria(args, kw, n_out):
    """The ``[dst...][, criteria][, stream]`` tail of the mean-shift functions."""
    func = "meanShift"
    args, stream = take_stream(func, args, kw)
    outs = [a for a in args if not isinstance(a, (tuple, list))]
    crit = [a for a in args if isinstance(a, (tuple, list))]
    criteria = kw.pop("criteria", crit[0] if crit else None)
    return (outs + [None] * n_out)[:n_out], criteria


@fallback_api("meanShiftFiltering")
@binding_keywords("dst", "criteria", "stream", most=6)
def meanShiftFiltering(src, sp, sr, *args, **kw):
    """meanShiftFiltering(src, sp, sr[, dst[, criteria[, stream]]]) -> dst (CV_8UC4)."""
    func = "meanShiftFiltering"
    (dst,), criteria = _split_dst_criteria(args, kw, 1)
    colours, _ = _mean_shift(func, host(func, src), sp, sr, criteria)
    count_fallback(func, "CUDA's mean-shift procedure on the host")
    return device(colours, kw.pop("dst", dst))


@fallback_api("meanShiftProc")
@binding_keywords("dstr", "dstsp", "criteria", "stream", most=7)
def meanShiftProc(src, sp, sr, *args, **kw):
    """meanShiftProc(src, sp, sr[, dstr[, dstsp[, criteria[, stream]]]]) -> (dstr, dstsp)."""
    func = "meanShiftProc"
    (dstr, dstsp), criteria = _split_dst_criteria(args, kw, 2)
    colours, positions = _mean_shift(func, host(func, src), sp, sr, criteria)
    count_fallback(func, "CUDA's mean-shift procedure on the host")
    return device(colours, kw.pop("dstr", dstr)), device(positions, kw.pop("dstsp", dstsp))


@fallback_api("meanShiftSegmentation")
@binding_keywords("dst", "criteria", "stream", most=7)
def meanShiftSegmentation(src, sp, sr, minsize, *args, **kw):
    """meanShiftSegmentation(src, sp, sr, minsize[, dst[, criteria[, stream]]]) -> dst: CUDA's
    segmentation (mssegmentation.cpp): join 4-neighbours whose mapped positions are within sp
    and colours within sr, then merge segments smaller than minsize along the closest-colour
    edges; each pixel gets its segment's mean colour."""
    func = "meanShiftSegmentation"
    (dst,), criteria = _split_dst_criteria(args, kw, 1)
    colours, positions = _mean_shift(func, host(func, src), sp, sr, criteria)
    h, w = colours.shape[:2]
    col = colours[..., :3].reshape(-1, 3).astype(np.int64)
    pos = positions.reshape(-1, 2).astype(np.int64)
    idx = np.arange(h * w).reshape(h, w)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    dcol = ((col[a] - col[b]) ** 2).sum(1)
    dpos = ((pos[a] - pos[b]) ** 2).sum(1)
    parent = np.arange(h * w)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    size = np.ones(h * w, np.int64)

    def union(i, j):
        ri, rj = find(i), find(j)
        if ri != rj:
            if size[ri] < size[rj]:
                ri, rj = rj, ri
            parent[rj] = ri
            size[ri] += size[rj]

    close = (dpos <= int(sp) ** 2) & (dcol <= int(sr) ** 2)
    for i, j in zip(a[close].tolist(), b[close].tolist()):
        union(i, j)
    for e in np.argsort(dcol, kind="stable").tolist():
        ri, rj = find(a[e]), find(b[e])
        if ri != rj and (size[ri] < int(minsize) or size[rj] < int(minsize)):
            union(ri, rj)
    roots = np.array([find(i) for i in range(h * w)])
    sums = np.zeros((h * w, 3), np.int64)
    np.add.at(sums, roots, col)
    mean = sums[roots] // size[roots][:, None]
    out = np.zeros((h, w, 4), np.uint8)
    out[..., :3] = mean.reshape(h, w, 3)
    count_fallback(func, "CUDA's mean-shift segmentation on the host")
    return device(out, kw.pop("dst", dst))


def _plain(name, fn, n_in=1, why="CPU OpenCV's implementation"):
    """A cv2.cuda function ``name(src..., <fn's parameters>[, dst][, stream])`` whose result is
    ``fn(host inputs..., parameters...)``; an argument ``fn`` cannot take is the binding's
    cv2.error."""
    fn = binding_call(fn, name)

    def call(*args, **kw):
        args, _ = take_stream(name, args, kw)
        dst = kw.pop("dst", None)
        inputs = [host(name, a, f"src{i + 1}" if n_in > 1 else "src") for i, a in enumerate(args[:n_in])]
        rest = list(args[n_in:])
        outs = [a for a in rest if isinstance(a, gpumat_cls())]     # (the binding's dst follows the inputs)
        if outs:
            dst = dst if dst is not None else outs[0]
            rest = [a for a in rest if a is not outs[0]]
        out = cpu(name, lambda *a: fn(*a, *rest, **kw), *inputs, why=why)
        return device(out, dst)
    call.__name__ = name
    FALLBACK_API[name] = call
    return call


def _reproject(disp, Q, dst_cn=4):
    xyz = cv2.reprojectImageTo3D(disp, np.asarray(Q, np.float32))
    if int(dst_cn) == 4:
        xyz = np.concatenate([xyz, np.ones(xyz.shape[:2] + (1,), np.float32)], 2)
    return xyz


_plain("connectedComponents", lambda img, connectivity=8, ltype=cv2.CV_32S:
       cv2.connectedComponents(img, connectivity=int(connectivity), ltype=int(ltype))[1])
_plain("reprojectImageTo3D", _reproject, n_in=2)
_plain("mulSpectrums", lambda a, b, flags, conjB=False: cv2.mulSpectrums(a, b, int(flags), conjB=bool(conjB)), n_in=2)
_plain("mulAndScaleSpectrums", lambda a, b, flags, scale, conjB=False:
       cv2.mulSpectrums(a, b, int(flags), conjB=bool(conjB)) * np.float32(scale), n_in=2)
