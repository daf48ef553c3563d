"""``python -m lazycv``: the command line (lazycv/cli). ``pipeline`` and ``STD`` are the demo's
cv2.cuda pipeline, kept importable here for bench/profile_host.py."""
import sys

from .cli import main
from .cli.demo import MEAN, STD, pipeline, reference  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
