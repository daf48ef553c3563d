"""OpenCV-compatible errors: lazycv raises ``cv2.error`` so existing ``except cv2.error`` code works."""
import cv2

StsBadArg = -5
StsBadSize = -201
StsOutOfRange = -211
StsUnmatchedFormats = -205
StsUnmatchedSizes = -209
StsUnsupportedFormat = -210
StsAssert = -215
StsNullPtr = -27
StsNotImplemented = -213
StsError = -2
StsBadFlag = -206
StsNoMem = -4

_CODE_NAME = {StsBadArg: "Bad argument", StsBadSize: "Incorrect size of input array",
              StsOutOfRange: "One of the arguments' values is out of range",
              StsUnmatchedFormats: "Formats of input arguments do not match",
              StsUnmatchedSizes: "Sizes of input arguments do not match",
              StsUnsupportedFormat: "Unsupported format or combination of formats",
              StsAssert: "Assertion failed", StsNullPtr: "Null pointer",
              StsNotImplemented: "The function/feature is not implemented",
              StsError: "Unspecified error", StsNoMem: "Insufficient memory"}


class PerformanceWarning(UserWarning):
    """Correct results, slower than they could be: a kernel structure compiled again and again
    (a parameter that is part of the kernel's identity changes every call), or a cv2.cuda call
    running on CPU OpenCV inside a loop. Silence it with
    ``warnings.filterwarnings("ignore", category=lazycv.PerformanceWarning)``."""


def cv_error(func, message, code=StsBadArg):
    """Build a cv2.error carrying the op name, like OpenCV's CV_Error.

    The text follows OpenCV's layout so log scrapers and ``str(e)`` checks keep working:
    ``lazycv: error: (-215:Assertion failed) <message> in function 'cv::cuda::resize'``.
    """
    full = f"cv::cuda::{func}" if "::" not in func else func
    text = f"lazycv: error: ({code}:{_CODE_NAME.get(code, 'Error')}) {message} in function '{full}'\n"
    err = cv2.error(text)
    err.code, err.err, err.func, err.file, err.line, err.msg = code, message, full, "lazycv", 0, text
    return err


def check(cond, func, message, code=StsBadArg):
    if not cond:
        raise cv_error(func, message, code)
