"""The tiny random models of the recorded H200 engine run (made then by a script of ours outside
this repository), made again here: the same configs, the same seed, the same order of creation, so
the same weights (the target is checked against the dumped taps by the test). Only the models;
the engine run's word-level tokenizer is not needed to replay dumps.

The dumps of those runs are in tests/data/ (engine-h200, engine-h200-graphs-k15,
engine-h200-prefix-cache: all made with these models).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

VOCAB = 4096
COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1e6,
    "torch_dtype": "bfloat16",
}


def make_engine_models(out: Path) -> tuple[Path, Path]:
    """(target folder, draft folder); the draft's config.json as make_models.py wrote it, before
    `j0 drafter patch-config` (which the engine run applied: the test applies it too)."""
    from dflash.model import DFlashDraftModel
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    target = Qwen3ForCausalLM(
        Qwen3Config(
            num_hidden_layers=4, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, **COMMON
        )
    ).to(torch.bfloat16)
    target_dir = out / "target"
    target.save_pretrained(target_dir)
    config = Qwen3Config(num_hidden_layers=2, **COMMON)
    config.dflash_config = {
        "mask_token_id": VOCAB - 1,
        "target_layer_ids": [1, 2],
        "causal_head": True,
    }
    config.block_size = 16
    config.num_target_layers = 4
    draft = DFlashDraftModel(config).to(torch.bfloat16)
    draft_dir = out / "draft"
    draft.save_pretrained(draft_dir)
    saved = json.loads((draft_dir / "config.json").read_text())
    assert "causal" not in saved["dflash_config"] and "is_causal" not in saved
    return target_dir, draft_dir
