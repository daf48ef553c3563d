"""cv2.cuda's video algorithms through CPU OpenCV: background subtraction (MOG from cv2.bgsegm,
MOG2), optical flow (Farneback, Dual TV-L1 from cv2.optflow, pyramidal Lucas-Kanade sparse and
dense), stereo (block matching, semi-global matching) and cv2.cudacodec's reader and writer over
cv2.VideoCapture / cv2.VideoWriter. See algorithms.py for how a call runs and is counted."""
import cv2
import numpy as np

from ..errors import StsBadArg, binding_call, binding_class, binding_keywords, cv_error, refuse_rest
from .algorithms import (CpuAlgorithm, out_and_stream, cpu, device, fallback_api, host, row_of, take_stream,
                         unsupported_call)
from .common import gpumat_cls
from .fallback import count_fallback, cpu_opencv
from .mog import MogModel


# ---------------------------------------------------------------------------------------------
# cudabgsegm

class _BackgroundSubtractor(CpuAlgorithm):
    """apply(image, learningRate, stream[, fgmask]) and getBackgroundImage(stream[, bg]) of the
    CUDA binding (also apply(image[, fgmask[, learningRate]])); other get/set calls go to the CPU
    object, which has the same parameters."""

    def __init__(self, cpu_object):
        super().__init__()
        self._cpu = cpu_object

    def __getattr__(self, attr):
        if attr.startswith(("get", "set")):
            return getattr(self.__dict__["_cpu"], attr)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    @binding_keywords("learningRate", "fgmask", "stream", most=4)
    def apply(self, image, *args, **kw):
        func = f"{self._name}::apply"
        args, _ = take_stream(func, args, kw)
        nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        mats = [a for a in args if isinstance(a, gpumat_cls())]
        rate = float(kw.pop("learningRate", nums[0] if nums else -1.0))
        dst = kw.pop("fgmask", mats[0] if mats else None)
        fg = cpu(func, lambda a: self._cpu.apply(a, learningRate=rate), host(func, image, "image"))
        return device(fg, dst)

    @binding_keywords("backgroundImage", "stream", most=2)
    def getBackgroundImage(self, *args, **kw):
        func = f"{self._name}::getBackgroundImage"
        dst, _ = out_and_stream(func, args, kw, "backgroundImage")
        return device(cpu(func, self._cpu.getBackgroundImage), dst)


class BackgroundSubtractorMOG(_BackgroundSubtractor):
    """The foreground from cv2.bgsegm's MOG; the background image from the same mixture model
    kept beside it (ops/mog.py: CPU OpenCV's MOG keeps its model private)."""
    _name = "BackgroundSubtractorMOG"

    def __init__(self, cpu_object, model):
        super().__init__(cpu_object)
        self._model = model

    @binding_keywords("learningRate", "fgmask", "stream", most=4)
    def apply(self, image, *args, **kw):
        fg = super().apply(image, *args, **kw)
        nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        self._model.apply(host("BackgroundSubtractorMOG::apply", image, "image"),
                          float(kw.get("learningRate", nums[0] if nums else -1.0)))
        return fg

    @binding_keywords("backgroundImage", "stream", most=2)
    def getBackgroundImage(self, *args, **kw):
        func = "BackgroundSubtractorMOG::getBackgroundImage"
        dst, _ = out_and_stream(func, args, kw, "backgroundImage")
        if self._model.shape is None:
            raise cv_error(func, "no frame has been applied yet", StsBadArg)
        count_fallback(func, "the mixture model kept beside CPU OpenCV's")
        return device(self._model.background(), dst)


class BackgroundSubtractorMOG2(_BackgroundSubtractor):
    _name = "BackgroundSubtractorMOG2"


@fallback_api("createBackgroundSubtractorMOG")
def createBackgroundSubtractorMOG(history=200, nmixtures=5, backgroundRatio=0.7, noiseSigma=0):
    return BackgroundSubtractorMOG(cpu_opencv("createBackgroundSubtractorMOG", "bgsegm.createBackgroundSubtractorMOG")(
        int(history), int(nmixtures), float(backgroundRatio), float(noiseSigma)),
        MogModel(history, nmixtures, backgroundRatio, noiseSigma))


@fallback_api("createBackgroundSubtractorMOG2")
def createBackgroundSubtractorMOG2(history=500, varThreshold=16, detectShadows=True):
    return BackgroundSubtractorMOG2(cv2.createBackgroundSubtractorMOG2(int(history), float(varThreshold),
                                                                       bool(detectShadows)))


# ---------------------------------------------------------------------------------------------
# cudaoptflow

class _DenseFlow(CpuAlgorithm):
    """calc(I0, I1, flow[, stream]) -> flow (CV_32FC2); ``flow`` may be None."""

    def calc(self, I0, I1, flow=None, stream=None):
        func = f"{self._name}::calc"
        take_stream(func, [], {"stream": stream})
        GpuMat = gpumat_cls()
        initial = None
        if self._uses_initial_flow() and isinstance(flow, GpuMat) and not flow.empty():
            initial = flow.download()
        out = cpu(func, lambda a, b: self._flow(a, b, initial), host(func, I0, "I0"), host(func, I1, "I1"))
        return device(out.astype(np.float32), flow if isinstance(flow, GpuMat) else None)

    def _uses_initial_flow(self):
        return bool(self._p.get("UseInitialFlow", False))


class FarnebackOpticalFlow(_DenseFlow):
    _name = "FarnebackOpticalFlow"
    _params = {"NumLevels": 5, "PyrScale": 0.5, "FastPyramids": False, "WinSize": 13, "NumIters": 10,
               "PolyN": 5, "PolySigma": 1.1, "Flags": 0}

    @staticmethod
    def create(numLevels=5, pyrScale=0.5, fastPyramids=False, winSize=13, numIters=10, polyN=5, polySigma=1.1,
               flags=0):
        return FarnebackOpticalFlow(NumLevels=numLevels, PyrScale=pyrScale, FastPyramids=fastPyramids,
                                    WinSize=winSize, NumIters=numIters, PolyN=polyN, PolySigma=polySigma,
                                    Flags=flags)

    def _uses_initial_flow(self):
        return bool(int(self._p["Flags"]) & cv2.OPTFLOW_USE_INITIAL_FLOW)

    def _flow(self, a, b, initial):
        p = self._p
        return cv2.calcOpticalFlowFarneback(a, b, initial, float(p["PyrScale"]), int(p["NumLevels"]),
                                            int(p["WinSize"]), int(p["NumIters"]), int(p["PolyN"]),
                                            float(p["PolySigma"]), int(p["Flags"]))


class OpticalFlowDual_TVL1(_DenseFlow):
    """CUDA's ``iterations`` (per warp) is CPU OpenCV's outer x inner iterations (inner 30), and
    CPU OpenCV's median filtering of the flow, which CUDA does not do, is off."""
    _name = "OpticalFlowDual_TVL1"
    _params = {"Tau": 0.25, "Lambda": 0.15, "Theta": 0.3, "NumScales": 5, "NumWarps": 5, "Epsilon": 0.01,
               "NumIterations": 300, "ScaleStep": 0.8, "Gamma": 0.0, "UseInitialFlow": False}

    @staticmethod
    def create(tau=0.25, lambda_=0.15, theta=0.3, nscales=5, warps=5, epsilon=0.01, iterations=300, scaleStep=0.8,
               gamma=0.0, useInitialFlow=False):
        return OpticalFlowDual_TVL1(Tau=tau, Lambda=lambda_, Theta=theta, NumScales=nscales, NumWarps=warps,
                                    Epsilon=epsilon, NumIterations=iterations, ScaleStep=scaleStep, Gamma=gamma,
                                    UseInitialFlow=useInitialFlow)

    def _flow(self, a, b, initial):
        p, inner = self._p, 30
        tvl1 = cpu_opencv("OpticalFlowDual_TVL1", "optflow.DualTVL1OpticalFlow_create")()
        for setter, value in (("Tau", p["Tau"]), ("Lambda", p["Lambda"]), ("Theta", p["Theta"]),
                              ("ScalesNumber", int(p["NumScales"])), ("WarpingsNumber", int(p["NumWarps"])),
                              ("Epsilon", p["Epsilon"]), ("InnerIterations", inner),
                              ("OuterIterations", max(1, -(-int(p["NumIterations"]) // inner))),
                              ("ScaleStep", p["ScaleStep"]), ("Gamma", p["Gamma"]), ("MedianFiltering", 1),
                              ("UseInitialFlow", initial is not None)):
            getattr(tvl1, "set" + setter)(value)
        return tvl1.calc(a, b, initial)


def _lk(p, a, b, points, initial):
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, int(p["NumIters"]), 0.01)
    flags = cv2.OPTFLOW_USE_INITIAL_FLOW if initial is not None else 0
    return cv2.calcOpticalFlowPyrLK(a, b, points, initial, winSize=tuple(p["WinSize"]), maxLevel=int(p["MaxLevel"]),
                                    criteria=criteria, flags=flags)


_LK_PARAMS = {"WinSize": (21, 21), "MaxLevel": 3, "NumIters": 30, "UseInitialFlow": False}


class SparsePyrLKOpticalFlow(CpuAlgorithm):
    """calc(prevImg, nextImg, prevPts, nextPts[, status[, err[, stream]]]) -> (nextPts, status,
    err): points as 1xN CV_32FC2, status 1xN CV_8UC1, err 1xN CV_32FC1."""
    _name = "SparsePyrLKOpticalFlow"
    _params = _LK_PARAMS

    @staticmethod
    def create(winSize=(21, 21), maxLevel=3, iters=30, useInitialFlow=False):
        return SparsePyrLKOpticalFlow(WinSize=tuple(winSize), MaxLevel=maxLevel, NumIters=iters,
                                      UseInitialFlow=useInitialFlow)

    def calc(self, prevImg, nextImg, prevPts, nextPts=None, status=None, err=None, stream=None):
        func = "SparsePyrLKOpticalFlow::calc"
        take_stream(func, [], {"stream": stream})
        GpuMat = gpumat_cls()
        pts = host(func, prevPts, "prevPts").reshape(-1, 1, 2).astype(np.float32)
        initial = None
        if self._p["UseInitialFlow"] and isinstance(nextPts, GpuMat) and not nextPts.empty():
            initial = nextPts.download().reshape(-1, 1, 2).astype(np.float32)
        new, st, er = cpu(func, lambda a, b: _lk(self._p, a, b, pts, initial), host(func, prevImg, "prevImg"),
                          host(func, nextImg, "nextImg"))
        as_dst = lambda m: m if isinstance(m, GpuMat) else None
        return (device(row_of(new, np.float32, 2), as_dst(nextPts)), device(row_of(st, np.uint8, 1), as_dst(status)),
                device(row_of(er, np.float32, 1), as_dst(err)))


class DensePyrLKOpticalFlow(_DenseFlow):
    """The sparse tracker run from every pixel: flow = tracked position - pixel position."""
    _name = "DensePyrLKOpticalFlow"
    _params = dict(_LK_PARAMS, WinSize=(13, 13))

    @staticmethod
    def create(winSize=(13, 13), maxLevel=3, iters=30, useInitialFlow=False):
        return DensePyrLKOpticalFlow(WinSize=tuple(winSize), MaxLevel=maxLevel, NumIters=iters,
                                     UseInitialFlow=useInitialFlow)

    def _flow(self, a, b, initial):
        h, w = a.shape[:2]
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        pts = np.stack([xs, ys], 2).reshape(-1, 1, 2)
        start = None if initial is None else (pts + initial.reshape(-1, 1, 2)).astype(np.float32)
        new, _, _ = _lk(self._p, a, b, pts, start)
        return (new - pts).reshape(h, w, 2)


for _cls in (FarnebackOpticalFlow, OpticalFlowDual_TVL1, SparsePyrLKOpticalFlow, DensePyrLKOpticalFlow):
    fallback_api(_cls.__name__)(_cls)
    fallback_api(f"{_cls.__name__}_create")(_cls.create)


# ---------------------------------------------------------------------------------------------
# cudastereo

class StereoBM(_BackgroundSubtractor):
    """compute(left, right, stream[, disparity]) -> CV_8UC1 disparity (the CUDA module's type:
    CPU OpenCV's 16-bit fixed point with 4 fractional bits, divided by 16; invalid is 0);
    parameters as cv::StereoBM's."""
    _name = "StereoBM"

    @binding_keywords("disparity", "stream", most=4)
    def compute(self, left, right, *args, **kw):
        func = "StereoBM::compute"
        dst, _ = out_and_stream(func, args, kw, "disparity")
        disp = cpu(func, self._cpu.compute, host(func, left, "left"), host(func, right, "right"))
        return device(np.clip(disp // 16, 0, 255).astype(np.uint8), dst)


class StereoSGM(_BackgroundSubtractor):
    """compute(left, right[, disparity]) / compute_with_stream(left, right, stream[, disparity])
    -> CV_16SC1 with 4 fractional bits (cv::StereoSGBM with CUDA's parameters)."""
    _name = "StereoSGM"

    def compute(self, left, right, disparity=None):
        func = "StereoSGM::compute"
        disp = cpu(func, self._cpu.compute, host(func, left, "left"), host(func, right, "right"))
        return device(disp, disparity)

    def compute_with_stream(self, left, right, stream, disparity=None):
        take_stream("StereoSGM::compute_with_stream", [], {"stream": stream})
        return self.compute(left, right, disparity)


@fallback_api("createStereoBM")
def createStereoBM(numDisparities=64, blockSize=19):
    return StereoBM(cv2.StereoBM_create(int(numDisparities), int(blockSize)))


@fallback_api("createStereoSGM")
def createStereoSGM(minDisparity=0, numDisparities=128, P1=10, P2=120, uniquenessRatio=5,
                    mode=cv2.STEREO_SGBM_MODE_HH4):
    return StereoSGM(cv2.StereoSGBM_create(minDisparity=int(minDisparity), numDisparities=int(numDisparities),
                                           blockSize=1, P1=int(P1), P2=int(P2), uniquenessRatio=int(uniquenessRatio),
                                           mode=int(mode)))


# ---------------------------------------------------------------------------------------------
# cv2.cudacodec: NVIDIA's decoder and encoder, replaced by CPU OpenCV's videoio (FFmpeg)

CODEC_API = {}          # cv2.cudacodec name -> function or class


def _codec_struct(name, fields):
    """A CV_EXPORTS_W_SIMPLE struct of cudacodec: a plain object with the header's defaults."""
    def __init__(self, **kw):
        refuse_rest(f"cudacodec::{name}", (), {k: v for k, v in kw.items() if k not in fields})
        for k, v in fields.items():
            setattr(self, k, kw.get(k, v() if callable(v) else v))
    attrs = {"__init__": __init__, "__doc__": f"cv2.cudacodec.{name} (fields as OpenCV's header)",
             "__repr__": lambda self: f"cudacodec.{name}({vars(self)})"}
    cls = binding_class(type(name, (), attrs), name=f"cudacodec::{name}")
    CODEC_API[name] = cls
    return cls


EncodeQp = _codec_struct("EncodeQp", {"qpInterP": 0, "qpInterB": 0, "qpIntra": 0})
EncoderParams = _codec_struct("EncoderParams", {
    "nvPreset": 3, "tuningInfo": 1, "encodingProfile": 0, "rateControlMode": 1, "multiPassEncoding": 0,
    "constQp": EncodeQp, "averageBitRate": 0, "maxBitRate": 0, "targetQuality": 30, "gopLength": 0})
FormatInfo = _codec_struct("FormatInfo", {
    "codec": 0, "chromaFormat": 1, "nBitDepthMinus8": -1, "nBitDepthChromaMinus8": -1, "ulWidth": 0, "ulHeight": 0,
    "width": 0, "height": 0, "displayArea": (0, 0, 0, 0), "valid": False, "fps": 0.0, "ulNumDecodeSurfaces": 0,
    "deinterlaceMode": 0, "targetSz": (0, 0), "srcRoi": (0, 0, 0, 0), "targetRoi": (0, 0, 0, 0),
    "videoFullRangeFlag": False})
VideoReaderInitParams = _codec_struct("VideoReaderInitParams", {
    "udpSource": False, "allowFrameDrop": False, "minNumDecodeSurfaces": 0, "rawMode": False, "targetSz": (0, 0),
    "srcRoi": (0, 0, 0, 0), "targetRoi": (0, 0, 0, 0)})

# cudacodec::ColorFormat -> the cvtColor code from the decoder's BGR (None: BGR as it is)
_FROM_BGR = {1: cv2.COLOR_BGR2BGRA, 2: None, 3: cv2.COLOR_BGR2GRAY, 5: cv2.COLOR_BGR2RGB, 6: cv2.COLOR_BGR2RGBA}
_TO_BGR = {1: cv2.COLOR_BGRA2BGR, 2: None, 3: cv2.COLOR_GRAY2BGR, 5: cv2.COLOR_RGB2BGR, 6: cv2.COLOR_RGBA2BGR}
_PROP_COLOR_FORMAT, _PROP_RAW_MODE, _PROP_DECODED_FRAME_IDX = 6, 4, 0
_FOURCC = {4: "avc1", 8: "hev1", 2: "mp4v", 1: "MPG2", 0: "MPG1", 9: "VP80", 10: "VP90", 11: "av01"}


@binding_class(name="cudacodec::VideoReader")
class VideoReader:
    """cv2.cudacodec.VideoReader over cv2.VideoCapture: frames come as GpuMats in the reader's
    ColorFormat (BGRA by default, as NVIDIA's decoder gives them). Raw encoded packets
    (rawMode) are not available through VideoCapture: retrieve(idx) of one returns False."""

    def __init__(self, filename, sourceParams, params):
        func = "cudacodec::createVideoReader"
        self._cap = cv2.VideoCapture(filename, cv2.CAP_ANY, [int(v) for v in sourceParams])
        if not self._cap.isOpened():
            raise unsupported_call(func, f"CPU OpenCV's VideoCapture cannot open {filename!r}")
        self._params = params
        self._color = 1
        self._frame = None
        self._source_params = dict(zip(sourceParams[::2], sourceParams[1::2]))

    def grab(self, stream=None):
        take_stream("cudacodec::VideoReader::grab", [], {"stream": stream})
        ok, frame = self._cap.read()
        self._frame = frame if ok else None
        return bool(ok)

    def retrieve(self, frame=None, idx=None):
        """retrieve([frame]) -> (ret, GpuMat), or ret when ``frame`` is given; retrieve(idx) ->
        (ret, host data)."""
        if isinstance(frame, (int, np.integer)) and idx is None:
            frame, idx = None, int(frame)
        if idx is not None and int(idx) != _PROP_DECODED_FRAME_IDX:
            return False, np.empty((0,), np.uint8)
        ok, out = self._decoded(frame)
        return (ok, out) if frame is None else ok

    def nextFrame(self, frame=None, stream=None):
        if not self.grab(stream):
            return False, gpumat_cls()() if frame is None else frame
        return self._decoded(frame)

    def _decoded(self, frame):
        """(ret, GpuMat) of the grabbed frame in the reader's ColorFormat."""
        if self._frame is None:
            return False, gpumat_cls()() if frame is None else frame
        code = _FROM_BGR.get(self._color)
        img = self._frame if code is None else cv2.cvtColor(self._frame, code)
        count_fallback("cudacodec::VideoReader", "decoded by CPU OpenCV's VideoCapture")
        return True, device(img, frame)

    def format(self):
        cap = self._cap
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        return FormatInfo(width=w, height=h, ulWidth=w, ulHeight=h, valid=w > 0, fps=cap.get(cv2.CAP_PROP_FPS),
                          displayArea=(0, 0, w, h), targetSz=(w, h))

    def set(self, colorFormat, propertyVal=None):
        """set(colorFormat) -> True unless it is not one of BGRA, BGR, GRAY, RGB, RGBA."""
        if propertyVal is not None:
            return self.setVideoReaderProps(colorFormat, propertyVal)
        if int(colorFormat) not in _FROM_BGR:
            return False
        self._color = int(colorFormat)
        return True

    def setVideoReaderProps(self, propertyId, propertyVal):
        if int(propertyId) == _PROP_COLOR_FORMAT:
            return self.set(int(propertyVal))
        return False

    def getVideoReaderProps(self, propertyId, propertyValIn=0):
        prop = int(propertyId)
        if prop == _PROP_COLOR_FORMAT:
            return True, float(self._color)
        if prop == _PROP_RAW_MODE:
            return True, float(bool(self._params.rawMode))
        if prop in (0, 1, 2):                     # the indices retrieve() takes
            return True, float(prop)
        return False, 0.0

    def get(self, propertyId):
        prop = int(propertyId)
        if prop in self._source_params:
            return True, float(self._source_params[prop])
        value = self._cap.get(prop)
        return value != -1, value


@binding_class(name="cudacodec::VideoWriter")
class VideoWriter:
    """cv2.cudacodec.VideoWriter over cv2.VideoWriter: write(GpuMat) downloads the frame and
    CPU OpenCV (FFmpeg) encodes it."""

    def __init__(self, fileName, frameSize, codec, fps, colorFormat, params):
        func = "cudacodec::createVideoWriter"
        fourcc = cv2.VideoWriter_fourcc(*_FOURCC.get(int(codec), "avc1"))
        self._size = (int(frameSize[0]), int(frameSize[1]))
        self._writer = cv2.VideoWriter(fileName, cv2.CAP_FFMPEG, fourcc, float(fps), self._size)
        if not self._writer.isOpened():
            raise unsupported_call(func, f"CPU OpenCV's VideoWriter cannot encode codec {int(codec)} into "
                                         f"{fileName!r} (this OpenCV's FFmpeg has no such encoder)")
        self._color = int(colorFormat)
        self._params = params if params is not None else EncoderParams()

    def write(self, frame):
        func = "cudacodec::VideoWriter::write"
        img = host(func, frame, "frame")
        code = _TO_BGR.get(self._color)
        cpu(func, self._writer.write, img if code is None else cv2.cvtColor(img, code),
            why="encoded by CPU OpenCV's VideoWriter")

    def getEncoderParams(self):
        return self._params

    def release(self):
        self._writer.release()


def createVideoReader(filename, sourceParams=(), params=None):
    if not isinstance(filename, str):
        raise unsupported_call("cudacodec::createVideoReader", "a RawVideoSource needs NVIDIA's decoder")
    return VideoReader(filename, list(sourceParams), params if params is not None else VideoReaderInitParams())


def createVideoWriter(fileName, frameSize, codec=4, fps=25.0, colorFormat=2, params=None, encoderCallback=None,
                      stream=None):
    """(fileName, frameSize[, codec[, fps[, colorFormat[, params][, encoderCallback[, stream]]]]])"""
    take_stream("cudacodec::createVideoWriter", [], {"stream": stream})
    if params is not None and not isinstance(params, EncoderParams):
        params, encoderCallback = None, params
    if encoderCallback is not None:
        raise unsupported_call("cudacodec::createVideoWriter", "an EncoderCallback needs NVIDIA's encoder")
    return VideoWriter(fileName, frameSize, codec, fps, colorFormat, params)


CODEC_API.update(VideoReader=VideoReader, VideoWriter=VideoWriter,
                 createVideoReader=binding_call(createVideoReader, "cudacodec::createVideoReader"),
                 createVideoWriter=binding_call(createVideoWriter, "cudacodec::createVideoWriter"))


for _cls in (BackgroundSubtractorMOG, BackgroundSubtractorMOG2, StereoBM, StereoSGM):
    fallback_api(_cls.__name__)(_cls)
fallback_api("DenseOpticalFlow")(_DenseFlow)
