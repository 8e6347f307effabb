"""`j0 status`: whether a running server is the article's setup, from what the server says
(health, model, spec-decode counters around one probe) and what its log says (identity lines)."""

from typing import Any

# The face other commands use (issue 32): the run function, its options, the report it returns.
# Resolved on first use, so that `j0 --help` imports none of it.
FACE = ("StatusOptions", "run_status", "StatusReport")


def __getattr__(name: str) -> Any:
    if name in ("StatusOptions", "run_status"):
        from j0.status.run import StatusOptions, run_status

        return {"StatusOptions": StatusOptions, "run_status": run_status}[name]
    if name == "StatusReport":
        from j0.status.status_report import StatusReport

        return StatusReport
    raise AttributeError(f"module 'j0.status' has no attribute {name!r}")
