.PHONY: test overlay mutation-check engine-check clean-test-caches
# The test command (its own environment in .venv-test, pinned deps, lint, pytest).
test:
	scripts/test

# The article's speculator.py, from the pinned vllm wheel: with the j0 the README installs into
# .venv, else the test environment's (.venv-test), else the one on PATH.
J0 ?= $(firstword $(wildcard .venv/bin/j0 .venv-test/bin/j0) j0)
overlay:
	$(J0) overlay build --from-wheel

# The Docker tests' stand-in images (j0-standin/*) and stand-in cache, kept between runs.
clean-test-caches:
	scripts/clean-test-caches

# Each guard in scripts/mutation-guards.toml disabled in a copy: a fast test must fail.
mutation-check:
	scripts/mutation-check

# J0 in vLLM's real engine with tiny random models, inside the image `docker compose up` built
# (J0_IMAGE), on the server service's GPU: the host needs Docker only. ARGS adds options, e.g.
#   make engine-check ARGS="--graphs --tokens 15"
engine-check:
	docker compose run --rm --no-deps --entrypoint j0 server engine-check --here $(ARGS)

# The fast subset for the inner loop: no Docker, nothing marked slow.
.PHONY: test-fast
test-fast:
	scripts/test -m "not slow and not docker"
