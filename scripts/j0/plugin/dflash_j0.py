"""The speculator vLLM builds for `method: dflash_j0` (DFlashJ0SpeculatorConfig.speculator_class):
a subclass of vLLM's installed DFlashSpeculator. vLLM calls it with its config; it reads J0's
`speculator_options`, makes (once per set of options and process) the J0 file's module and the
subclass that holds its DFlashSpeculator's code (j0.plugin.kernel), logs the identity line, and
returns an instance of that subclass, whose `__init__` is the J0 file's.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm.v1.worker.gpu.spec_decode.dflash.speculator import DFlashSpeculator

from j0.plugin import METHOD
from j0.plugin.kernel import MODULE_PARENT, load_module, transplant
from j0.plugin.log_line import identity_line
from j0.plugin.options import J0Options, parse_options
from j0.plugin.proven import plugin_pins
from j0.plugin.source import source_for

logger = logging.getLogger("vllm.j0_plugin")


class DFlashJ0Speculator(DFlashSpeculator):
    """vLLM's DFlashSpeculator with J0: what runs is the class built for the run's options."""

    j0_options: J0Options | None = None

    def __new__(cls, vllm_config: Any, device: Any, req_states: Any = None) -> Any:
        if cls is DFlashJ0Speculator:
            raw = vllm_config.speculative_config.speculator_options
            cls = built_class(parse_options(raw, plugin_pins().j0_seed))
        return object.__new__(cls)


def _init_of(j0_init: Callable[..., None]) -> Callable[..., None]:
    """The J0 file's `__init__`, called as vLLM calls the class: `req_states` passed on only
    when the J0 file's constructor takes it."""
    takes = "req_states" in inspect.signature(j0_init).parameters

    def __init__(self: Any, vllm_config: Any, device: Any, req_states: Any = None) -> None:
        if takes:
            j0_init(self, vllm_config, device, req_states=req_states)
        else:
            j0_init(self, vllm_config, device)

    return __init__


def module_name(options: J0Options, sha256: str) -> str:
    switches = json.dumps(options.switches(), sort_keys=True).encode()
    tag = hashlib.sha256(switches).hexdigest()[:8]
    return f"{MODULE_PARENT}.j0_{options.variant.replace('-', '_')}_{sha256[:12]}_{tag}"


@functools.cache
def built_class(options: J0Options) -> type[DFlashJ0Speculator]:
    """The subclass that runs the J0 file of `options` (made once per process and options)."""
    verdict, source = source_for(options)
    assert verdict.release is not None and verdict.installed.speculator is not None
    name = module_name(options, source.sha256)
    # A name that is no file: linecache holds the text, and the log prints its base name.
    filename = str(Path(__file__).parent / "in-memory" / name.rsplit(".", 1)[1] / "speculator.py")
    module = load_module(source.text, name, filename, options.switches())
    built = transplant(
        module.DFlashSpeculator,
        DFlashSpeculator,
        DFlashJ0Speculator,
        f"DFlashJ0Speculator[{source.identity}]",
    )
    built.__init__ = _init_of(vars(built)["__init__"])  # type: ignore[misc]
    built.j0_options = options
    logger.info(
        "%s",
        identity_line(
            version=verdict.installed.version or "unknown",
            commit=verdict.release.commit,
            method=METHOD,
            path=str(verdict.installed.speculator),
            sha256=source.proven_sha256,
            identity=source.identity,
            variant=options.variant,
            j0=options.j0,
            seed=options.seed,
            running=source.sha256,
            patches=source.patches,
        ),
    )
    return built
