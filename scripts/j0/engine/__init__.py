"""What this project knows about vLLM 0.33 as an engine, behind names in one place.

Its releases and version file, where the base speculator.py lives and how to read it (installed,
wheel, image), the drafter-causality rule of `qwen3_dflash.py`, the spec-decode counters of
/metrics and of per-request metrics, pulling its images. A later vLLM is a change here.
Standard library at import time; docker-py and prometheus_client inside the functions that use them.
"""
