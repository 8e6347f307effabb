.PHONY: test overlay
# The test command (creates .venv, pinned deps, lint, pytest).
test:
	scripts/test

# The article's speculator.py, from the pinned vllm wheel.
overlay:
	.venv/bin/j0 overlay build --from-wheel
