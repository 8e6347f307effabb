"""`j0 dumps`: read the patch's step dumps (`VLLM_DFLASH_DUMP`), show them, check every J0 draw
against the selfcheck's reference, compare two dump sets, and replay them on a reference drafter.

load reads and groups the dumps, show and compare tabulate them, printing prints and writes the
reports. check/ is `j0 dumps check` (check/run.py: run_check(CheckOptions) -> CheckResult), with
its work in folder, request, steps, slot_inference, draws, slot_history, query_step, context,
findings and report. replay/ runs the DFlash authors' reference drafter on the dumps (run, model,
weights).
"""

from typing import Any

# The face other commands use (issue 32): `j0 dumps check`'s run function and options (the
# audit's records are read on the floor below, j0.article.audit_records). Resolved on first use,
# so that `j0 --help` imports none of it.
FACE = ("CheckOptions", "run_check")


def __getattr__(name: str) -> Any:
    if name in ("CheckOptions", "run_check"):
        from j0.dumps.check.run import CheckOptions, run_check

        return {"CheckOptions": CheckOptions, "run_check": run_check}[name]
    raise AttributeError(f"module 'j0.dumps' has no attribute {name!r}")
