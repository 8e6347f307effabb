#!/bin/sh
# The image's entrypoint: log which speculator.py this container runs (sha256 and identity:
# the article's file, the unpatched base or other; a bind-mounted swap shows up here), then
# replace this shell by `vllm serve` with the container's arguments.
set -eu
if ! j0 image identity --prefix j0-entrypoint; then
  echo "j0-entrypoint: warning: could not identify speculator.py (see above); starting vLLM anyway" >&2
fi
exec vllm serve "$@"
