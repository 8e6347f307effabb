"""What this project knows about vLLM 0.33 as an engine, behind names in one place, so that a
later vLLM is a change here, in three families:

  source/   where vLLM comes from and what its source decides: vllm_version (its
            `vllm/_version.py`), torch_version, base_sources (where the base speculator.py is:
            installed, in the release wheel, in an image), wheel_index and wheel_cuda (its
            per-commit wheel index; a wheel's own CUDA), pull (getting its images), causality
            (the drafter-causality rule of `qwen3_dflash.py`), contract (the prefix-safe
            variant's contract with its engine's source)
  server/   a running server: launcher (the one vLLM launcher), endpoints (its HTTP routes and
            one wait-for-/health), server_log (the start-up lines its log carries, ours and the
            patch's), speculator_identity and identity_record (which speculator.py it runs),
            j0_state (J0 as asked, as run and why), local_needs (what serving this machine's
            vLLM needs, each missing piece exit 69)
  figures/  its spec-decode figures: spec_counts and prometheus_counters (the counts of
            per-request metrics and of /metrics), spec_ranges (the ranges those counts can take)

Standard library at import time; docker-py and prometheus_client inside the functions that use
them. Imports no command package.
"""
