"""`python -m j0.selfcheck`: the selfcheck worker, in a process of its own (see worker.py); where
J0_SELFCHECK_ZYGOTES is set, forked from a process that has imported vLLM already (zygote.py)."""

import sys

from j0.selfcheck.zygote import main_forked

forked = main_forked(sys.argv[1:])
if forked is not None:
    sys.exit(forked)

from j0.selfcheck.worker import main  # noqa: E402

sys.exit(main())
