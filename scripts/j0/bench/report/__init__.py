"""`j0 bench report DIR`: tables and plots (with their CSV) over the settings in DIR.

settings (the settings found in DIR, shards merged), figures (acceptance by both definitions,
the histogram, by context length, speed, over repeats, J0 on minus off), baseline (speedup and
the lossless check against the setting without speculative decoding), markdown (report.md),
plots (PNG + CSV), command (report(ReportOptions) -> ReportOutcome; say() prints it;
main(folder, ...) for other commands, as before).
"""

from __future__ import annotations

from j0.bench.report.run import ReportOptions, ReportOutcome, main, report, say

__all__ = ["ReportOptions", "ReportOutcome", "main", "report", "say"]
