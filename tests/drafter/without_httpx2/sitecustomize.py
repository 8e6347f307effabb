"""Put first on PYTHONPATH by tests/drafter/test_drafter_fetch_hub_floor.py: Python imports this at
start-up, and from then on `import httpx2` fails as it does in a vLLM image that holds
huggingface_hub 1.x (httpx2 comes only with huggingface_hub 2.x)."""

import sys
from importlib.abc import MetaPathFinder


class _NoHttpx2(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "httpx2" or name.startswith("httpx2."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoHttpx2())
