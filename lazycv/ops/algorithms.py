"""cv2.cuda algorithms that CPU OpenCV also has (CLAHE, Canny, Hough, corners, template matching,
mean shift, background subtraction, optical flow, stereo): objects and functions with the CUDA
binding's signatures and result types, computed by CPU OpenCV on the downloaded inputs.

Why through CPU OpenCV: these are not pixel-parallel maps the fuser can express (iterative
searches, data-dependent outputs, global sorts); the CPU algorithm is OpenCV's own, so results
match what the same script gets from ``cv2``. Each call downloads its inputs (which runs any
pending lazycv work first, so a ``stream=`` argument's ordering holds), runs on the host, uploads
the result as a GpuMat, and counts one fallback (``lazycv.stats()["fallbacks"]``, a one-time
``lazycv.FallbackWarning``). Results the CUDA binding returns in device memory are GpuMats in
its layout (points as a 1xN two-channel row, lines as 1xN, ...).

``FALLBACK_API`` maps cv2.cuda names to them; facade/patch.py installs a name only where no fused
op of the same name is registered, and ``lazycv.supported()`` reports them as "fallback".
"""
import cv2
import numpy as np

import inspect

from ..errors import StsBadArg, StsNotImplemented, binding_call, binding_class, binding_keywords, cv_error, refuse_rest
from .common import check_stream, gpumat_cls, src_mat, stream_cls
from .fallback import count_fallback, run_cpu

FALLBACK_API = {}       # cv2.cuda name -> function or class


def fallback_api(name):
    """Register ``obj`` as ``cv2.cuda.<name>``; a function refuses an argument list it cannot take
    with cv2.error (errors.binding_call), as OpenCV's binding does."""
    def deco(obj):
        if inspect.isfunction(obj):
            obj = binding_call(obj, name)
        FALLBACK_API[name] = obj
        return obj
    return deco


# ---------------------------------------------------------------------------------------------
# moving data: the helpers every algorithm here uses

def host(func, m, name="src"):
    """A GpuMat argument's pixels on the host (a numpy array is taken as it is, as OpenCV's
    InputArray takes a Mat)."""
    if isinstance(m, np.ndarray):
        return m
    return src_mat(func, m, name).download()


def device(arr, dst=None):
    """A host result as a GpuMat (into ``dst`` when given); an empty result is an empty GpuMat."""
    GpuMat = gpumat_cls()
    if dst is not None and not isinstance(dst, GpuMat):
        raise cv_error("upload", f"dst must be a cv2.cuda.GpuMat, got {type(dst).__name__}", StsBadArg)
    out = GpuMat() if dst is None else dst
    if arr is None or np.asarray(arr).size == 0:
        out.release()
        return out
    out.upload(np.ascontiguousarray(arr))
    return out


def row_of(points, dtype, cn):
    """N points/lines/circles of ``cn`` values as OpenCV's CUDA detectors return them: one row
    of N ``cn``-channel pixels (1 x N); None when there are none."""
    if points is None or len(points) == 0:
        return None
    return np.asarray(points, dtype).reshape(1, -1, cn) if cn > 1 else np.asarray(points, dtype).reshape(1, -1)


def take_stream(func, args, kw):
    """Pop a trailing ``stream`` (positional Stream or keyword) and validate it."""
    Stream = stream_cls()
    stream = kw.pop("stream", None)
    rest = []
    for a in args:
        if isinstance(a, Stream) and stream is None:
            stream = a
        else:
            rest.append(a)
    check_stream(func, stream)
    return rest, stream


def unsupported_call(func, why):
    """cv2.error for a valid call nothing on this machine can compute."""
    return cv_error(func, f"not provided by lazycv: {why}", StsNotImplemented)


def cpu(func, fn, *args, why="CPU OpenCV's implementation"):
    """Run a CPU OpenCV call for ``func`` and count it as a fallback."""
    out = run_cpu(func, fn, *args)
    count_fallback(func, why)
    return out


@binding_class(name="Algorithm")
class CpuAlgorithm:
    """An Algorithm object of the CUDA binding: parameters with getX/setX accessors (the names
    in ``_params``), plus the cv::Algorithm methods scripts call. Every subclass's methods
    refuse an argument list they cannot take with cv2.error (errors.binding_class)."""
    _params = {}
    _name = "Algorithm"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        binding_class(cls)

    def __init__(self, **values):
        refuse_rest(self._binding_name, (), {k: v for k, v in values.items() if k not in self._params})
        self._p = {k: values.get(k, v) for k, v in self._params.items()}

    def __getattr__(self, attr):
        p = self.__dict__.get("_p", {})
        if attr[:3] in ("get", "set") and attr[3:] in p:
            key = attr[3:]
            name = f"{type(self)._binding_name}::{attr}"
            if attr.startswith("get"):
                return binding_call(lambda: p[key], name)
            return binding_call(lambda value: p.__setitem__(key, value), name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def getDefaultName(self):
        return f"cuda::{self._name}"

    def clear(self):
        """(cv::Algorithm) nothing cached here."""

    def empty(self):
        return False

    def collectGarbage(self):
        """(the CUDA objects free their buffers; the host ones hold none)"""

    def save(self, filename):
        raise unsupported_call(f"{self._name}::save", "the CUDA objects have no serialisation")

    def write(self, *args):
        self.save("")

    def read(self, *args):
        raise unsupported_call(f"{self._name}::read", "the CUDA objects have no serialisation")


def out_and_stream(func, args, kw, out_name):
    """(dst, stream) from ``[dst[, stream]]`` positionals and keywords (the method declares
    them with errors.binding_keywords: anything else is refused before the call)."""
    args, stream = take_stream(func, args, kw)
    dst = kw.pop(out_name, args[0] if args else None)
    return dst, stream


# ---------------------------------------------------------------------------------------------
# cudaimgproc

class CLAHE(CpuAlgorithm):
    """cv2.cuda.createCLAHE(clipLimit=40.0, tileGridSize=(8, 8)); apply(src, stream[, dst])."""
    _name = "CLAHE"
    _params = {"ClipLimit": 40.0, "TilesGridSize": (8, 8)}

    @binding_keywords("dst", "stream", most=3)
    def apply(self, src, *args, **kw):
        func = "CLAHE::apply"
        dst, _ = out_and_stream(func, args, kw, "dst")
        img = host(func, src)
        clahe = cv2.createCLAHE(float(self._p["ClipLimit"]), tuple(self._p["TilesGridSize"]))
        return device(cpu(func, clahe.apply, img), dst)


@fallback_api("createCLAHE")
def createCLAHE(clipLimit=40.0, tileGridSize=(8, 8)):
    return CLAHE(ClipLimit=clipLimit, TilesGridSize=tuple(tileGridSize))


class CannyEdgeDetector(CpuAlgorithm):
    """detect(image[, edges[, stream]]) or detect(dx, dy[, edges[, stream]]) (dx, dy CV_32S or
    CV_16S derivatives)."""
    _name = "CannyEdgeDetector"
    _params = {"LowThreshold": 0.0, "HighThreshold": 0.0, "AppertureSize": 3, "L2Gradient": False}

    @binding_keywords("image", "dx", "dy", "edges", "stream", most=4)
    def detect(self, *args, **kw):
        func = "CannyEdgeDetector::detect"
        args, _ = take_stream(func, args, kw)
        GpuMat = gpumat_cls()
        mats = [a for a in args if isinstance(a, (GpuMat, np.ndarray))]
        p = self._p
        if "dx" in kw or len(mats) >= 3:            # (two GpuMats are image, edges: the binding's order)
            dx = host(func, kw.pop("dx", mats[0] if mats else None), "dx")
            dy = host(func, kw.pop("dy", mats[1] if len(mats) > 1 else None), "dy")
            dst = kw.pop("edges", mats[2] if len(mats) > 2 else None)
            edges = cpu(func, lambda a, b: cv2.Canny(a, b, p["LowThreshold"], p["HighThreshold"],
                                                     L2gradient=bool(p["L2Gradient"])),
                        np.clip(dx, -32768, 32767).astype(np.int16), np.clip(dy, -32768, 32767).astype(np.int16))
            return device(edges, dst)
        img = host(func, kw.pop("image", mats[0] if mats else None), "image")
        dst = kw.pop("edges", mats[1] if len(mats) > 1 else None)
        edges = cpu(func, lambda a: cv2.Canny(a, p["LowThreshold"], p["HighThreshold"],
                                              apertureSize=int(p["AppertureSize"]), L2gradient=bool(p["L2Gradient"])),
                    img)
        return device(edges, dst)


@fallback_api("createCannyEdgeDetector")
def createCannyEdgeDetector(low_thresh, high_thresh, apperture_size=3, L2gradient=False):
    return CannyEdgeDetector(LowThreshold=float(low_thresh), HighThreshold=float(high_thresh),
                             AppertureSize=int(apperture_size), L2Gradient=bool(L2gradient))


class HoughLinesDetector(CpuAlgorithm):
    """detect(src[, lines[, stream]]) -> 1xN CV_32FC2 (rho, theta); downloadResults(d_lines)
    -> (h_lines, h_votes)."""
    _name = "HoughLinesDetector"
    _params = {"Rho": 1.0, "Theta": np.pi / 180, "Threshold": 1, "DoSort": False, "MaxLines": 4096}

    @binding_keywords("lines", "stream", most=3)
    def detect(self, src, *args, **kw):
        func = "HoughLinesDetector::detect"
        dst, _ = out_and_stream(func, args, kw, "lines")
        p = self._p
        found = cpu(func, lambda a: cv2.HoughLinesWithAccumulator(a, float(p["Rho"]), float(p["Theta"]),
                                                                  int(p["Threshold"])), host(func, src))
        found = np.zeros((0, 3), np.float32) if found is None else found.reshape(-1, 3)[:int(p["MaxLines"])]
        self._votes = found[:, 2].astype(np.int32)          # (CPU OpenCV sorts by votes already)
        return device(row_of(found[:, :2], np.float32, 2), dst)

    def downloadResults(self, d_lines, h_lines=None, h_votes=None, stream=None):
        func = "HoughLinesDetector::downloadResults"
        check_stream(func, stream)
        GpuMat = gpumat_cls()
        if isinstance(d_lines, GpuMat) and d_lines.empty():
            return None, None
        lines = host(func, d_lines, "d_lines")
        votes = getattr(self, "_votes", None)
        if votes is None or votes.size != lines.reshape(-1, 2).shape[0]:
            votes = None
        return lines, (votes.reshape(1, -1) if votes is not None else None)


@fallback_api("createHoughLinesDetector")
def createHoughLinesDetector(rho, theta, threshold, doSort=False, maxLines=4096):
    return HoughLinesDetector(Rho=float(rho), Theta=float(theta), Threshold=int(threshold),
                              DoSort=bool(doSort), MaxLines=int(maxLines))


class HoughSegmentDetector(CpuAlgorithm):
    """detect(src[, lines[, stream]]) -> 1xN CV_32SC4 (x1, y1, x2, y2). A threshold <= 0 (the
    CUDA default -1: every accumulator cell counts) is CPU OpenCV's smallest, 1."""
    _name = "HoughSegmentDetector"
    _params = {"Rho": 1.0, "Theta": np.pi / 180, "MinLineLength": 0, "MaxLineGap": 0, "MaxLines": 4096,
               "Threshold": -1}

    @binding_keywords("lines", "stream", most=3)
    def detect(self, src, *args, **kw):
        func = "HoughSegmentDetector::detect"
        dst, _ = out_and_stream(func, args, kw, "lines")
        p = self._p
        found = cpu(func, lambda a: cv2.HoughLinesP(a, float(p["Rho"]), float(p["Theta"]), max(int(p["Threshold"]), 1),
                                                    minLineLength=float(p["MinLineLength"]),
                                                    maxLineGap=float(p["MaxLineGap"])), host(func, src))
        found = None if found is None else found.reshape(-1, 4)[:int(p["MaxLines"])]
        return device(row_of(found, np.int32, 4), dst)


@fallback_api("createHoughSegmentDetector")
def createHoughSegmentDetector(rho, theta, minLineLength, maxLineGap, maxLines=4096, threshold=-1):
    return HoughSegmentDetector(Rho=float(rho), Theta=float(theta), MinLineLength=int(minLineLength),
                                MaxLineGap=int(maxLineGap), MaxLines=int(maxLines), Threshold=int(threshold))


class HoughCirclesDetector(CpuAlgorithm):
    """detect(src[, circles[, stream]]) -> 1xN CV_32FC3 (x, y, radius), HOUGH_GRADIENT."""
    _name = "HoughCirclesDetector"
    _params = {"Dp": 1.0, "MinDist": 1.0, "CannyThreshold": 100, "VotesThreshold": 100, "MinRadius": 0,
               "MaxRadius": 0, "MaxCircles": 4096}

    @binding_keywords("circles", "stream", most=3)
    def detect(self, src, *args, **kw):
        func = "HoughCirclesDetector::detect"
        dst, _ = out_and_stream(func, args, kw, "circles")
        p = self._p
        found = cpu(func, lambda a: cv2.HoughCircles(a, cv2.HOUGH_GRADIENT, float(p["Dp"]), float(p["MinDist"]),
                                                     param1=float(p["CannyThreshold"]),
                                                     param2=float(p["VotesThreshold"]),
                                                     minRadius=int(p["MinRadius"]), maxRadius=int(p["MaxRadius"])),
                    host(func, src))
        found = None if found is None else found.reshape(-1, 3)[:int(p["MaxCircles"])]
        return device(row_of(found, np.float32, 3), dst)


@fallback_api("createHoughCirclesDetector")
def createHoughCirclesDetector(dp, minDist, cannyThreshold, votesThreshold, minRadius, maxRadius, maxCircles=4096):
    return HoughCirclesDetector(Dp=float(dp), MinDist=float(minDist), CannyThreshold=int(cannyThreshold),
                                VotesThreshold=int(votesThreshold), MinRadius=int(minRadius),
                                MaxRadius=int(maxRadius), MaxCircles=int(maxCircles))


class CornernessCriteria(CpuAlgorithm):
    """compute(src[, dst[, stream]]) -> CV_32FC1 (cornerHarris or cornerMinEigenVal)."""
    _name = "CornernessCriteria"

    def __init__(self, kind, blockSize, ksize, k, borderType):
        super().__init__()
        self._kind, self._args = kind, (int(blockSize), int(ksize), float(k), int(borderType))

    @binding_keywords("dst", "stream", most=3)
    def compute(self, src, *args, **kw):
        func = f"{self._kind}::compute"
        dst, _ = out_and_stream(func, args, kw, "dst")
        block, ksize, k, border = self._args
        if self._kind == "HarrisCorner":
            fn = lambda a: cv2.cornerHarris(a, block, ksize, k, borderType=border)
        else:
            fn = lambda a: cv2.cornerMinEigenVal(a, block, ksize, borderType=border)
        return device(cpu(func, fn, host(func, src)), dst)


@fallback_api("createHarrisCorner")
def createHarrisCorner(srcType, blockSize, ksize, k, borderType=cv2.BORDER_REFLECT101):
    return CornernessCriteria("HarrisCorner", blockSize, ksize, k, borderType)


@fallback_api("createMinEigenValCorner")
def createMinEigenValCorner(srcType, blockSize, ksize, borderType=cv2.BORDER_REFLECT101):
    return CornernessCriteria("MinEigenValCorner", blockSize, ksize, 0.0, borderType)


class CornersDetector(CpuAlgorithm):
    """detect(image[, corners[, mask[, stream]]]) -> 1xN CV_32FC2 (goodFeaturesToTrack)."""
    _name = "CornersDetector"
    _params = {"MaxCorners": 1000, "QualityLevel": 0.01, "MinDistance": 0.0, "BlockSize": 3,
               "UseHarrisDetector": False, "HarrisK": 0.04}

    @binding_keywords("corners", "mask", "stream", most=4)
    def detect(self, image, *args, **kw):
        func = "CornersDetector::detect"
        args, _ = take_stream(func, args, kw)
        dst = kw.pop("corners", args[0] if args else None)
        mask = kw.pop("mask", args[1] if len(args) > 1 else None)
        p = self._p
        mask_h = None if mask is None or (isinstance(mask, gpumat_cls()) and mask.empty()) else host(func, mask, "mask")
        found = cpu(func, lambda a: cv2.goodFeaturesToTrack(
            a, int(p["MaxCorners"]), float(p["QualityLevel"]), float(p["MinDistance"]), mask=mask_h,
            blockSize=int(p["BlockSize"]), useHarrisDetector=bool(p["UseHarrisDetector"]), k=float(p["HarrisK"])),
            host(func, image, "image"))
        return device(row_of(found, np.float32, 2), dst)


@fallback_api("createGoodFeaturesToTrackDetector")
def createGoodFeaturesToTrackDetector(srcType, maxCorners=1000, qualityLevel=0.01, minDistance=0.0, blockSize=3,
                                      useHarrisDetector=False, harrisK=0.04):
    return CornersDetector(MaxCorners=int(maxCorners), QualityLevel=float(qualityLevel),
                           MinDistance=float(minDistance), BlockSize=int(blockSize),
                           UseHarrisDetector=bool(useHarrisDetector), HarrisK=float(harrisK))


class TemplateMatching(CpuAlgorithm):
    """match(image, templ[, result[, stream]]) -> CV_32FC1 (matchTemplate)."""
    _name = "TemplateMatching"

    def __init__(self, method):
        super().__init__()
        self._method = int(method)

    @binding_keywords("result", "stream", most=4)
    def match(self, image, templ, *args, **kw):
        func = "TemplateMatching::match"
        dst, _ = out_and_stream(func, args, kw, "result")
        out = cpu(func, lambda a, t: cv2.matchTemplate(a, t, self._method), host(func, image, "image"),
                  host(func, templ, "templ"))
        return device(out, dst)


@fallback_api("createTemplateMatching")
def createTemplateMatching(srcType, method, user_block_size=(0, 0)):
    return TemplateMatching(method)


class Convolution(CpuAlgorithm):
    """convolve(image, templ[, result[, ccorr[, stream]]]) -> the (W-w+1) x (H-h+1) valid part of
    the convolution (or, with ccorr, cross-correlation) of CV_32FC1 images."""
    _name = "Convolution"

    def convolve(self, image, templ, result=None, ccorr=False, stream=None):
        func = "Convolution::convolve"
        take_stream(func, [], {"stream": stream})
        t = host(func, templ, "templ")
        kernel = t if ccorr else np.ascontiguousarray(t[::-1, ::-1])
        out = cpu(func, lambda a: cv2.matchTemplate(a, kernel, cv2.TM_CCORR), host(func, image, "image"))
        return device(out, result)


@fallback_api("createConvolution")
def createConvolution(user_block_size=(0, 0)):
    return Convolution()


def _generalized_hough(name, create):
    """CPU OpenCV's object (the CUDA binding's detect takes host images too)."""
    def make():
        count_fallback(name, "CPU OpenCV's object")
        return create()
    make.__name__ = name
    fallback_api(name)(make)


_generalized_hough("createGeneralizedHoughBallard", cv2.createGeneralizedHoughBallard)
_generalized_hough("createGeneralizedHoughGuil", cv2.createGeneralizedHoughGuil)
for _cls in (CLAHE, CannyEdgeDetector, HoughLinesDetector, HoughSegmentDetector, HoughCirclesDetector,
             CornernessCriteria, CornersDetector, TemplateMatching, Convolution):
    FALLBACK_API[_cls.__name__] = _cls
