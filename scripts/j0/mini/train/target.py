"""The target: a Qwen3ForCausalLM (untied, sdpa attention) trained from scratch on the training
stream with AdamW and a cosine learning rate over a time budget; saved in bf16 with the
tokenizer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.mini.device import autocast
from j0.mini.sizes import EOS_ID, Sizes
from j0.mini.train.schedule import Clock, lr_at


@dataclass(frozen=True)
class Trained:
    steps: int
    seconds: float
    last_loss: float
    heldout_loss: float


def target_config(sizes: Sizes, layers: int | None = None, **extra: Any) -> Any:
    """The target's Qwen3Config (`layers` and `extra`: the same width for a drafter)."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=sizes.vocab,
        hidden_size=sizes.hidden,
        intermediate_size=sizes.mlp,
        num_hidden_layers=layers or sizes.layers,
        num_attention_heads=sizes.heads,
        num_key_value_heads=sizes.kv_heads,
        head_dim=sizes.head_dim,
        max_position_embeddings=8192,
        rms_norm_eps=1e-6,
        rope_theta=1e6,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=EOS_ID,
        pad_token_id=3,
        torch_dtype="bfloat16",
        **extra,
    )


def heldout_loss(model: Any, tokens: Any, sizes: Sizes, device: str, seed: int) -> float:
    import torch

    from j0.mini.train.data import windows

    generator = torch.Generator().manual_seed(seed + 1)
    losses = []
    model.eval()
    with torch.no_grad():
        for _ in range(sizes.eval_batches):
            batch = windows(tokens, sizes.target_seq, sizes.target_batch, generator).to(device)
            with autocast(device):
                losses.append(float(model(input_ids=batch, labels=batch).loss))
    model.train()
    return sum(losses) / len(losses)


def train_target(
    train_tokens: Any,
    heldout_tokens: Any,
    sizes: Sizes,
    budget: float,
    device: str,
    seed: int,
    log: Path,
    progress: bool,
) -> tuple[Any, Trained]:
    """Train until the budget is spent; the model (fp32 weights, on device) and what it did."""
    import torch
    from transformers import Qwen3ForCausalLM

    from j0.mini.train.data import windows

    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    config = target_config(sizes)
    config._attn_implementation = "sdpa"
    model = Qwen3ForCausalLM(config).to(device)
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=sizes.target_lr,
        betas=(0.9, 0.95),
        weight_decay=0.1,
        fused=device == "cuda",
    )
    clock = Clock("target", budget, log, progress)
    while clock.running():
        for group in optimizer.param_groups:
            group["lr"] = lr_at(sizes.target_lr, clock.elapsed, budget)
        batch = windows(train_tokens, sizes.target_seq, sizes.target_batch, generator)
        batch = batch.to(device, non_blocking=True)
        with autocast(device):
            loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        clock.record(float(loss.detach()))
    seconds = clock.close()
    held = heldout_loss(model, heldout_tokens, sizes, device, seed)
    return model, Trained(clock.steps, seconds, clock.last_loss, held)


def save_target(model: Any, folder: Path) -> None:
    import torch

    model.to(torch.bfloat16).save_pretrained(folder)
