"""cv2.cuda's features and object detection through CPU OpenCV: FAST and ORB (detectors and
descriptors), the brute-force descriptor matcher, HOG and the cascade classifier. See
algorithms.py for how a call runs and is counted.

Keypoints in device memory use the CUDA modules' layouts, so ``convert`` turns them back into
``cv2.KeyPoint``s: ORB's is a ROWS_COUNT x N CV_32FC1 matrix (x, y, response, angle, octave,
size rows); FAST's a 2 x N matrix whose first row holds each point's (x, y) as two int16 in the
bits of one float, the second its response. Asynchronous matches are a 4 x N CV_32FC1 matrix of
(queryIdx, trainIdx, imgIdx, distance) columns, a query with no match holding trainIdx -1.
"""
import cv2
import numpy as np

from .algorithms import CpuAlgorithm, cpu, device, fallback_api, host, take_stream, unsupported_call
from .common import gpumat_cls
from .fallback import cpu_opencv

_ORB_ROWS = 6


def _keypoints_orb(kps):
    if not kps:
        return None
    return np.array([[k.pt[0] for k in kps], [k.pt[1] for k in kps], [k.response for k in kps],
                     [k.angle for k in kps], [k.octave for k in kps], [k.size for k in kps]], np.float32)


def _keypoints_fast(kps):
    if not kps:
        return None
    xy = np.array([[int(round(k.pt[0])), int(round(k.pt[1]))] for k in kps], np.int16)
    return np.stack([xy.reshape(-1).view(np.float32), np.array([k.response for k in kps], np.float32)])


class _Feature2DAsync(CpuAlgorithm):
    """cuda::Feature2DAsync: the cv::Feature2D calls (host keypoints) and the Async ones (device
    keypoints, which ``convert`` reads), all by the CPU detector of the same name."""

    def _cpu_detector(self):
        raise NotImplementedError

    def _gpu_layout(self, kps):
        raise NotImplementedError

    def _mask(self, func, mask):
        if mask is None or (isinstance(mask, gpumat_cls()) and mask.empty()):
            return None
        return host(func, mask, "mask")

    def detect(self, image, mask=None):
        func = f"{self._name}::detect"
        return cpu(func, lambda a: self._cpu_detector().detect(a, self._mask(func, mask)), host(func, image, "image"))

    def detectAndCompute(self, image, mask, descriptors=None, useProvidedKeypoints=False):
        func = f"{self._name}::detectAndCompute"
        kps, desc = cpu(func, lambda a: self._cpu_detector().detectAndCompute(a, self._mask(func, mask)),
                        host(func, image, "image"))
        return kps, desc

    def compute(self, image, keypoints, descriptors=None):
        func = f"{self._name}::compute"
        return cpu(func, lambda a: self._cpu_detector().compute(a, keypoints), host(func, image, "image"))

    def detectAsync(self, image, keypoints=None, mask=None, stream=None):
        take_stream(f"{self._name}::detectAsync", [], {"stream": stream})
        return device(self._gpu_layout(self.detect(image, mask)), keypoints)

    def detectAndComputeAsync(self, image, mask, keypoints=None, descriptors=None, useProvidedKeypoints=False,
                              stream=None):
        take_stream(f"{self._name}::detectAndComputeAsync", [], {"stream": stream})
        if useProvidedKeypoints:
            kps, desc = self.compute(image, self.convert(keypoints))
        else:
            kps, desc = self.detectAndCompute(image, mask)
        return device(self._gpu_layout(kps), keypoints), device(desc, descriptors)

    def computeAsync(self, image, keypoints=None, descriptors=None, stream=None):
        return self.detectAndComputeAsync(image, None, keypoints, descriptors, True, stream)

    def defaultNorm(self):
        return self._cpu_detector().defaultNorm()

    def descriptorSize(self):
        return self._cpu_detector().descriptorSize()

    def descriptorType(self):
        return self._cpu_detector().descriptorType()


class FastFeatureDetector(_Feature2DAsync):
    _name = "FastFeatureDetector"
    _params = {"Threshold": 10, "NonmaxSuppression": True, "Type": cv2.FAST_FEATURE_DETECTOR_TYPE_9_16,
               "MaxNumPoints": 5000}

    @staticmethod
    def create(threshold=10, nonmaxSuppression=True, type=cv2.FAST_FEATURE_DETECTOR_TYPE_9_16, max_npoints=5000):
        return FastFeatureDetector(Threshold=int(threshold), NonmaxSuppression=bool(nonmaxSuppression),
                                   Type=int(type), MaxNumPoints=int(max_npoints))

    def _cpu_detector(self):
        p = self._p
        return cv2.FastFeatureDetector_create(int(p["Threshold"]), bool(p["NonmaxSuppression"]), int(p["Type"]))

    def detect(self, image, mask=None):
        kps = super().detect(image, mask)
        return sorted(kps, key=lambda k: -k.response)[:int(self._p["MaxNumPoints"])]

    def _gpu_layout(self, kps):
        return _keypoints_fast(kps)

    def convert(self, gpu_keypoints):
        m = host("FastFeatureDetector::convert", gpu_keypoints, "gpu_keypoints")
        xy = np.ascontiguousarray(m[0]).view(np.int16).reshape(-1, 2)
        return [cv2.KeyPoint(float(x), float(y), 7.0, -1.0, float(r)) for (x, y), r in zip(xy, m[1])]


class ORB(_Feature2DAsync):
    """Blurring before the descriptors (CUDA's blurForDescriptor) is what CPU OpenCV's ORB always
    does, so the flag is kept for its getter only."""
    _name = "ORB"
    _params = {"MaxFeatures": 500, "ScaleFactor": 1.2, "NLevels": 8, "EdgeThreshold": 31, "FirstLevel": 0,
               "WTA_K": 2, "ScoreType": cv2.ORB_HARRIS_SCORE, "PatchSize": 31, "FastThreshold": 20,
               "BlurForDescriptor": False}

    @staticmethod
    def create(nfeatures=500, scaleFactor=1.2, nlevels=8, edgeThreshold=31, firstLevel=0, WTA_K=2,
               scoreType=cv2.ORB_HARRIS_SCORE, patchSize=31, fastThreshold=20, blurForDescriptor=False):
        return ORB(MaxFeatures=nfeatures, ScaleFactor=scaleFactor, NLevels=nlevels, EdgeThreshold=edgeThreshold,
                   FirstLevel=firstLevel, WTA_K=WTA_K, ScoreType=scoreType, PatchSize=patchSize,
                   FastThreshold=fastThreshold, BlurForDescriptor=blurForDescriptor)

    def _cpu_detector(self):
        p = self._p
        return cv2.ORB_create(int(p["MaxFeatures"]), float(p["ScaleFactor"]), int(p["NLevels"]),
                              int(p["EdgeThreshold"]), int(p["FirstLevel"]), int(p["WTA_K"]), int(p["ScoreType"]),
                              int(p["PatchSize"]), int(p["FastThreshold"]))

    def _gpu_layout(self, kps):
        return _keypoints_orb(kps)

    def convert(self, gpu_keypoints):
        m = host("ORB::convert", gpu_keypoints, "gpu_keypoints").reshape(_ORB_ROWS, -1)
        return [cv2.KeyPoint(float(x), float(y), float(s), float(a), float(r), int(o))
                for x, y, r, a, o, s in zip(*m)]


def _matches_layout(groups):
    """4 x N CV_32FC1 of (queryIdx, trainIdx, imgIdx, distance), a -1 trainIdx for no match."""
    cols = []
    for q, group in enumerate(groups):
        cols += [(m.queryIdx, m.trainIdx, m.imgIdx, m.distance) for m in group] or [(q, -1, -1, 0.0)]
    return np.array(cols, np.float32).T if cols else None


class DescriptorMatcher(CpuAlgorithm):
    """cv2.cuda.DescriptorMatcher_createBFMatcher(normType): cv2.BFMatcher on host descriptors."""
    _name = "DescriptorMatcher"

    def __init__(self, normType):
        super().__init__()
        self._norm = int(normType)
        self._bf = cv2.BFMatcher(self._norm)
        self._train = []

    @staticmethod
    def createBFMatcher(normType=cv2.NORM_L2):
        return DescriptorMatcher(normType)

    def isMaskSupported(self):
        return True

    def add(self, descriptors):
        self._train += list(descriptors)

    def getTrainDescriptors(self):
        return list(self._train)

    def clear(self):
        self._train = []

    def empty(self):
        return not self._train

    def train(self):
        """(brute force: nothing to train)"""

    def _run(self, what, query, train, mask, *extra):
        func = f"DescriptorMatcher::{what}"
        q = host(func, query, "queryDescriptors")
        if train is None:
            matcher = cv2.BFMatcher(self._norm)
            matcher.add([host(func, t, "trainDescriptors") for t in self._train])
            return cpu(func, lambda a: getattr(matcher, what)(a, *extra), q)
        t = host(func, train, "trainDescriptors")
        m = None if mask is None else host(func, mask, "mask")
        return cpu(func, lambda a, b: getattr(self._bf, what)(a, b, *extra, mask=m), q, t)

    def match(self, queryDescriptors, trainDescriptors=None, mask=None):
        return self._run("match", queryDescriptors, trainDescriptors, mask)

    def knnMatch(self, queryDescriptors, trainDescriptors, k=None, mask=None, compactResult=False):
        if k is None:                               # knnMatch(query, k): the added collection
            trainDescriptors, k = None, trainDescriptors
        return self._run("knnMatch", queryDescriptors, trainDescriptors, mask, int(k))

    def radiusMatch(self, queryDescriptors, trainDescriptors, maxDistance=None, mask=None, compactResult=False):
        if maxDistance is None:
            trainDescriptors, maxDistance = None, trainDescriptors
        return self._run("radiusMatch", queryDescriptors, trainDescriptors, mask, float(maxDistance))

    def matchAsync(self, queryDescriptors, trainDescriptors, matches=None, mask=None, stream=None):
        take_stream("DescriptorMatcher::matchAsync", [], {"stream": stream})
        return device(_matches_layout([[m] for m in self.match(queryDescriptors, trainDescriptors, mask)]), matches)

    def knnMatchAsync(self, queryDescriptors, trainDescriptors, k, matches=None, mask=None, stream=None):
        take_stream("DescriptorMatcher::knnMatchAsync", [], {"stream": stream})
        return device(_matches_layout(self.knnMatch(queryDescriptors, trainDescriptors, k, mask)), matches)

    def radiusMatchAsync(self, queryDescriptors, trainDescriptors, maxDistance, matches=None, mask=None,
                         stream=None):
        take_stream("DescriptorMatcher::radiusMatchAsync", [], {"stream": stream})
        return device(_matches_layout(self.radiusMatch(queryDescriptors, trainDescriptors, maxDistance, mask)),
                      matches)

    def knnMatchConvert(self, gpu_matches, compactResult=False):
        GpuMat = gpumat_cls()
        if isinstance(gpu_matches, GpuMat) and gpu_matches.empty():
            return []
        m = host("DescriptorMatcher::knnMatchConvert", gpu_matches, "gpu_matches").reshape(4, -1)
        groups = {}
        for q, t, i, d in zip(*m):
            group = groups.setdefault(int(q), [])
            if t >= 0:
                group.append(cv2.DMatch(int(q), int(t), int(i), float(d)))
        return [g for _, g in sorted(groups.items()) if g or not compactResult]

    radiusMatchConvert = knnMatchConvert

    def matchConvert(self, gpu_matches):
        return [g[0] for g in self.knnMatchConvert(gpu_matches, True)]


class HOG(CpuAlgorithm):
    """cv2.cuda.HOG.create(win_size, block_size, block_stride, cell_size, nbins) over
    cv2.HOGDescriptor (a 4-channel image is taken as BGRA)."""
    _name = "HOG"
    _params = {"WinSigma": -1.0, "L2HysThreshold": 0.2, "GammaCorrection": True, "NumLevels": 64,
               "HitThreshold": 0.0, "WinStride": (8, 8), "ScaleFactor": 1.05, "GroupThreshold": 2,
               "DescriptorFormat": getattr(cv2, "HOGDescriptor_DESCR_FORMAT_COL_BY_COL", 1)}

    def __init__(self, win, block, stride, cell, nbins):
        cpu_opencv("HOG", "HOGDescriptor")                # (at create: a plain OpenCV 5 has none)
        super().__init__(WinStride=tuple(stride))
        self._geometry = (tuple(win), tuple(block), tuple(stride), tuple(cell), int(nbins))
        self._svm = np.zeros((0,), np.float32)

    @staticmethod
    def create(win_size=(64, 128), block_size=(16, 16), block_stride=(8, 8), cell_size=(8, 8), nbins=9):
        return HOG(win_size, block_size, block_stride, cell_size, nbins)

    def _hog(self):
        p = self._p
        make = cpu_opencv("HOG", "HOGDescriptor")
        d = make(*self._geometry, 1, float(p["WinSigma"]), 0, float(p["L2HysThreshold"]),
                 bool(p["GammaCorrection"]), int(p["NumLevels"]))
        if self._svm.size:
            d.setSVMDetector(self._svm)
        return d

    def _image(self, func, img):
        a = host(func, img, "img")
        return cv2.cvtColor(a, cv2.COLOR_BGRA2BGR) if a.ndim == 3 and a.shape[2] == 4 else a

    def getDescriptorSize(self):
        return self._hog().getDescriptorSize()

    def getBlockHistogramSize(self):
        (bw, bh), (cw, ch), nbins = self._geometry[1], self._geometry[3], self._geometry[4]
        return (bw // cw) * (bh // ch) * nbins

    def setSVMDetector(self, detector):
        self._svm = np.asarray(detector, np.float32).ravel()

    def getDefaultPeopleDetector(self):
        return cpu_opencv("HOG", "HOGDescriptor_getDefaultPeopleDetector")().reshape(1, -1)

    def detect(self, img):
        func = "HOG::detect"
        p = self._p
        found, conf = cpu(func, lambda a: self._hog().detect(a, float(p["HitThreshold"]), tuple(p["WinStride"])),
                          self._image(func, img))
        return [tuple(map(int, f)) for f in np.reshape(found, (-1, 2))], [float(c) for c in np.ravel(conf)]

    def detectWithoutConf(self, img):
        return self.detect(img)[0]

    def detectMultiScale(self, img):
        func = "HOG::detectMultiScale"
        p = self._p
        found, conf = cpu(func, lambda a: self._hog().detectMultiScale(
            a, hitThreshold=float(p["HitThreshold"]), winStride=tuple(p["WinStride"]), scale=float(p["ScaleFactor"]),
            groupThreshold=int(p["GroupThreshold"])), self._image(func, img))
        return [tuple(map(int, f)) for f in np.reshape(found, (-1, 4))], [float(c) for c in np.ravel(conf)]

    def detectMultiScaleWithoutConf(self, img):
        return self.detectMultiScale(img)[0]

    def compute(self, img, descriptors=None, stream=None):
        func = "HOG::compute"
        take_stream(func, [], {"stream": stream})
        d = cpu(func, lambda a: self._hog().compute(a, tuple(self._p["WinStride"])), self._image(func, img))
        return device(np.reshape(d, (-1, self.getDescriptorSize())), descriptors)


class CascadeClassifier(CpuAlgorithm):
    """cv2.cuda.CascadeClassifier.create(filename) over cv2.CascadeClassifier (CPU OpenCV reads
    the XML cascades; NVIDIA's .nvbin format it cannot)."""
    _name = "CascadeClassifier"
    _params = {"MaxObjectSize": (0, 0), "MinObjectSize": (0, 0), "ScaleFactor": 1.2, "MinNeighbors": 4,
               "FindLargestObject": False, "MaxNumObjects": 100}

    def __init__(self, filename):
        super().__init__()
        self._cascade = cpu_opencv("CascadeClassifier", "CascadeClassifier")()
        if not self._cascade.load(filename):
            raise unsupported_call("CascadeClassifier::create", f"CPU OpenCV cannot load the cascade {filename!r}")

    @staticmethod
    def create(filename):
        return CascadeClassifier(filename)

    def getClassifierSize(self):
        return tuple(self._cascade.getOriginalWindowSize())

    def detectMultiScale(self, image, objects=None, stream=None):
        func = "CascadeClassifier::detectMultiScale"
        take_stream(func, [], {"stream": stream})
        p = self._p
        flags = cv2.CASCADE_FIND_BIGGEST_OBJECT if p["FindLargestObject"] else 0
        found = cpu(func, lambda a: self._cascade.detectMultiScale(
            a, float(p["ScaleFactor"]), int(p["MinNeighbors"]), flags, tuple(p["MinObjectSize"]),
            tuple(p["MaxObjectSize"])), host(func, image, "image"))
        found = np.reshape(found, (-1, 4))[:int(p["MaxNumObjects"])]
        return device(found.reshape(1, -1, 4).astype(np.int32) if len(found) else None, objects)

    def convert(self, gpu_objects):
        if isinstance(gpu_objects, gpumat_cls()) and gpu_objects.empty():
            return []
        m = host("CascadeClassifier::convert", gpu_objects, "gpu_objects").reshape(-1, 4)
        return [tuple(map(int, r)) for r in m]


for _cls, _statics in ((FastFeatureDetector, ("create",)), (ORB, ("create",)),
                       (DescriptorMatcher, ("createBFMatcher",)), (HOG, ("create",)),
                       (CascadeClassifier, ("create",))):
    fallback_api(_cls.__name__)(_cls)
    for _s in _statics:
        fallback_api(f"{_cls.__name__}_{_s}")(getattr(_cls, _s))
fallback_api("Feature2DAsync")(_Feature2DAsync)
