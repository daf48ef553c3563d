"""OpenCV's border modes as device expressions, for every op that reads outside its input.

``cv::borderInterpolate(p, len, type)`` maps an out-of-range coordinate back inside:

* BORDER_REPLICATE    ``aaaaaa|abcdefgh|hhhhhhh``
* BORDER_REFLECT      ``fedcba|abcdefgh|hgfedcb``
* BORDER_REFLECT_101  ``gfedcb|abcdefgh|gfedcba`` (the default of OpenCV's filters)
* BORDER_WRAP         ``cdefgh|abcdefgh|abcdefg``
* BORDER_CONSTANT     ``iiiiii|abcdefgh|iiiiiii`` (a value, not a pixel: the caller selects it)

OpenCV repeats the reflection until the coordinate lands inside (an image narrower than a
filter's reach); the closed forms below do the same in one step with a positive modulo over the
reflection's period. An in-range coordinate — the common case — skips the modulo.
"""
import cv2

from ..errors import StsBadFlag, cv_error

CONSTANT, REPLICATE, REFLECT, WRAP, REFLECT_101 = (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT,
                                                   cv2.BORDER_WRAP, cv2.BORDER_REFLECT_101)
MODES = (CONSTANT, REPLICATE, REFLECT, WRAP, REFLECT_101)
NAMES = {CONSTANT: "BORDER_CONSTANT", REPLICATE: "BORDER_REPLICATE", REFLECT: "BORDER_REFLECT",
         WRAP: "BORDER_WRAP", REFLECT_101: "BORDER_REFLECT_101"}


def check_mode(func, mode, allowed=MODES, name="borderMode"):
    """``mode`` as an int if ``allowed`` has it (BORDER_ISOLATED is ignored, as OpenCV's
    filters do), else a cv2.error naming the modes the op takes."""
    m = int(mode) & ~cv2.BORDER_ISOLATED
    if m not in allowed:
        names = ", ".join(NAMES[a] for a in allowed)
        raise cv_error(func, f"unsupported {name} {mode}: expected one of {names}", StsBadFlag)
    return m


def _positive_mod(ctx, p, period):
    return ctx.let(f"np.int32((np.int32({p}) % np.int32({period}) + np.int32({period})) % np.int32({period}))", "b")


def index(ctx, p, n, mode):
    """An int32 expression for coordinate ``p`` mapped into ``[0, n)`` by ``mode`` (``n`` > 0;
    both are expressions). For BORDER_CONSTANT the coordinate is clamped: the caller selects
    the border value where :func:`inside` is false."""
    p = ctx.let(f"np.int32({p})", "b")
    last = ctx.let(f"np.int32({n} - 1)", "b")
    clamp = f"min(max({p}, np.int32(0)), {last})"
    if mode in (CONSTANT, REPLICATE):
        return ctx.let(clamp, "b")
    if mode == WRAP:
        far = _positive_mod(ctx, p, n)
    elif mode == REFLECT:
        period = ctx.let(f"np.int32(2 * {n})", "b")
        q = _positive_mod(ctx, p, period)
        far = f"({q} if {q} < {n} else np.int32({period} - 1 - {q}))"
    elif mode == REFLECT_101:
        period = ctx.let(f"np.int32(max(2 * {n} - 2, 1))", "b")      # len 1: always 0
        q = _positive_mod(ctx, p, period)
        far = f"({q} if {q} < {n} else np.int32({period} - {q}))"
    else:
        raise ValueError(f"unknown border mode {mode}")
    # the modulo only off the image (the common case inside costs two compares)
    return ctx.let(f"({p} if ({p} >= np.int32(0) and {p} <= {last}) else {far})", "b")


def inside(ctx, py, px, rows, cols):
    """A boolean expression: (py, px) lies in a ``rows`` x ``cols`` image."""
    return ctx.let(f"({py} >= 0 and {py} < {rows} and {px} >= 0 and {px} < {cols})", "in")


def host_index(p, n, mode):
    """cv::borderInterpolate on the host (tests, table builders); -1 for BORDER_CONSTANT off
    the image."""
    if 0 <= p < n:
        return p
    if mode == CONSTANT:
        return -1
    if mode == REPLICATE:
        return 0 if p < 0 else n - 1
    if mode == WRAP:
        return p % n
    if n == 1:
        return 0
    period = 2 * n if mode == REFLECT else 2 * n - 2
    q = p % period
    return q if q < n else (period - 1 - q if mode == REFLECT else period - q)
