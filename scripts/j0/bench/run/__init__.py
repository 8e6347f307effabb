"""`j0 bench run`: one setting of a running server measured into a result file.

options (RunOptions: every flag, typed), discovery (what the server serves, the prompts, the
manifest), sending (the requests and their streams), summary (the figures, the result document
and the lines printed), command (run(): the order of a run). Callers inside j0 (the matrix's
backends) build a RunOptions and call run() or run_as_command().
"""

from __future__ import annotations

from j0.bench.run.command import RunOutcome, run, run_as_command
from j0.bench.run.options import DEFAULT_REQUESTS, RunOptions

__all__ = ["DEFAULT_REQUESTS", "RunOptions", "RunOutcome", "run", "run_as_command"]
