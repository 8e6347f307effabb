#!/bin/sh
# The plugin image's entrypoint: `vllm serve` with the container's arguments (`j0 serve --then`
# execs this after its checks). What runs is said by the plugin itself, in its `j0-plugin:` line
# (vLLM's own speculator.py is unchanged, so there is no file to identify here).
set -eu
exec vllm serve "$@"
