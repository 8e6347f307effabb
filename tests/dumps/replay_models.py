"""Tiny random models for the replay tests, and a recorder that runs the dflash package's own
speculative loop (`dflash_generate`) and writes its steps in the patch's dump format.

The recorder only observes: forward hooks on the target (its inputs and the taps of its hidden
states) and a pre-hook on the draft model (the context length and positions it is given). What
`dflash_generate` drafted is read from the target's next verify block (anchor + drafts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

VOCAB = 12  # small: random drafts then sometimes match the target (acceptances)
HIDDEN = 64
BLOCK = 8  # dflash block size: the anchor + 7 draft slots (vLLM: num_speculative_tokens = 7)
MASK = VOCAB - 1
INIT_RANGE = 0.1  # the draft layers matter more than at 0.02: more varied drafts
TARGET_LAYER_IDS = [0, 2]
COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
}


def make_target(folder: Path, seed: int = 0) -> Any:
    """A 3-layer random Qwen3 target (bf16), saved in several safetensors shards with an index."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(num_hidden_layers=3, tie_word_embeddings=False, **COMMON)
    target = Qwen3ForCausalLM(config).to(torch.bfloat16).eval()
    target.save_pretrained(folder, max_shard_size="40KB")
    assert (folder / "model.safetensors.index.json").is_file(), "expected a sharded target"
    return target


def make_draft(
    folder: Path, causal: bool, seed: int = 1, target_layer_ids: list[int] | None = None
) -> Any:
    """A 2-layer random DFlash head (the dflash package's DFlashDraftModel, bf16).

    The returned model is made causal the dflash package's way (a top-level `is_causal`); the
    saved config.json says so the vLLM way only (`dflash_config.causal`), with no `is_causal`, so
    the replay must resolve causality as vLLM does to run it the same way. The model returned is
    the saved one loaded back with `from_pretrained`, as the package's users load a head: made in
    memory and cast with `.to(bfloat16)`, its rotary `inv_freq` buffer would be rounded to bf16
    too, which a loaded head (and vLLM's rope) keeps in float32.
    """
    from dflash.model import DFlashDraftModel
    from transformers import Qwen3Config

    torch.manual_seed(seed)
    config = Qwen3Config(num_hidden_layers=2, initializer_range=INIT_RANGE, **COMMON)
    config.dflash_config = {
        "mask_token_id": MASK,
        "target_layer_ids": target_layer_ids or TARGET_LAYER_IDS,
        "causal": causal,
    }
    config.block_size = BLOCK
    config.num_target_layers = 3
    config.is_causal = causal
    DFlashDraftModel(config).to(torch.bfloat16).save_pretrained(folder)
    path = folder / "config.json"
    saved = json.loads(path.read_text())
    saved.pop("is_causal", None)
    path.write_text(json.dumps(saved, indent=2))
    draft = DFlashDraftModel.from_pretrained(folder, config=config, dtype=torch.bfloat16).eval()
    assert all(layer.self_attn.is_causal == causal for layer in draft.layers)
    return draft


def set_causal(folder: Path, causal: bool) -> None:
    """Rewrite dflash_config.causal in folder/config.json."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["dflash_config"]["causal"] = causal
    path.write_text(json.dumps(config, indent=2))


@dataclass
class Recorded:
    steps: list[dict[str, Any]]  # in the patch's dump format, one per draft step
    logits: list[torch.Tensor]  # the draft's logits per step [BLOCK - 1, VOCAB], float32
    output_ids: torch.Tensor
    accepted: list[int]  # drafts accepted per verify step


def record_generate(draft: Any, target: Any, prompt: torch.Tensor, max_new_tokens: int) -> Recorded:
    """Run dflash_generate (greedy) and turn each of its draft steps into a dump step."""
    from dflash.model import dflash_generate, extract_context_feature

    target_calls: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    draft_calls: list[tuple[torch.Tensor, torch.Tensor, int]] = []
    draft_logits: list[torch.Tensor] = []

    def on_target(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        ids = args[0] if args else kwargs["input_ids"]
        taps = extract_context_feature(output.hidden_states, draft.target_layer_ids)
        target_calls.append((ids[0].clone(), kwargs["position_ids"][0].clone(), taps[0].clone()))

    def on_draft(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        draft_calls.append(
            (
                kwargs["noise_embedding"][0].clone(),
                kwargs["position_ids"][0].clone(),
                kwargs["target_hidden"].shape[1],
            )
        )

    def on_lm_head(module: Any, args: tuple[Any, ...], output: torch.Tensor) -> None:
        # dflash_generate computes the draft's logits with the target's lm_head on the BLOCK - 1
        # draft slots; the target's own calls cover 1 (prefill) or BLOCK rows.
        if output.shape[1] == BLOCK - 1:
            draft_logits.append(output[0].float().clone())

    hooks = [
        target.register_forward_hook(on_target, with_kwargs=True),
        draft.register_forward_pre_hook(on_draft, with_kwargs=True),
        target.lm_head.register_forward_hook(on_lm_head),
    ]
    try:
        output_ids = dflash_generate(
            draft, target, prompt, max_new_tokens, stop_token_ids=None, temperature=0.0
        )
    finally:
        for hook in hooks:
            hook.remove()

    embed = target.get_input_embeddings().weight
    steps: list[dict[str, Any]] = []
    accepted: list[int] = []
    for j, (noise, positions, num_ctx) in enumerate(draft_calls):
        if noise.shape[0] != BLOCK or j + 1 >= len(target_calls):
            break  # the loop's last, shortened block: not a full draft step
        ids, target_positions, taps = target_calls[j]
        verify_ids, verify_positions, _ = target_calls[j + 1]
        query_ids = torch.cat([verify_ids[:1], torch.full((BLOCK - 1,), MASK)])
        # What the draft was given is what the dump says it was given.
        assert torch.equal(noise, torch.nn.functional.embedding(query_ids, embed))
        assert torch.equal(positions[num_ctx:], verify_positions)
        valid = num_ctx
        steps.append(
            {
                "positions": target_positions.to(torch.int64),
                "input_ids": ids.to(torch.int32),
                "aux": taps.to(torch.bfloat16),
                "num_rejected": torch.tensor([ids.numel() - valid], dtype=torch.int32),
                "num_sampled": torch.tensor([1 if j == 0 else valid], dtype=torch.int32),
                "ctx_noise": False,
                "query_ids": query_ids.to(torch.int32),
                "query_positions": positions[num_ctx:].to(torch.int64),
                "draft_tokens": verify_ids[1:].to(torch.int64)[None],
            }
        )
        if j > 0:
            accepted.append(valid - 1)
    return Recorded(steps, draft_logits[: len(steps)], output_ids, accepted)


def write_dumps(folder: Path, steps: list[dict[str, Any]], first: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, step in enumerate(steps):
        torch.save(step, folder / f"step{first + i:04d}.pt")
