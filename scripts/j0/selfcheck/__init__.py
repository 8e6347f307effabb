"""`j0 selfcheck`: runs a speculator.py's real kernels over a battery of batches, J0 off and on,
and compares every output with an independent reference written from the seed (and times J0).
cli.py parses; run.py (run_selfcheck(SelfcheckOptions)) checks what it can and starts the worker
(worker.py, a process of its own)."""
