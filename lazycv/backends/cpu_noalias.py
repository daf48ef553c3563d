"""A numba pipeline that compiles a CPU kernel with its array arguments marked ``noalias``.

Numba marks arguments ``noalias`` only in the loops of ``parallel=True`` functions. Without it
LLVM must assume an output row may overlap every array the pixel loop reads, gives up on the
runtime overlap checks that would need, and leaves the loop scalar: W1's generated kernel runs
2.2x faster with the promise (bench/RESULTS.md run 65). The CPU backend launches this build only
when no output shares memory with an input (``CpuBackend._kernel_for``).
"""
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.untyped_passes import IRProcessing


@register_pass(mutates_CFG=False, analysis_only=True)
class MarkNoAlias(FunctionPass):
    """Sets the compile's ``noalias`` flag, which lowering turns into the argument attribute."""
    _name = "lazycv_mark_noalias"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        state.flags.noalias = True
        return False


class NoAliasCompiler(CompilerBase):
    """numba's nopython pipeline with MarkNoAlias first."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(MarkNoAlias, IRProcessing)
        pm.finalize()
        return [pm]
