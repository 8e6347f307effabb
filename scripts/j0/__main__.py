"""Allow `python -m j0` (used inside the image, where j0 is not pip-installed)."""

import sys

from j0.cli import main

sys.exit(main())
