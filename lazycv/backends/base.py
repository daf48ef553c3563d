"""What the runtime needs from a backend, and the pieces the backends share."""
import os
import sys


class Backend:
    name = None
    is_device = False
    # Integer pixels load as int32 (exact for every integer depth): Numba widens int32
    # arithmetic to int64, so nothing overflows. The simulator runs plain Python with numpy
    # scalars, which would wrap at 32 bits, so it loads Python ints instead.
    int_load = "np.int32({})"

    def debug_source(self, module_name, source):
        """LAZYCV_DEBUG=2 prints every generated kernel once."""
        from ..runtime import debug_level
        if debug_level() >= 2:
            print(f"[lazycv] kernel {module_name} ({self.name}):\n{source}", file=sys.stderr)

    @staticmethod
    def indent(lines, n):
        pad = " " * n
        return "\n".join(pad + ln for ln in lines)
