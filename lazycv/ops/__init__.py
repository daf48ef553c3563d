"""Op families. Each module holds, for its ops: the cv2.cuda function (argument parsing and
validation), the shape/dtype rule, the device snippet (``OpDef.emit``) and the CPU OpenCV
reference used by tests. Importing this package registers every op and every cv2.cuda function.
"""
from .common import API  # noqa: F401
from . import core, convert, arith, color, geometry, channels, warp, layout  # noqa: F401
from . import filters, morphology  # noqa: F401
from . import logic, mathfn, pointwise  # noqa: F401
from . import reduce, hist  # noqa: F401
from . import algorithms, cpu_functions, features, video  # noqa: F401  (CPU OpenCV paths)
