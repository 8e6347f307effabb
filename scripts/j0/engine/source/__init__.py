"""Where vLLM comes from and what its source decides: its version and torch's CUDA, the base
speculator.py, the per-commit wheel index and a wheel's CUDA, its images, the drafter-causality
rule and the prefix-safe variant's contract with the engine. Standard library only; the image's
build step copies this folder's version and wheel modules before the rest of j0."""
