"""What an op is: a name, how many taps it reads, and a device snippet.

Every op — built-in or user-defined — is an :class:`OpDef`. The code generator never knows an
op by name: it calls ``op.emit(ctx, node, y, x)``, which returns one expression per output
channel, reading its inputs through ``ctx.read(value, y, x)``. The same snippet serves the CUDA
kernel, the CPU kernel and the simulator, because it is written in the subset of Python that all
three compile identically (ints, ``np.float32``/``np.float64`` casts, ``round``, ``min``,
``max``, ``int(math.floor(..))`` — the CUDA target's floor returns a float), plus the few
operations each backend spells its own way (``ctx.spell``: floor or round-half-even to int32).
"""
from .._types import DEPTH_RANGE, is_float

REGISTRY = {}


class OpDef:
    """An op of the IR.

    ``taps`` is how many input coordinates one output pixel reads (1 for element-wise ops and
    pure coordinate moves like crop, 4 for a bilinear resize): the planner uses it to decide when
    recomputing a producer inside its consumer would cost more than writing it once.
    ``pointwise`` means output (y, x) reads only inputs at (y, x).
    ``reduces`` marks a reduction: instead of ``emit`` it has ``fold(ctx, node, y, x)``, which
    says what input pixel (y, x) adds to a small statistic (codegen.Fold); its kernel runs over
    its input's pixels with the input's pending chain fused in, and it is always an output of a
    kernel of its own, so its consumers read the statistic from memory in a later phase.
    """
    name = None
    taps = 1
    pointwise = True
    reduces = False
    #: the inputs whose size the node's dyn values carry (the kernel reads it from there, as a
    #: resize or warp reads its source's): memory read only through such inputs may change
    #: size without changing the plan (plancache.loose_tokens: new crops every frame)
    size_in_dyn = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.name:
            REGISTRY[cls.name] = cls()

    def tap_count(self, node):
        """Input coordinates one output pixel of ``node`` reads."""
        return self.taps

    def emit(self, ctx, node, y, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def label(self, node):
        """Short text for explain()."""
        return self.name if not node.static else f"{self.name}{list(node.static)}"


def saturate(ctx, expr, depth, src_is_float=True):
    """Expression converting ``expr`` to ``depth`` the way OpenCV's saturate_cast does.

    Floats round half to even (``round`` compiles to rint on every target) and clamp; a float
    outside int32 (or NaN, inf) becomes the depth's minimum, as cvRound's overflow to INT_MIN
    makes it in OpenCV. Ints only clamp. Float depths pass through: the caller's typed
    assignment casts them.
    """
    if is_float(depth):
        return expr
    lo, hi = DEPTH_RANGE[depth]
    if not src_is_float:
        return f"min(max({expr}, {lo}), {hi})"
    t = ctx.let(expr, "s")
    # inside the guard the rounded value fits in int32 (see Backend.spellings), and so do the
    # bounds: an int32 clamp (a 64-bit one costs twice the instructions on a GPU)
    return (f"(min(max({ctx.spell('rint_i32', t)}, np.int32({lo})), np.int32({hi})) "
            f"if ({t} > -2147483648.5 and {t} < 2147483647.5) else {lo})")


def round_int32(v):
    """cvRound on the host: half to even, and outside int32 (NaN, inf too) INT_MIN — what
    OpenCV's saturate_cast<int>(double) gives a scalar."""
    return int(round(v)) if -2147483648.5 < v < 2147483647.5 else -2147483648


def op(name):
    return REGISTRY[name]
