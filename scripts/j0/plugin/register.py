"""The plugin's entry point (`vllm.general_plugins`, `j0 = j0.plugin.register:register`), which
vLLM calls in each of its processes: the version guard, then `register_speculative_method`.

On a vLLM it was not proven on, it registers nothing and logs a warning naming the installed
version, its speculator.py's sha256 and the proven releases: `method: dflash_j0` then fails in
vLLM's own config check ("Unknown speculative method"), never runs another kernel. Whatever goes
wrong here is logged, not raised: vLLM calls this for every server, J0 asked for or not.
"""

from __future__ import annotations

import logging

from j0.plugin import METHOD

# A child of vLLM's logger: its handler and format ("[register.py:N] j0-plugin: ...").
logger = logging.getLogger("vllm.j0_plugin")
CONFIG_CLASS = "j0.plugin.config.DFlashJ0SpeculatorConfig"


def register() -> bool:
    """Register `dflash_j0` when this vLLM is a proven one; True when registered."""
    from j0.plugin.proven import check, installed, plugin_pins, words

    try:
        pins = plugin_pins()
        verdict = check(pins, installed(pins.speculator_relpath))
    except Exception as error:  # a plugin must not stop vLLM's start: say it and register nothing
        logger.warning("j0-plugin: not registering %s: %s", METHOD, error)
        return False
    if verdict.release is None:
        logger.warning("j0-plugin: not registering %s: %s", METHOD, verdict.reason)
        return False
    from vllm.v1.worker.gpu.spec_decode.speculator_config import register_speculative_method

    register_speculative_method(METHOD, CONFIG_CLASS)
    logger.info(
        "j0-plugin: registered speculative method %s for %s", METHOD, words(verdict.release)
    )
    return True
