"""What the runtime needs from a backend, and the pieces the backends share."""
import sys

import numpy as np


class Backend:
    name = None
    is_device = False
    # Spellings of the operations whose fastest correct form differs by target (Emitter.spell):
    # loading an integer pixel, a float to int32 by floor, and by rounding half to even.
    # Integer pixels load as int32 (exact for every integer depth): Numba widens int32
    # arithmetic to int64, so nothing overflows. On the CPU numpy's floor/rint compile inline
    # (math.floor is a libm call); CUDA has no numpy ufuncs in kernels.
    spellings = {
        "int_load": "np.int32({})",
        "floor_i32": "np.int32(np.floor({}))",
        "rint_i32": "np.int32(np.rint({}))",          # a float32 or float64 value
        "rint_f32_i32": "np.int32(np.rint({}))",      # a float32 value
        "index": "{}",                                # an array index (never negative)
        "wrap_i32": "np.int32({})",                   # an integer wrapped to int32, as C's int
        # float32 x * a + b rounded once, as OpenCV's convertTo (an FMA): the product of two
        # float32 values is exact in float64, the sum rounds there and then to float32
        "fma_f32": "np.float32(np.float64({}) * np.float64({}) + np.float64({}))",
    }

    # Streams. The CPU backend and the simulator run everything in call order on no stream.
    def default_stream(self):
        """The stream lazycv's own launches go on (None: no real streams)."""
        return None

    def order(self, first, then):
        """Work queued on stream ``then`` from now on waits for what stream ``first`` holds
        now (None: the default stream). Nothing to order without real streams."""

    def idle(self, stream):
        """True when everything queued on ``stream`` (None: the default stream) is done."""
        return True

    # Events (lazycv/streams.py). Here work is done when its launch returns: an event is the
    # host time at record, always complete, and nothing needs to wait for one.
    def record_event(self, stream, timing=True, reuse=None):
        """An event after everything queued so far on ``stream`` (None: the default stream);
        ``reuse``: an event of this backend recorded again instead of a new one."""
        from ..streams import HostEvent
        return HostEvent()

    def wait_event(self, stream, event):
        """Work queued on ``stream`` from now on waits for ``event``."""

    def event_done(self, event):
        return True

    def event_synchronize(self, event):
        """The host waits for ``event``."""

    def elapsed_ms(self, start, end):
        return (end.time - start.time) * 1000.0

    def lane(self):
        """Copies and events by address for a loop that orders its own streams
        (backends/lanes.py); None where this backend has none."""
        from .lanes import HostLane
        return HostLane()

    def constant_tables(self, ti, tf):
        """Per-item tables that many launches read, as ``launch_batched(tables=)`` takes them."""
        return ti, tf

    def launcher(self, compiled, rows, cols):
        """A launcher of ``compiled`` over a ``rows`` x ``cols`` output on the default stream that
        C code calls with the launch's arguments (_hotpath.Launcher), once the kernel has been
        launched; None where this backend has none (a program then calls ``launch``)."""
        return None

    def launch_view(self, arr, shape):
        """``arr``'s memory (C-contiguous) as a kernel argument of ``shape``; None where this
        backend cannot pass one. The caller keeps ``arr`` alive for the launch."""
        return arr.reshape(shape)

    def download_array(self, arr, out):
        """A whole device array into the host array ``out`` of its shape and type."""
        if isinstance(arr, np.ndarray):
            np.copyto(out, arr)
        elif out.flags.c_contiguous:
            arr.copy_to_host(out)
        else:
            out[...] = arr.copy_to_host()

    def debug_source(self, module_name, source):
        """LAZYCV_DEBUG=2 prints every generated kernel once."""
        from ..runtime import debug_level
        if debug_level() >= 2:
            print(f"[lazycv] kernel {module_name} ({self.name}):\n{source}", file=sys.stderr)

    @staticmethod
    def indent(lines, n):
        pad = " " * n
        return "\n".join(pad + ln for ln in lines)
