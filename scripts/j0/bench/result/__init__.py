"""The result file of `j0 bench run` and what it is made of: results (the document, BenchResult),
request_entry (one measured request), manifest (the setup it was measured with),
metrics_crosscheck (its per-request counts against /metrics) and result_schema (its readers'
checks)."""
