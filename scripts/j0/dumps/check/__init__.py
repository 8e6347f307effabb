"""`j0 dumps check`: run (run_check(CheckOptions) -> CheckResult), with its work in folder,
request, steps, slot_inference, draws, slot_history, query_step, context, findings and report."""
