"""How vLLM 0.33.0 decides whether each DFlash draft layer attends causally, from config.json.

A reimplementation, written from reading vLLM 0.33.0's
`vllm/model_executor/models/qwen3_dflash.py` (`_dflash_layer_causal`): vLLM itself is not imported.
For layer i, the first of these that is set (not null) decides:

1. a top-level `is_causal` (vLLM reads it first, so a `false` here beats `dflash_config.causal`);
2. `dflash_config.causal`;
3. the per-layer default: causal only if `layer_types[i]` is `"sliding_attention"`; with no
   `layer_types` at all, non-causal.

vLLM loads the draft's config.json as transformers' `Qwen3Config`, which fills in `layer_types`
when the file has none ("sliding_attention" from `max_window_layers` on when `use_sliding_window`
is true, else "full_attention"), and `num_hidden_layers` (default 32) gives the layer count.
Both defaults are copied here (transformers 5.x `Qwen3Config.__post_init__`).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SLIDING_ATTENTION = "sliding_attention"
# transformers' Qwen3Config defaults, used when config.json leaves a key out.
QWEN3_DEFAULTS = {
    "num_hidden_layers": 32,
    "use_sliding_window": False,
    "sliding_window": 4096,
    "max_window_layers": 28,
}


@dataclass(frozen=True)
class LayerCausality:
    """Each draft layer's causality and which config key decided it."""

    causal: tuple[bool, ...]
    decided_by: str
    notes: tuple[str, ...] = ()

    @property
    def all_causal(self) -> bool:
        return all(self.causal)

    def to_json(self) -> dict[str, Any]:
        """What `j0 drafter check --json` and `patch-config --json` say of the layers."""
        return {
            "layers": len(self.causal),
            "all_causal": self.all_causal,
            "causal": list(self.causal),
            "decided_by": self.decided_by,
            "notes": list(self.notes),
            "summary": self.summary(),
        }

    def summary(self) -> str:
        count = len(self.causal)
        if self.all_causal:
            return f"all {count} draft layers causal (decided by {self.decided_by})"
        bad = [str(i) for i, causal in enumerate(self.causal) if not causal]
        return (
            f"{len(bad)} of {count} draft layers NOT causal: layers {', '.join(bad)} "
            f"(decided by {self.decided_by})"
        )


# More layers than any model has (Qwen3.8-27B: 64; the drafter: 5): a count above it is not a
# config but an attack on the lists sized by it (a tuple of num_hidden_layers flags).
MAX_LAYERS = 4096


def _layer_types(config: Mapping[str, Any], num_layers: int) -> list[Any]:
    """`layer_types` as transformers' Qwen3Config leaves it after loading config.json."""
    given = config.get("layer_types")
    if given is not None:
        if not isinstance(given, list) or len(given) > MAX_LAYERS:
            what = f"{len(given)} entries" if isinstance(given, list) else type(given).__name__
            raise ValueError(f"layer_types is {what}; expected a list of at most {MAX_LAYERS}")
        return list(given)
    use_swa = bool(config.get("use_sliding_window", QWEN3_DEFAULTS["use_sliding_window"]))
    window = config.get("sliding_window", QWEN3_DEFAULTS["sliding_window"]) if use_swa else None
    first_sliding = config.get("max_window_layers", QWEN3_DEFAULTS["max_window_layers"])
    return [
        SLIDING_ATTENTION if window is not None and i >= first_sliding else "full_attention"
        for i in range(num_layers)
    ]


def resolve(config: Mapping[str, Any]) -> LayerCausality:
    """Resolve every draft layer's causality the way vLLM 0.33.0 does."""
    notes: list[str] = []
    num_layers = config.get("num_hidden_layers")
    if num_layers is None:
        num_layers = QWEN3_DEFAULTS["num_hidden_layers"]
        notes.append(f"num_hidden_layers is absent: Qwen3Config's default {num_layers} applies")
    if (
        not isinstance(num_layers, int)
        or isinstance(num_layers, bool)
        or not 0 <= num_layers <= MAX_LAYERS
    ):
        raise ValueError(
            f"num_hidden_layers is {num_layers!r}, expected an integer from 0 to {MAX_LAYERS}"
        )

    is_causal = config.get("is_causal")
    if is_causal is not None:
        return LayerCausality(
            (bool(is_causal),) * num_layers,
            f"top-level is_causal = {json.dumps(is_causal)}",
            tuple(notes),
        )
    dflash = config.get("dflash_config") or {}
    override = dflash.get("causal") if isinstance(dflash, Mapping) else None
    if override is not None:
        return LayerCausality(
            (bool(override),) * num_layers,
            f"dflash_config.causal = {json.dumps(override)}",
            tuple(notes),
        )
    layer_types = _layer_types(config, num_layers)
    if not layer_types:
        return LayerCausality(
            (False,) * num_layers, "the default (no is_causal, causal or layer_types)", tuple(notes)
        )
    if len(layer_types) < num_layers:
        raise ValueError(
            f"layer_types has {len(layer_types)} entries for {num_layers} hidden layers"
        )
    causal = tuple(layer_types[i] == SLIDING_ATTENTION for i in range(num_layers))
    return LayerCausality(causal, "per-layer defaults from layer_types", tuple(notes))
