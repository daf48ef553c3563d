"""The cv2.cuda façade: GpuMat, Stream, Event, device queries, and the patching itself."""
from .gpumat import GpuMat  # noqa: F401
from .stream import Event, Stream  # noqa: F401
