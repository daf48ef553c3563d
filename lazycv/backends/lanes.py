"""Copies and events by address, for a loop that orders its own streams (media.StreamedLoop's
steady state): the few operations of a frame — a copy in, a wait, a graph launch, a copy out,
an event — without the facade's checks, locks and stream bookkeeping around each.

A lane's caller owns every address it passes (page-locked host buffers, device buffers it
keeps alive) and has already ordered their reuse by its own events; the lane only issues.

``HostLane``: memory the host can address (the CPU backend, the simulator), where a copy is
done when it returns and events have nothing to wait for. ``DriverLane``: CUDA through
``cuda.bindings.driver`` (the bindings numba-cuda itself runs on), one driver call per
operation and none of numba's per-call wrapping. Addresses are plain integers; streams and
events are whatever the lane's ``stream`` and ``event`` hand out.
"""
import ctypes


class HostLane:
    """Copies by ``memmove``; events are host-side no-ops (work is done when issued)."""

    def stream(self, handle):
        """The lane's name for a backend stream handle (None: the default stream)."""
        return 0

    def event(self):
        return None

    def copy_in(self, dst, src, nbytes, stream):
        """``nbytes`` from host address ``src`` to device address ``dst``, ordered on ``stream``."""
        ctypes.memmove(dst, src, nbytes)

    def copy_out(self, dst, src, nbytes, stream):
        """``nbytes`` from device address ``src`` to host address ``dst``, ordered on ``stream``."""
        ctypes.memmove(dst, src, nbytes)

    def record(self, event, stream):
        """``event`` marks what ``stream`` holds now."""

    def wait(self, stream, event):
        """Work queued on ``stream`` from now on waits for ``event``."""

    def synchronize(self, event):
        """The host waits for ``event``."""


class DriverLane:
    """CUDA driver calls. Events are numba-cuda's (which destroys them with the object); a
    call passes their driver handle."""

    def __init__(self, cuda):
        from cuda.bindings import driver as cu
        self._cu, self._cuda = cu, cuda
        self._copy_in, self._copy_out = cu.cuMemcpyHtoDAsync, cu.cuMemcpyDtoHAsync
        self._record, self._wait, self._sync = cu.cuEventRecord, cu.cuStreamWaitEvent, cu.cuEventSynchronize

    def stream(self, handle):
        return self._cu.CUstream(0 if handle is None else int(handle.handle or 0))

    def event(self):
        return self._cuda.event(timing=False)

    def copy_in(self, dst, src, nbytes, stream):
        _check(self._copy_in(dst, src, nbytes, stream), "cuMemcpyHtoDAsync")

    def copy_out(self, dst, src, nbytes, stream):
        _check(self._copy_out(dst, src, nbytes, stream), "cuMemcpyDtoHAsync")

    def record(self, event, stream):
        _check(self._record(event.handle, stream), "cuEventRecord")

    def wait(self, stream, event):
        _check(self._wait(stream, event.handle, 0), "cuStreamWaitEvent")

    def synchronize(self, event):
        _check(self._sync(event.handle), "cuEventSynchronize")


def _check(result, what):
    err, = result
    if err:
        raise RuntimeError(f"lazycv: {what} failed: {err!r}")
