"""Put first on PYTHONPATH by tests/selfcheck/test_selfcheck_unavailable.py: Python imports this
at start-up, and from then on each module named in J0_TEST_HIDE_MODULES (comma-separated) fails to
import as an absent package does (ModuleNotFoundError naming it), e.g. `cbor2` in a Python where
vLLM was installed with --no-deps and nothing else."""

import os
import sys
from importlib.abc import MetaPathFinder

HIDDEN = {name for name in os.environ.get("J0_TEST_HIDE_MODULES", "").split(",") if name}


class _Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name.split(".", 1)[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
