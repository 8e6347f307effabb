"""What this project knows about vLLM 0.33 as an engine, behind names in one place, so that a
later vLLM is a change here: vllm_version (its `vllm/_version.py`), base_sources (where the base
speculator.py is: installed, in the release wheel, in an image), causality (the drafter-causality
rule of `qwen3_dflash.py`), server_log (the start-up lines its log carries, ours and the patch's),
endpoints (its HTTP routes and one wait-for-/health), spec_counts and prometheus_counters
(the spec-decode counts of per-request metrics and of /metrics), spec_ranges (the ranges those
counts can take), pull (getting its images), local_needs (what serving this machine's vLLM
needs, each missing piece exit 69), wheel_index (its per-commit wheel index: the folder to
take, the CUDA variant's or the root, the wheel, its download; what the image's build step and
j0 doctor ask), wheel_cuda (a wheel's own CUDA, read from its file name and METADATA).
Standard library at import time; docker-py and prometheus_client inside the functions that use
them. Imports no command package.
"""
