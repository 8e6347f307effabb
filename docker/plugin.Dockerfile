# J0 on vLLM 0.34.0 through j0's vLLM plugin (docs/plugin.md): vLLM's own release image, as it is,
# plus the j0 package pip-installed into its Python (the plugin's entry point, its pins and the
# release's J0 patches inside the package). No file of vLLM's is changed: the plugin makes the J0
# speculator in memory, from the image's speculator.py, checked by sha256.
#   docker build -f docker/plugin.Dockerfile .            (compose.plugin.yaml builds it)
# Written for Docker's legacy builder and BuildKit alike; the build needs no network (j0 has no
# dependency, and the image's own setuptools builds it).
ARG VLLM_IMAGE=vllm/vllm-openai:v0.34.0
FROM ${VLLM_IMAGE}

LABEL org.opencontainers.image.title="vllm-openai with j0's J0 plugin" \
      org.opencontainers.image.description="vLLM's release image with j0's vLLM plugin (method dflash_j0); vLLM's files unchanged" \
      org.opencontainers.image.licenses="Apache-2.0" \
      j0.route="plugin"

COPY pyproject.toml setup.py MANIFEST.in README.md /opt/j0-src/
COPY overlay/pins.env /opt/j0-src/overlay/
COPY overlay/vllm-0.34.0/*.patch /opt/j0-src/overlay/vllm-0.34.0/
COPY scripts/j0/ /opt/j0-src/scripts/j0/
COPY docker/plugin-entrypoint.sh /usr/local/bin/j0-plugin-entrypoint

# Install j0 without its (absent) dependencies, from this checkout, with the image's own build
# tools; PIP_BREAK_SYSTEM_PACKAGES lets a Debian-managed Python take it too. Then the plugin's
# version guard on this image's vLLM: a base it was not proven on stops the build here, naming
# what it found and what is supported.
RUN set -eux; \
    chmod 0755 /usr/local/bin/j0-plugin-entrypoint; \
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_NO_CACHE_DIR=1 python3 -m pip install --no-deps \
        --no-build-isolation --no-index /opt/j0-src; \
    rm -rf /opt/j0-src; \
    python3 -P -c 'import sys, os; os.chdir("/"); from j0.plugin.proven import check, installed, plugin_pins; pins = plugin_pins(); verdict = check(pins, installed(pins.speculator_relpath)); sys.exit("j0 plugin: " + verdict.reason) if verdict.release is None else print("j0 plugin: vLLM", verdict.release.release, "proven; pins", pins.root)'

ENTRYPOINT ["/usr/local/bin/j0-plugin-entrypoint"]
CMD []
