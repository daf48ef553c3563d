"""Read-only loads for generated CUDA kernels: ``ldg(array, (i, j))`` is ``array[i, j]``
through ``ld.global.nc`` (the read-only data path, CUDA C++'s ``__ldg`` / ``const __restrict__``).

A generated kernel never writes the memory it reads through a source (a pixel's loads come
before its stores, and no pixel reads another's output), so each load may go through the
non-coherent path, and — as inline assembly that touches no memory the compiler tracks — may
be scheduled above earlier stores, which plain array loads, for all the compiler knows about
aliasing, may not. Imported by the generated source of the cuda backend (not the simulator,
which indexes plainly)."""
from llvmlite import ir
from numba import types
from numba.cuda import cgutils
from numba.cuda.extending import intrinsic

_CONSTRAINT = {8: "r", 16: "h", 32: "r", 64: "l"}


@intrinsic
def ldg(typingctx, array, index):
    if not (isinstance(array, types.Array) and isinstance(index, types.UniTuple)
            and index.count == array.ndim and isinstance(index.dtype, types.Integer)
            and isinstance(array.dtype, (types.Integer, types.Float))
            and array.dtype.bitwidth in _CONSTRAINT):
        return None
    sig = array.dtype(array, index)

    def codegen(context, builder, sig, args):
        array_type, index_type = sig.args
        arr, idx = args
        indices = cgutils.unpack_tuple(builder, idx, count=array_type.ndim)
        struct = context.make_array(array_type)(context, builder, value=arr)
        # indices are unsigned in generated code: no negative-index wraparound
        ptr = cgutils.get_item_pointer(context, builder, array_type, struct, indices, wraparound=False)
        bits = array_type.dtype.bitwidth
        loaded = context.get_value_type(array_type.dtype)
        kind = "f" if isinstance(array_type.dtype, types.Float) else "b"
        asm = ir.InlineAsm(ir.FunctionType(loaded, [loaded.as_pointer()]),
                           f"ld.global.nc.{kind}{bits} $0, [$1];", f"={_CONSTRAINT[bits]},l")
        return builder.call(asm, [ptr])

    return sig, codegen
