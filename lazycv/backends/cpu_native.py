"""A CPU kernel's bands on native threads (lazycv/backends/_bands.c).

The CPU backend's pool of Python threads must take the GIL to start each band of a kernel, so
on a many-core host the bands start one after another (bench/RESULTS.md run 62). Here a
generated kernel gets a numba ``cfunc`` wrapper of one fixed C signature,
``void band(int64 y0, int64 y1, int64 *P, double *F)``, that rebuilds the kernel's arguments
from ``P`` (ints; an array as its address and shape) and ``F`` (floats) and calls the kernel's
compiled overload; ``_bands.run`` packs a launch's arguments into ``P`` and ``F`` and runs the
wrapper's bands on native threads, the GIL released throughout.

A wrapper is made for a kernel's one overload (its argument types fixed), the second time the
kernel runs in bands (a kernel run once does not pay the wrapper's compile), and is kept on
disk like the kernel (numba's cache). Arguments it was not made for (another type, a
non-contiguous array) make ``_bands.run`` decline, and the Python pool runs the launch.
"""
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.extending import intrinsic

from .. import codegen

try:
    from . import _bands as BANDS
except ImportError:              # built without a C compiler: the Python pool runs every band
    BANDS = None


@intrinsic
def address(typingctx, value):
    """An int64 address as a void pointer (for ``numba.carray``)."""
    def lower(context, builder, sig, args):
        return builder.inttoptr(args[0], llvm_ir.IntType(8).as_pointer())
    return types.voidptr(types.int64), lower


_WRAPPER = '''import numpy as np
from numba import carray, cfunc, types
from lazycv.backends.cpu_native import address
from {module} import {kernel} as _kernel


@cfunc(types.void(types.int64, types.int64, types.CPointer(types.int64), types.CPointer(types.float64)),
       nogil=True, cache=True, error_model="numpy")
def kernel(Y0, Y1, P, F):
    _kernel(Y0, Y1, {args})
'''


# the Python types numba types as each scalar parameter type (a value of another type would have
# compiled another overload, which this wrapper does not call)
_TYPED_AS = {types.int64: (int, np.int64), types.float64: (float, np.float64), types.float32: (np.float32,)}


class Native:
    """A kernel's band wrapper: its address and how _bands.run packs each argument."""
    __slots__ = ("address", "codes", "formats")

    def __init__(self, address, codes, formats):
        self.address, self.codes, self.formats = address, codes, formats


def wrapper(fn, module, kernel_name, skipped):
    """The Native of ``fn`` (a generated kernel's dispatcher, ``module.kernel_name``), whose
    first ``skipped`` parameters are the band's rows; None where it has not one overload or
    takes an argument of a kind the wrapper does not rebuild."""
    if BANDS is None or len(fn.overloads) != 1:
        return None
    sig = next(iter(fn.overloads))
    args, codes, formats, p, f = [], [], [], 0, 0
    for ty in sig[skipped:]:
        if ty == types.int64:
            args.append(f"P[{p}]")
            codes.append("i")
            formats.append(_TYPED_AS[ty])
            p += 1
        elif ty in (types.float64, types.float32):
            args.append(f"F[{f}]" if ty == types.float64 else f"np.float32(F[{f}])")
            codes.append("f")
            formats.append(_TYPED_AS[ty])
            f += 1
        elif isinstance(ty, types.Array) and ty.layout == "C" and ty.mutable and 1 <= ty.ndim <= 3 \
                and isinstance(ty.dtype, (types.Integer, types.Float)):
            dtype = np.dtype(str(ty.dtype))
            shape = ", ".join(f"P[{p + 1 + d}]" for d in range(ty.ndim))
            args.append(f"carray(address(P[{p}]), ({shape},), np.{dtype.name})")
            codes.append(str(ty.ndim))
            formats.append(memoryview(np.empty((1,) * ty.ndim, dtype)).format)
            p += 1 + ty.ndim
        else:
            return None
    source = _WRAPPER.format(module=module, kernel=kernel_name, args=", ".join(args))
    band, _, _ = codegen._load(source, "cpu_bands")
    return Native(band.address, "".join(codes).encode(), tuple(formats))
