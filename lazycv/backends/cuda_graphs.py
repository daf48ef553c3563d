"""CUDA Graphs through the driver API: a tape of launches (lazycv.graphs) captured into one
executable graph, and launched on a stream.

Every driver call lazycv makes for graphs is here. It uses ``cuda.bindings.driver`` (the
bindings numba-cuda 0.30 itself runs on: ``cuStreamCreate``, ``cuStreamBeginCapture``,
``cuStreamEndCapture``, ``cuGraphInstantiate``, ``cuGraphLaunch``) and numba-cuda's public
``cuda.external_stream`` to hand the capture stream to the backend's launches. What breaks if
numba-cuda changes: the backend's direct launch (backends/cuda.py ``_DirectLaunch``) must keep
launching on the stream handle it is given — a launch that went elsewhere (the default stream)
during a capture fails the capture, which ``capture`` then reports as None and lazycv replays
the tape launch by launch instead. If ``cuda.bindings`` changes its return convention
(``(err, value)`` tuples), ``_check`` is the one place to adapt.
"""


def _check(result, what):
    """The value of a ``cuda.bindings`` call returning (err, value...), raising on an error."""
    from cuda.bindings import driver as cu
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"lazycv: {what} failed: {err!r}")
    return values[0] if len(values) == 1 else values


class GraphExec:
    """An instantiated CUDA Graph (destroyed with this object)."""
    __slots__ = ("graph", "exec", "__weakref__")

    def __init__(self, graph, exe):
        self.graph, self.exec = graph, exe

    def __del__(self):
        try:
            from cuda.bindings import driver as cu
            cu.cuGraphExecDestroy(self.exec)
            cu.cuGraphDestroy(self.graph)
        except Exception:            # (interpreter shutdown)
            pass


def capture(backend, launches):
    """The CUDA Graph of ``launches`` — (unwrapped backend launch method, args, kwargs) each,
    every kernel already launched once (so none compiles during the capture) and every table
    device-resident — or None when the capture fails (the caller replays the launches itself).
    Capturing does not run anything."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return None
    stream = _check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate")
    try:
        handle = backend.cuda.external_stream(int(stream))
        _check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               "cuStreamBeginCapture")
        failed = False
        try:
            for launch, args, kw in launches:
                launch(*args, stream=handle, **kw)
        except Exception:
            failed = True
        err, graph = cu.cuStreamEndCapture(stream)
        if failed or err != cu.CUresult.CUDA_SUCCESS:
            return None
        try:
            exe = _check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except RuntimeError:
            cu.cuGraphDestroy(graph)
            return None
        return GraphExec(graph, exe)
    finally:
        cu.cuStreamDestroy(stream)


def launch(graph, stream):
    """Launch ``graph`` (a GraphExec) on ``stream`` (a numba-cuda stream; None: the default one)."""
    from cuda.bindings import driver as cu
    h = cu.CUstream(0 if stream is None else int(stream.handle))
    _check(cu.cuGraphLaunch(graph.exec, h), "cuGraphLaunch")
