"""Tiny random models that vLLM 0.33 serves with DFlash: a Qwen3 target, a DFlash draft of the
`dflash` package (the DFlash authors' model class) and a word-level tokenizer; no downloads.

Random weights: nothing is accepted, so these models show the plumbing (every line the patch adds),
not acceptance. The draft's config.json is made causal by `j0 drafter patch-config`'s own code.
torch, transformers and tokenizers (all in vLLM's image) are imported inside `make_models`; dflash
where installed. Without dflash (vLLM's image has none) the draft is written with transformers'
Qwen3 layers under DFlashDraftModel's names (`write_draft_without_dflash`; a test holds its keys,
shapes, dtypes and config equal to dflash's). `python -m j0.engine_check.tiny_models OUT` makes
them: `j0 engine-check --image` runs that inside the image, so the host needs only Docker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

VOCAB = 4096
MASK_TOKEN = VOCAB - 1
TARGET_LAYERS = 4
TAPPED_LAYERS = (1, 2)
SEED = 0


@dataclass(frozen=True)
class TinyModels:
    target: Path
    draft: Path
    mask_token_id: int = MASK_TOKEN
    draft_written_by: str = "dflash"  # or "transformers" (write_draft_without_dflash)


SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")  # ids 0-3; never a prefix of a word below


def word(token_id: int) -> str:
    """The tokenizer's word for a token id >= 4: `t<id>` (whitespace-separated, one id each).

    The special tokens have names of their own: a special token named like a word (`t1`) would be
    matched inside other words by the tokenizer's added-token splitter (`t17` -> `t1`, `7`)."""
    return f"t{token_id}"


def make_models(out: Path, seed: int = SEED) -> TinyModels:
    """Write `out/target` and `out/draft` (safetensors, config.json, tokenizer on the target)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    from j0.drafter import patch_config

    common = dict(
        vocab_size=VOCAB,
        hidden_size=512,
        intermediate_size=1024,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=128,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        rope_theta=1e6,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    target_dir, draft_dir = out / "target", out / "draft"
    target_config = Qwen3Config(
        num_hidden_layers=TARGET_LAYERS,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        **common,
    )
    Qwen3ForCausalLM(target_config).to(torch.bfloat16).save_pretrained(target_dir)
    vocab = {name: i for i, name in enumerate(SPECIALS)}
    vocab |= {word(i): i for i in range(len(SPECIALS), VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=SPECIALS[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    unk, bos, eos, pad = SPECIALS
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token=unk, bos_token=bos, eos_token=eos, pad_token=pad
    ).save_pretrained(target_dir)

    draft_config = Qwen3Config(num_hidden_layers=2, **common)
    draft_config.dflash_config = {
        "mask_token_id": MASK_TOKEN,
        "target_layer_ids": list(TAPPED_LAYERS),
        "causal_head": True,
    }
    draft_config.block_size = 16
    draft_config.num_target_layers = TARGET_LAYERS
    try:
        from dflash.model import DFlashDraftModel
    except ModuleNotFoundError as exc:
        if exc.name not in ("dflash", "dflash.model"):
            raise
        write_draft_without_dflash(draft_config, draft_dir)
        written_by = "transformers"
    else:
        written_by = "dflash"
        DFlashDraftModel(draft_config).to(torch.bfloat16).save_pretrained(draft_dir)
    patch_config(draft_dir, None)  # "causal": true, as for the article's drafter
    return TinyModels(target=target_dir, draft=draft_dir, draft_written_by=written_by)


def write_draft_without_dflash(draft_config: Any, draft_dir: Path) -> None:
    """The draft as `DFlashDraftModel(config).save_pretrained` writes it, without the `dflash`
    package: transformers' Qwen3 decoder layers and final norm (the DFlash layers' parameters have
    the same names and shapes), plus `fc` (the taps, concatenated, to the hidden size) and
    `hidden_norm`; random weights (seeded by the caller), bf16, architectures DFlashDraftModel."""
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen3Model

    body = Qwen3Model(draft_config).to(torch.bfloat16)
    state = {k: v for k, v in body.state_dict().items() if not k.startswith("embed_tokens.")}
    hidden = draft_config.hidden_size
    taps = len(draft_config.dflash_config["target_layer_ids"])
    fc = torch.empty(hidden, taps * hidden).normal_(0.0, draft_config.initializer_range)
    state["fc.weight"] = fc.to(torch.bfloat16)
    state["hidden_norm.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    draft_config.architectures = ["DFlashDraftModel"]
    draft_config.dtype = "bfloat16"
    draft_dir.mkdir(parents=True, exist_ok=True)
    draft_config.save_pretrained(draft_dir)
    tensors = {k: v.contiguous() for k, v in sorted(state.items())}
    save_file(tensors, str(draft_dir / "model.safetensors"), metadata={"format": "pt"})


def main(argv: list[str] | None = None) -> int:
    """`python -m j0.engine_check.tiny_models OUT`: what `j0 engine-check --image` runs inside
    the image (exit 0; OUT/target and OUT/draft)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m j0.engine_check.tiny_models OUT", file=sys.stderr)
        return 64
    made = make_models(Path(args[0]))
    print(f"tiny models: {made.target} {made.draft} (draft written by {made.draft_written_by})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
