"""`j0 engine-check`: J0 proven inside vLLM's real engine on this GPU in minutes: tiny random
models served J0 on (with step dumps) and off, checked by logs, outputs, dumps, metrics, status."""

from typing import Any

# The face other commands use (issue 32), resolved on first use: the checks `--here` makes before
# it starts anything (require_gpu, require_server_packages, here_identity).
FACE = ("require_gpu", "require_server_packages", "here_identity")


def __getattr__(name: str) -> Any:
    if name in FACE:
        from j0.engine_check import preflight

        return getattr(preflight, name)
    raise AttributeError(f"module 'j0.engine_check' has no attribute {name!r}")
