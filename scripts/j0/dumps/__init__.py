"""`j0 dumps`: read the patch's step dumps (`VLLM_DFLASH_DUMP`), show them, check every J0 draw
against the selfcheck's reference, compare two dump sets, and replay them on a reference drafter.

load reads and groups the dumps, show and compare tabulate them, printing prints and writes the
reports. check is `j0 dumps check`'s entry point (run_check(CheckOptions) -> CheckResult), with
its work in folder_check, request_check, step_checks, slot_inference, draw_verification,
slot_history, query_step, check_context, findings and check_report. replay, reference_model and
reference_weights run the DFlash authors' reference drafter on the dumps.
"""
