"""Every name OpenCV's Python binding of a CUDA build exports from its CUDA modules, so that a
script calling any of them under lazycv meets a result or a ``cv2.error``, never an
AttributeError.

Where the list came from: the public headers the binding generator reads —
opencv_contrib ``modules/cuda{arithm,bgsegm,codec,features2d,filters,imgproc,legacy,objdetect,
optflow,stereo,warping}/include/opencv2/*.hpp`` and opencv ``modules/core/include/opencv2/core/
cuda.hpp`` — taking what the generator wraps: ``CV_EXPORTS_W`` functions, ``CV_EXPORTS_W`` /
``CV_EXPORTS_W_SIMPLE`` classes with their ``CV_WRAP static`` factories, and the enums of those
namespaces. cudalegacy declares nothing with ``CV_EXPORTS_W`` (no Python names). core/cuda.hpp's
names (GpuMat, Stream, Event, HostMem, DeviceInfo, ...) are the facade's own and are not repeated.

How the binding names them (and so how lazycv installs them): a function ``cv::cuda::f`` is
``cv2.cuda.f``; a class ``cv::cuda::C`` is ``cv2.cuda.C`` and ``cv2.cuda_C``, its static method
``s`` also ``cv2.cuda.C_s``; an enum value ``V`` of a plain enum is ``cv2.cuda.V``, of an
``enum class E`` ``cv2.cuda.E_V``, of a class ``C`` ``cv2.cuda.C_V``. ``cv::cudacodec`` likewise
under ``cv2.cudacodec`` / ``cv2.cudacodec_C``.

To regenerate: in checkouts of opencv and opencv_contrib,
``grep -nE "CV_EXPORTS_W|CV_WRAP static|^enum|^ *enum" modules/cuda*/include/opencv2/*.hpp``
and copy the new names into the tables below (enum values with their numbers).
"""

# cv2.cuda functions, by the module that declares them
FUNCTIONS = {
    "cudaarithm": (
        "add", "subtract", "multiply", "divide", "absdiff", "abs", "sqr", "sqrt", "exp", "log", "pow",
        "compare", "bitwise_not", "bitwise_or", "bitwise_and", "bitwise_xor", "rshift", "lshift", "min",
        "max", "addWeighted", "threshold", "magnitude", "magnitudeSqr", "phase", "cartToPolar",
        "polarToCart", "merge", "split", "transpose", "flip", "createLookUpTable", "copyMakeBorder",
        "norm", "calcNorm", "calcNormDiff", "sum", "calcSum", "absSum", "calcAbsSum", "sqrSum",
        "calcSqrSum", "minMax", "findMinMax", "minMaxLoc", "findMinMaxLoc", "countNonZero", "reduce",
        "meanStdDev", "rectStdDev", "normalize", "integral", "sqrIntegral", "gemm", "mulSpectrums",
        "mulAndScaleSpectrums", "dft", "createDFT", "createConvolution"),
    "cudabgsegm": ("createBackgroundSubtractorMOG", "createBackgroundSubtractorMOG2"),
    "cudafilters": (
        "createBoxFilter", "createLinearFilter", "createLaplacianFilter", "createSeparableLinearFilter",
        "createDerivFilter", "createSobelFilter", "createScharrFilter", "createGaussianFilter",
        "createMorphologyFilter", "createBoxMaxFilter", "createBoxMinFilter", "createRowSumFilter",
        "createColumnSumFilter", "createMedianFilter"),
    "cudaimgproc": (
        "cvtColor", "demosaicing", "gammaCorrection", "alphaComp", "calcHist", "equalizeHist",
        "createCLAHE", "evenLevels", "histEven", "histRange", "createCannyEdgeDetector",
        "createHoughLinesDetector", "createHoughSegmentDetector", "createHoughCirclesDetector",
        "createGeneralizedHoughBallard", "createGeneralizedHoughGuil", "createHarrisCorner",
        "createMinEigenValCorner", "createGoodFeaturesToTrackDetector", "meanShiftFiltering",
        "meanShiftProc", "meanShiftSegmentation", "createTemplateMatching", "bilateralFilter",
        "blendLinear", "connectedComponents", "connectedComponentsWithAlgorithm"),
    "cudastereo": (
        "createStereoBM", "createStereoBeliefPropagation", "createStereoConstantSpaceBP", "createStereoSGM",
        "createDisparityBilateralFilter", "reprojectImageTo3D", "drawColorDisp"),
    "cudawarping": (
        "remap", "resize", "warpAffine", "buildWarpAffineMaps", "warpPerspective", "buildWarpPerspectiveMaps",
        "rotate", "pyrDown", "pyrUp"),
}

# cv2.cuda classes -> their static methods (each also cv2.cuda.<Class>_<method>)
CLASSES = {
    "LookUpTable": (), "DFT": (), "Convolution": (),                                     # cudaarithm
    "BackgroundSubtractorMOG": (), "BackgroundSubtractorMOG2": (),                       # cudabgsegm
    "DescriptorMatcher": ("createBFMatcher",), "Feature2DAsync": (),                     # cudafeatures2d
    "FastFeatureDetector": ("create",), "ORB": ("create",),
    "Filter": (),                                                                       # cudafilters
    "CLAHE": (), "CannyEdgeDetector": (), "HoughLinesDetector": (), "HoughSegmentDetector": (),  # cudaimgproc
    "HoughCirclesDetector": (), "CornernessCriteria": (), "CornersDetector": (), "TemplateMatching": (),
    "HOG": ("create",), "CascadeClassifier": ("create",),                                # cudaobjdetect
    "DenseOpticalFlow": (), "SparseOpticalFlow": (), "NvidiaHWOpticalFlow": (),          # cudaoptflow
    "BroxOpticalFlow": ("create",), "SparsePyrLKOpticalFlow": ("create",),
    "DensePyrLKOpticalFlow": ("create",), "FarnebackOpticalFlow": ("create",),
    "OpticalFlowDual_TVL1": ("create",), "NvidiaOpticalFlow_1_0": ("create",),
    "StereoBM": (), "StereoBeliefPropagation": ("estimateRecommendedParams",),           # cudastereo
    "StereoConstantSpaceBP": ("estimateRecommendedParams",), "StereoSGM": (), "DisparityBilateralFilter": (),
}

# why a name has no CPU path (the rest say: no fused op and no CPU OpenCV algorithm with its results)
NO_CPU_EQUIVALENT = {
    "BroxOpticalFlow": "CPU OpenCV has no Brox optical flow",
    "NvidiaOpticalFlow_1_0": "it runs on NVIDIA's optical-flow hardware",
    "NvidiaHWOpticalFlow": "it runs on NVIDIA's optical-flow hardware",
    "StereoBeliefPropagation": "CPU OpenCV has no belief-propagation stereo",
    "StereoConstantSpaceBP": "CPU OpenCV has no constant-space belief-propagation stereo",
    "createStereoBeliefPropagation": "CPU OpenCV has no belief-propagation stereo",
    "createStereoConstantSpaceBP": "CPU OpenCV has no constant-space belief-propagation stereo",
    "DisparityBilateralFilter": "CPU OpenCV has no disparity bilateral filter",
    "createDisparityBilateralFilter": "CPU OpenCV has no disparity bilateral filter",
    "drawColorDisp": "CPU OpenCV has no drawColorDisp",
    "DFT": "CUDA's packed real-to-complex layout has no CPU OpenCV counterpart",
    "createDFT": "CUDA's packed real-to-complex layout has no CPU OpenCV counterpart",
    "dft": "CUDA's packed real-to-complex layout has no CPU OpenCV counterpart",
}

# cv2.cuda constants
CONSTANTS = {
    # cudaimgproc DemosaicTypes
    "COLOR_BayerBG2BGR_MHT": 256, "COLOR_BayerGB2BGR_MHT": 257, "COLOR_BayerRG2BGR_MHT": 258,
    "COLOR_BayerGR2BGR_MHT": 259, "COLOR_BayerBG2RGB_MHT": 258, "COLOR_BayerGB2RGB_MHT": 259,
    "COLOR_BayerRG2RGB_MHT": 256, "COLOR_BayerGR2RGB_MHT": 257, "COLOR_BayerBG2GRAY_MHT": 260,
    "COLOR_BayerGB2GRAY_MHT": 261, "COLOR_BayerRG2GRAY_MHT": 262, "COLOR_BayerGR2GRAY_MHT": 263,
    # cudaimgproc AlphaCompTypes
    "ALPHA_OVER": 0, "ALPHA_IN": 1, "ALPHA_OUT": 2, "ALPHA_ATOP": 3, "ALPHA_XOR": 4, "ALPHA_PLUS": 5,
    "ALPHA_OVER_PREMUL": 6, "ALPHA_IN_PREMUL": 7, "ALPHA_OUT_PREMUL": 8, "ALPHA_ATOP_PREMUL": 9,
    "ALPHA_XOR_PREMUL": 10, "ALPHA_PLUS_PREMUL": 11, "ALPHA_PREMUL": 12,
    # cudaimgproc ConnectedComponentsAlgorithmsTypes
    "CCL_DEFAULT": -1, "CCL_BKE": 0,
    # cudafeatures2d class constants
    "FastFeatureDetector_LOCATION_ROW": 0, "FastFeatureDetector_RESPONSE_ROW": 1,
    "FastFeatureDetector_ROWS_COUNT": 2, "FastFeatureDetector_FEATURE_SIZE": 7,
    "ORB_X_ROW": 0, "ORB_Y_ROW": 1, "ORB_RESPONSE_ROW": 2, "ORB_ANGLE_ROW": 3, "ORB_OCTAVE_ROW": 4,
    "ORB_SIZE_ROW": 5, "ORB_ROWS_COUNT": 6,
    # cudaoptflow NvidiaOpticalFlow_1_0::NVIDIA_OF_PERF_LEVEL
    "NvidiaOpticalFlow_1_0_NV_OF_PERF_LEVEL_UNDEFINED": 0, "NvidiaOpticalFlow_1_0_NV_OF_PERF_LEVEL_SLOW": 5,
    "NvidiaOpticalFlow_1_0_NV_OF_PERF_LEVEL_MEDIUM": 10, "NvidiaOpticalFlow_1_0_NV_OF_PERF_LEVEL_FAST": 20,
    "NvidiaOpticalFlow_1_0_NV_OF_PERF_LEVEL_MAX": 21,
}


def _fourcc(code):
    a, b, c, d = (ord(ch) for ch in code)
    return (a << 24) | (b << 16) | (c << 8) | d


# cv2.cudacodec
CODEC_FUNCTIONS = ("createVideoReader", "createVideoWriter")
CODEC_CLASSES = {"VideoReader": (), "VideoWriter": (), "RawVideoSource": (), "EncoderCallback": ()}
CODEC_STRUCTS = ("EncoderParams", "EncodeQp", "FormatInfo", "VideoReaderInitParams")
CODEC_CONSTANTS = {
    # enum Codec
    "MPEG1": 0, "MPEG2": 1, "MPEG4": 2, "VC1": 3, "H264": 4, "JPEG": 5, "H264_SVC": 6, "H264_MVC": 7,
    "HEVC": 8, "VP8": 9, "VP9": 10, "AV1": 11, "NumCodecs": 12,
    "Uncompressed_YUV420": _fourcc("IYUV"), "Uncompressed_YV12": _fourcc("YV12"),
    "Uncompressed_NV12": _fourcc("NV12"), "Uncompressed_YUYV": _fourcc("YUYV"),
    "Uncompressed_UYVY": _fourcc("UYVY"),
    # enum class ColorFormat
    "ColorFormat_UNDEFINED": 0, "ColorFormat_BGRA": 1, "ColorFormat_BGR": 2, "ColorFormat_GRAY": 3,
    "ColorFormat_NV_NV12": 4, "ColorFormat_RGB": 5, "ColorFormat_RGBA": 6, "ColorFormat_NV_YV12": 8,
    "ColorFormat_NV_IYUV": 9, "ColorFormat_NV_YUV444": 10, "ColorFormat_NV_AYUV": 11,
    "ColorFormat_PROP_NOT_SUPPORTED": 12,
    # encoder enums
    "ENC_PARAMS_RC_CONSTQP": 0, "ENC_PARAMS_RC_VBR": 1, "ENC_PARAMS_RC_CBR": 2,
    "ENC_MULTI_PASS_DISABLED": 0, "ENC_TWO_PASS_QUARTER_RESOLUTION": 1, "ENC_TWO_PASS_FULL_RESOLUTION": 2,
    "ENC_CODEC_PROFILE_AUTOSELECT": 0, "ENC_H264_PROFILE_BASELINE": 1, "ENC_H264_PROFILE_MAIN": 2,
    "ENC_H264_PROFILE_HIGH": 3, "ENC_H264_PROFILE_HIGH_444": 4, "ENC_H264_PROFILE_STEREO": 5,
    "ENC_H264_PROFILE_PROGRESSIVE_HIGH": 6, "ENC_H264_PROFILE_CONSTRAINED_HIGH": 7,
    "ENC_HEVC_PROFILE_MAIN": 8, "ENC_HEVC_PROFILE_MAIN10": 9, "ENC_HEVC_PROFILE_FREXT": 10,
    "ENC_PRESET_P1": 1, "ENC_PRESET_P2": 2, "ENC_PRESET_P3": 3, "ENC_PRESET_P4": 4, "ENC_PRESET_P5": 5,
    "ENC_PRESET_P6": 6, "ENC_PRESET_P7": 7,
    "ENC_TUNING_INFO_UNDEFINED": 0, "ENC_TUNING_INFO_HIGH_QUALITY": 1, "ENC_TUNING_INFO_LOW_LATENCY": 2,
    "ENC_TUNING_INFO_ULTRA_LOW_LATENCY": 3, "ENC_TUNING_INFO_LOSSLESS": 4, "ENC_TUNING_INFO_COUNT": 5,
    # enum ChromaFormat, enum DeinterlaceMode
    "Monochrome": 0, "YUV420": 1, "YUV422": 2, "YUV444": 3, "NumFormats": 4,
    "Weave": 0, "Bob": 1, "Adaptive": 2,
    # enum class VideoReaderProps
    "VideoReaderProps_PROP_DECODED_FRAME_IDX": 0, "VideoReaderProps_PROP_EXTRA_DATA_INDEX": 1,
    "VideoReaderProps_PROP_RAW_PACKAGES_BASE_INDEX": 2,
    "VideoReaderProps_PROP_NUMBER_OF_RAW_PACKAGES_SINCE_LAST_GRAB": 3, "VideoReaderProps_PROP_RAW_MODE": 4,
    "VideoReaderProps_PROP_LRF_HAS_KEY_FRAME": 5, "VideoReaderProps_PROP_COLOR_FORMAT": 6,
    "VideoReaderProps_PROP_UDP_SOURCE": 7, "VideoReaderProps_PROP_ALLOW_FRAME_DROP": 8,
    "VideoReaderProps_PROP_NOT_SUPPORTED": 9,
}


def cuda_names():
    """Every ``cv2.cuda`` attribute name the tables above give."""
    names = {n for fns in FUNCTIONS.values() for n in fns}
    for cls, statics in CLASSES.items():
        names.add(cls)
        names.update(f"{cls}_{s}" for s in statics)
    names.update(CONSTANTS)
    return names


def codec_names():
    """Every ``cv2.cudacodec`` attribute name."""
    names = set(CODEC_FUNCTIONS) | set(CODEC_CLASSES) | set(CODEC_STRUCTS) | set(CODEC_CONSTANTS)
    return names
