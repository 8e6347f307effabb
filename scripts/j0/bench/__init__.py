"""`j0 bench`: measure acceptance and speed of a running vLLM server with J0 off and on.

run/ (`j0 bench run`: one setting into a result file; run_bench(RunOptions)), report/ (`j0 bench
report`: tables and plots of a results folder), matrix/ (`j0 bench matrix`: every setting on a
restarted server, backends compose/ and k8s/); what these share: result/ (the result file,
BenchResult, and its request entry, RequestEntry), stream/ (one streamed request to the server),
dataset/ (the prompts sent) and analysis/ (acceptance and the roofline).
"""

from typing import Any

# The face other commands use (issue 32), resolved on first use so that `j0 --help` imports none
# of it: `j0 bench run` (RunOptions, run_bench), `j0 bench report` (ReportOptions, run_report), the
# result file's readers (read_result, pooled, entry_counts, entry_problems) and its request entry
# (RequestEntry).
FACE = (
    "RunOptions",
    "run_bench",
    "ReportOptions",
    "run_report",
    "read_result",
    "pooled",
    "entry_counts",
    "entry_problems",
    "RequestEntry",
)


def __getattr__(name: str) -> Any:
    if name in ("RunOptions", "run_bench"):
        from j0.bench.run import RunOptions, run_bench

        return {"RunOptions": RunOptions, "run_bench": run_bench}[name]
    if name in ("ReportOptions", "run_report"):
        from j0.bench.report import ReportOptions, run_report

        return {"ReportOptions": ReportOptions, "run_report": run_report}[name]
    if name in ("read_result", "pooled", "entry_counts", "entry_problems"):
        from j0.bench.result.results import entry_counts, entry_problems, pooled, read_result

        found: dict[str, Any] = {
            "read_result": read_result,
            "pooled": pooled,
            "entry_counts": entry_counts,
            "entry_problems": entry_problems,
        }
        return found[name]
    if name == "RequestEntry":
        from j0.bench.result.request_entry import RequestEntry

        return RequestEntry
    raise AttributeError(f"module 'j0.bench' has no attribute {name!r}")
