"""`python -m j0.selfcheck`: the selfcheck worker, in a process of its own (see worker.py)."""

import sys

from j0.selfcheck.worker import main

sys.exit(main())
