"""OpenCV-compatible errors: lazycv raises ``cv2.error`` so existing ``except cv2.error`` code works."""
import functools
import inspect

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
GpuApiCallError = -217          # a CUDA call failed (OpenCV's cudaSafeCall)

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


# ---------------------------------------------------------------- calls the binding would refuse
#
# OpenCV's binding refuses an argument list a function cannot take (an unknown keyword, too many
# positionals, a missing argument) with cv2.error (-5, "Overload resolution failed"); Python
# raises a bare TypeError. ``binding_call`` wraps a function, ``binding_class`` every public
# method and the constructor of a class, so both speak OpenCV's way. The wrapper is a
# try/except around the call: the signature is looked at only once a TypeError happened, and a
# TypeError the arguments do not explain (raised inside) is left as it is.

def binding_problem(fn, args, kw):
    """Why ``args``/``kw`` do not fit ``fn``'s signature, in Python's words (an unknown keyword
    named first: it is what the caller got wrong, whatever else is missing), or None when they
    fit."""
    sig = _signature(fn)
    params = sig.parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        for k in kw:
            if k not in params or params[k].kind is inspect.Parameter.POSITIONAL_ONLY:
                return f"got an unexpected keyword argument {k!r}"
    try:
        sig.bind(*args, **kw)
    except TypeError as e:
        return str(e)
    return None


_SIGNATURES = {}


def _signature(fn):
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


def binding_error(name, problem):
    """The cv2.error of a call of ``name`` ("resize", "GpuMat::download") its arguments cannot
    make: ``problem`` in Python's words."""
    shown = name.replace("::", ".")
    return cv_error(name, f"Overload resolution failed: {shown}() {problem}", StsBadArg)


def binding_keywords(*keywords, most=None):
    """Decorator for a function or method that takes ``*args, **kw`` and parses them itself:
    the keywords it takes besides its named parameters (and at most ``most`` positionals, not
    counting ``self``), checked before the call by :func:`binding_call` — a ``**kw`` would take
    an unknown keyword silently."""
    def deco(fn):
        fn.__binding_keywords__ = (frozenset(keywords), most)
        return fn
    return deco


def binding_function(name):
    """Function decorator: :func:`binding_call` naming ``name`` (a cv2.cuda function that is
    not a fused op: those are ``ops.common.cuda_api``'s, which also take the runtime lock)."""
    return lambda fn: binding_call(fn, name)


def refuse_rest(name, args, kw, most=0):
    """For a function that parses ``*args, **kw`` itself: cv2.error for a keyword nothing took
    (``kw`` holds what is left) or more than ``most`` positionals left in ``args``."""
    if kw:
        raise binding_error(name, f"got an unexpected keyword argument {next(iter(kw))!r}")
    if len(args) > most:
        raise binding_error(name, f"takes {len(args) - most} positional argument(s) too many")


def binding_call(fn, name, owner=None):
    """``fn`` called as OpenCV's binding calls it: an argument list ``fn`` cannot take is
    cv2.error naming ``name``; the way that raises nothing costs a try/except. ``owner``: the
    class of a method, whose instance's class names the error (a subclass's own name)."""
    spec = getattr(fn, "__binding_keywords__", None)
    if getattr(fn, "__binding__", None) is not None or spec is None and _takes_anything(fn, owner is not None):
        return fn

    def named(args):
        if owner is not None and args and isinstance(args[0], owner):
            cls = type(args[0]).__dict__.get("_binding_name") or owner._binding_name
            return f"{cls}::{name.rpartition('::')[2]}"
        return name

    if spec is None:
        def call(*args, **kw):
            try:
                return fn(*args, **kw)
            except TypeError:                    # (no cost on the way that raises nothing)
                problem = binding_problem(fn, args, kw)
                if problem is None:
                    raise
                raise binding_error(named(args), problem) from None
    else:
        P = inspect.Parameter
        keywords = spec[0] | {p.name for p in _signature(fn).parameters.values()
                              if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
        most = spec[1]
        start = 1 if owner is not None else 0

        def call(*args, **kw):
            if kw and not keywords.issuperset(kw):
                bad = next(k for k in kw if k not in keywords)
                raise binding_error(named(args), f"got an unexpected keyword argument {bad!r}")
            if most is not None and len(args) - start > most:
                raise binding_error(named(args), f"takes at most {most} positional arguments "
                                                 f"({len(args) - start} given)")
            try:
                return fn(*args, **kw)
            except TypeError:
                problem = binding_problem(fn, args, kw)
                if problem is None:
                    raise
                raise binding_error(named(args), problem) from None
    functools.update_wrapper(call, fn)
    call.__binding__ = name
    return call


def _takes_anything(fn, method):
    """True for ``f(*args, **kw)`` (``f(self, *args, **kw)``): Python refuses no argument list
    of it, so a wrapper would only cost time; such a function parses its arguments itself and
    raises cv2.error for what it cannot take (GpuMat.convertTo, copyTo, setTo)."""
    kinds = [p.kind for p in _signature(fn).parameters.values()]
    P = inspect.Parameter
    named = kinds[1:] if method and kinds and kinds[0] in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) else kinds
    return named == [P.VAR_POSITIONAL, P.VAR_KEYWORD]


def binding_class(cls=None, *, name=None):
    """Class decorator: the constructor and every public method, static and class method defined
    in ``cls`` refuse an argument list they cannot take with cv2.error naming
    ``<name>::<method>`` (``name``: the class's OpenCV name, by default its own less a leading
    underscore). Inherited methods are their base's (decorate the base too); a subclass's
    instance still names its own class in the error."""
    def deco(cls):
        cv_name = name or cls.__name__.lstrip("_")
        cls._binding_name = cv_name
        if cls.__init__ is object.__init__:
            def __init__(self):
                """(takes no arguments)"""
            cls.__init__ = __init__
        for attr, value in list(vars(cls).items()):
            if attr.startswith("_") and attr != "__init__":
                continue
            label = cv_name if attr == "__init__" else f"{cv_name}::{attr}"
            if isinstance(value, (staticmethod, classmethod)):
                wrapped = binding_call(value.__func__, label, owner=cls if isinstance(value, classmethod) else None)
                setattr(cls, attr, type(value)(wrapped))
            elif inspect.isfunction(value):
                setattr(cls, attr, binding_call(value, label, owner=cls))
        return cls
    return deco(cls) if cls is not None else deco
