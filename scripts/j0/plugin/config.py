"""The `dflash_j0` method's SpeculatorConfig: vLLM's DFlash config (the drafter, its checks and
sizes are DFlash's), with `speculator_options` allowed and checked, and the speculator class
j0.plugin.dflash_j0.DFlashJ0Speculator. vLLM resolves it by name (register.CONFIG_CLASS) where it
reads `--speculative-config`: the API server's process first, so that bad options stop
`vllm serve` before any model is loaded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vllm.v1.worker.gpu.spec_decode.dflash.config import DFlashSpeculatorConfig

from j0.plugin.options import parse_options
from j0.plugin.proven import plugin_pins
from j0.plugin.source import source_for

if TYPE_CHECKING:
    from vllm.config import SpeculativeConfig


class DFlashJ0SpeculatorConfig(DFlashSpeculatorConfig):
    speculator_class = "j0.plugin.dflash_j0.DFlashJ0Speculator"
    supported_options = DFlashSpeculatorConfig.supported_options | frozenset({"speculator_options"})

    @classmethod
    def apply_options(cls, spec: SpeculativeConfig) -> None:
        """Check J0's options, and that this vLLM gives their J0 file (raises ValueError)."""
        super().apply_options(spec)
        options = parse_options(spec.speculator_options, plugin_pins().j0_seed)
        source_for(options)

    def hash_factors(self) -> list[Any]:
        options = self.spec_config.speculator_options or {}
        return [*super().hash_factors(), json.dumps(options, sort_keys=True, default=str)]
