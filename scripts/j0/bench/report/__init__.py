"""`j0 bench report DIR`: tables and plots (with their CSV) over the settings in DIR.

results_folder (the settings found in DIR, shards merged), figures (acceptance by both definitions,
the histogram, by context length, speed, over repeats, J0 on minus off), baseline (speedup and
the lossless check against the setting without speculative decoding), markdown (report.md),
plots (PNG + CSV), run (run_report(ReportOptions) -> ReportOutcome; say() prints it;
main(folder, ...) for other commands, as before).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ReportOptions", "ReportOutcome", "main", "run_report", "said", "say"]


def __getattr__(name: str) -> Any:
    """The face, resolved on first use: `j0 --help` imports report/cli.py, and with it this
    package, but none of the report's work."""
    if name in __all__:
        from j0.bench.report import run

        return getattr(run, name)
    raise AttributeError(f"module 'j0.bench.report' has no attribute {name!r}")
