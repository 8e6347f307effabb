.PHONY: test overlay mutation-check
# The test command (creates .venv, pinned deps, lint, pytest).
test:
	scripts/test

# The article's speculator.py, from the pinned vllm wheel.
overlay:
	.venv/bin/j0 overlay build --from-wheel

# Each guard in scripts/mutation-guards.toml disabled in a copy: a fast test must fail.
mutation-check:
	scripts/mutation-check
