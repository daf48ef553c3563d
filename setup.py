"""The optional C parts: the hot path of a replayed cv2.cuda call (lazycv/_hotpath.c) and the CPU
backend's bands on native threads (lazycv/backends/_bands.c); docs/architecture.md says why.
Everything else about the package is in pyproject.toml. Without a C compiler the build skips
them and lazycv runs the same steps in Python."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("lazycv._hotpath", ["lazycv/_hotpath.c"], optional=True),
                   Extension("lazycv.backends._bands", ["lazycv/backends/_bands.c"], optional=True)])
