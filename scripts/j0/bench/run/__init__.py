"""`j0 bench run`: one setting of a running server measured into a result file.

options (RunOptions: every flag, typed), discovery (what the server serves, the prompts, the
manifest), sending (the requests and their streams), summary (the figures, the result document
and the lines printed), run (run_bench(): the order of a run). Callers inside j0 (the matrix's
backends) build a RunOptions and call run_bench() or bench_exit_code().
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_REQUESTS", "RunOptions", "RunOutcome", "bench_exit_code", "run_bench"]


def __getattr__(name: str) -> Any:
    """The face, resolved on first use: `j0 --help` imports run/cli.py, and with it this package,
    but none of the run's machinery."""
    if name in ("DEFAULT_REQUESTS", "RunOptions"):
        from j0.bench.run import options

        return getattr(options, name)
    if name in ("RunOutcome", "run_bench", "bench_exit_code"):
        from j0.bench.run import run as run_module

        return getattr(run_module, name)
    raise AttributeError(f"module 'j0.bench.run' has no attribute {name!r}")
