"""The reference drafter: the DFlash authors' `DFlashDraftModel` (PyPI `dflash` 0.1.0) with the
drafter's weights and the target's `embed_tokens` and `lm_head`, run the way vLLM 0.33 runs the
drafter (docs/dumps-replay.md lists each convention and the vLLM file it comes from).

torch, transformers and dflash are imported inside the functions (keeps `j0 --help` fast).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.dumps.replay.weights import read_config, read_target_heads, tensor_index
from j0.engine.source import causality as drafter_causality
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error

if TYPE_CHECKING:
    import torch

# Draft-config keys that would make vLLM 0.33 and the dflash package compute different things
# (or that the replay does not model), with the value that is harmless.
UNSUPPORTED_DFLASH_KEYS: dict[str, Any] = {
    "use_swa": False,  # sliding-window draft layers
    "attention_value_scale": None,  # vLLM scales V, dflash does not
    "attention_sink_bias": False,  # vLLM adds attention sinks, dflash does not
    "sample_from_anchor": False,  # vLLM refuses it for DFlash
    "use_aux_hidden_state": True,  # without it vLLM skips the fc layer
    # dflash-only knobs that vLLM 0.33 ignores: the two would disagree by design.
    "input_embedding_scale": 1.0,
    "output_multiplier": 1.0,
    "final_logit_softcapping": None,
}
UNSUPPORTED_TOP_KEYS: dict[str, Any] = {
    "is_neox_style": True,
    "logit_scale": 1.0,
    "add_swa_attention_sink_bias": False,
}
DTYPES = ("float32", "bfloat16", "float16")


def check_supported(config: Mapping[str, Any], drafter: Path) -> None:
    """Refuse a drafter config that the replay would not run as vLLM 0.33 does."""
    dflash = config.get("dflash_config") or {}
    if not isinstance(dflash, Mapping):
        raise J0Error(f"{drafter}/config.json: dflash_config is not an object", INPUT_LACKS)
    problems: list[str] = []
    for key, harmless in UNSUPPORTED_DFLASH_KEYS.items():
        value = dflash.get(key, config.get(key, harmless))
        if value is not None and value != harmless:
            problems.append(f"dflash_config.{key} = {value!r}")
    for key, harmless in UNSUPPORTED_TOP_KEYS.items():
        if config.get(key, harmless) != harmless:
            problems.append(f"{key} = {config[key]!r}")
    layer_types = config.get("layer_types") or []
    if "sliding_attention" in layer_types or config.get("use_sliding_window"):
        problems.append("sliding-window layers (layer_types / use_sliding_window)")
    vocab, draft_vocab = config.get("vocab_size"), config.get("draft_vocab_size")
    if draft_vocab is not None and draft_vocab != vocab:
        problems.append(f"draft_vocab_size = {draft_vocab} (vocab_size {vocab}: a d2t map)")
    if (drafter / "mask_embedding.pt").exists():
        problems.append("mask_embedding.pt (a separate mask embedding)")
    if problems:
        raise J0Error(
            f"{drafter}/config.json: the replay runs full-attention DFlash drafters as vLLM 0.33 "
            f"does, and this one has {'; '.join(problems)}",
            INPUT_LACKS,
        )


def mask_token_id(config: Mapping[str, Any], drafter: Path) -> int:
    """vLLM's order (`get_parallel_drafting_token_id`): dflash_config.mask_token_id, then the
    top-level mask_token_id."""
    dflash = config.get("dflash_config") or {}
    value = dflash.get("mask_token_id", config.get("mask_token_id"))
    if not isinstance(value, int) or isinstance(value, bool):
        raise J0Error(
            f"{drafter}/config.json: no integer dflash_config.mask_token_id or mask_token_id "
            f"(found {value!r})",
            INPUT_LACKS,
        )
    return value


@dataclass
class Reference:
    """The loaded reference drafter and the facts the report names."""

    model: Any  # dflash.model.DFlashDraftModel
    embed: torch.Tensor
    lm_head: torch.Tensor
    mask_token_id: int
    causal: bool
    causal_decided_by: str
    dtype: str
    device: str
    fc_input: int
    sources: dict[str, str] = field(default_factory=dict)


def _dtype_name(config: Mapping[str, Any]) -> str:
    name = str(config.get("dtype") or config.get("torch_dtype") or "bfloat16")
    return name if name in DTYPES else "bfloat16"


def load_reference(drafter: Path, target: Path, device: str = "cpu") -> Reference:
    """DFlashDraftModel with the drafter's weights, in the drafter's dtype, on `device`."""
    import torch
    from transformers import Qwen3Config

    from j0.errors import require

    DFlashDraftModel = require("dflash.model", "j0 dumps replay", "dumps").DFlashDraftModel

    if device == "cuda" and not torch.cuda.is_available():
        raise J0Error("--device cuda: torch sees no CUDA device here", INPUT_LACKS)
    config = read_config(drafter)
    check_supported(config, drafter)
    try:
        layers = drafter_causality.resolve(config)
    except ValueError as exc:
        raise J0Error(f"{drafter}/config.json: {exc}", INPUT_LACKS) from None
    if len(set(layers.causal)) > 1:
        raise J0Error(
            f"{drafter}/config.json: {layers.summary()}; the dflash package takes one "
            "is_causal for all layers",
            INPUT_LACKS,
        )
    causal = bool(layers.causal[0]) if layers.causal else False
    heads = read_target_heads(target)
    dtype_name = _dtype_name(config)
    dtype = getattr(torch, dtype_name)

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" bars would interleave with the report
    hf_config = Qwen3Config.from_pretrained(str(drafter))
    # The dflash package reads only a top-level is_causal (else: causal only for sliding layers);
    # vLLM reads is_causal, then dflash_config.causal. Set it to what vLLM resolved.
    hf_config.is_causal = causal
    index = tensor_index(drafter)  # refuses a folder without safetensors, naming it
    own_embed = index.find(
        ("embed_tokens.weight", "model.embed_tokens.weight"), "embed_tokens.weight"
    )
    own_head = index.find(("lm_head.weight",), "lm_head.weight")
    model, info = DFlashDraftModel.from_pretrained(
        str(drafter), config=hf_config, dtype=dtype, output_loading_info=True
    )
    unexpected = [n for n in info.get("unexpected_keys", []) if n not in (own_embed, own_head)]
    missing = list(info.get("missing_keys", []))
    if missing or unexpected or info.get("mismatched_keys"):
        raise J0Error(
            f"{drafter}: its weights do not fit DFlashDraftModel (missing: "
            f"{', '.join(missing[:5]) or 'none'}; unexpected: {', '.join(unexpected[:5]) or 'none'}"
            f"; mismatched: {len(info.get('mismatched_keys', []))})",
            INPUT_LACKS,
        )
    sources = {"embed_tokens": f"{target}: {heads.embed_source}"}
    sources["lm_head"] = f"{target}: {heads.lm_head_source}"
    embed, lm_head = heads.embed, heads.lm_head
    # vLLM (eagle/utils.py maybe_share_target_embed, dflash/utils.py): the draft keeps its own
    # embed_tokens / lm_head where it ships one (that differs), else shares the target's.
    if own_embed is not None:
        embed, sources["embed_tokens"] = index.read(own_embed), f"{drafter}: {own_embed}"
    if own_head is not None:
        lm_head, sources["lm_head"] = index.read(own_head), f"{drafter}: {own_head}"
    fc_input = int(model.fc.weight.shape[1])
    hidden = int(model.fc.weight.shape[0])
    if embed.shape[1] != hidden or lm_head.shape[1] != hidden:
        raise J0Error(
            f"embed_tokens {tuple(embed.shape)} / lm_head {tuple(lm_head.shape)} do not fit the "
            f"drafter's hidden size {hidden} ({drafter})",
            INPUT_LACKS,
        )
    model = model.to(device).eval()
    return Reference(
        model=model,
        embed=embed.to(device=device, dtype=dtype),
        lm_head=lm_head.to(device=device, dtype=dtype),
        mask_token_id=mask_token_id(config, drafter),
        causal=causal,
        causal_decided_by=layers.decided_by,
        dtype=dtype_name,
        device=device,
        fc_input=fc_input,
        sources=sources,
    )


class RequestContext:
    """One request's draft KV cache, as dflash_generate keeps it: the committed context's K/V,
    appended each step; the query block's K/V is cropped away after the step."""

    def __init__(self, reference: Reference) -> None:
        from dflash.model import _make_cache

        self.reference = reference
        self.cache = _make_cache(reference.model.config)
        self.cached = 0  # context rows whose K/V the cache holds
        self.pending_aux: list[torch.Tensor] = []
        self.pending_positions: list[torch.Tensor] = []

    def add_context(self, aux: torch.Tensor, positions: torch.Tensor) -> None:
        """Committed rows (taps and positions), fed to the drafter with the next query block."""
        if aux.numel():
            self.pending_aux.append(aux)
            self.pending_positions.append(positions)

    def draft_logits(self, query_ids: torch.Tensor, query_positions: torch.Tensor) -> torch.Tensor:
        """Logits [num_query - 1, vocab] (float32) of query slots 1.. : slot k's logits give the
        draft token at query_positions[k], as vLLM samples them (slot 0 is the anchor)."""
        import torch
        from dflash.model import _crop_to

        if not self.pending_aux:
            raise J0Error("a query step with no new committed context", CHECK_FAILED)
        ref = self.reference
        dtype = getattr(torch, ref.dtype)
        with torch.inference_mode():
            aux = torch.cat(self.pending_aux).to(device=ref.device, dtype=dtype)[None]
            positions = torch.cat([*self.pending_positions, query_positions.cpu().long()])
            noise = torch.nn.functional.embedding(query_ids.to(ref.device).long(), ref.embed)
            hidden = ref.model(
                target_hidden=aux,
                noise_embedding=noise[None],
                position_ids=positions.to(ref.device)[None],
                past_key_values=self.cache,
                use_cache=True,
            )
            self.cached += aux.shape[1]
            _crop_to(self.cache, self.cached)
            self.pending_aux, self.pending_positions = [], []
            logits = ref.model.compute_logits(
                hidden[:, 1:, :], lambda h: torch.nn.functional.linear(h, ref.lm_head)
            )
        return logits[0].float().cpu()
