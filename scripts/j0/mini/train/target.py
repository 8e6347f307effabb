"""The target: a Qwen3ForCausalLM (untied, sdpa attention) trained from scratch on the training
stream with AdamW and a cosine learning rate over a time budget (torch.compile'd on CUDA, the
stream on the GPU); its held-out loss overall and by position in the window, and its training
throughput (tokens/s, model FLOPs utilisation); saved in bf16 with the tokenizer."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.mini.device import autocast
from j0.mini.sizes import EOS_ID, Sizes
from j0.mini.train.positions import PositionBucket
from j0.mini.train.schedule import Clock


@dataclass(frozen=True)
class TrainedTarget:
    steps: int
    seconds: float
    last_loss: float
    heldout_loss: float
    by_position: list[PositionBucket] = field(default_factory=list)  # held-out loss by position
    throughput: dict[str, Any] = field(default_factory=dict)  # j0.mini.train.flops.Throughput
    compiled: str = "eager"  # compiled | eager | eager (torch.compile failed: ...)
    warm_s: float = 0.0  # the first step's seconds (compilation included)


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
    """The mean loss over `eval_batches` batches of held-out windows of `target_seq`."""
    return heldout_by_position(model, tokens, sizes, device, seed)[0]


def bucket_edges(sizes: Sizes) -> list[int]:
    """Edges of the position buckets of the held-out loss: every `position_bucket` tokens up to
    the window, with the end of the run's longest default context plus its output (8 x draft_seq
    + check_tokens: 4096 + 256 = 4352) as an edge of its own."""
    edges = [*list(range(0, sizes.target_seq, sizes.position_bucket)), sizes.target_seq]
    mark = 8 * sizes.draft_seq + sizes.check_tokens
    if 0 < mark < sizes.target_seq:
        edges.append(mark)
    return sorted(set(edges))


def heldout_by_position(
    model: Any, tokens: Any, sizes: Sizes, device: str, seed: int
) -> tuple[float, list[PositionBucket]]:
    """The held-out loss (the mean over every predicted token of `eval_batches` batches of
    windows of `target_seq`) and the same loss by the predicted token's position in the window,
    in the buckets of bucket_edges. A position p's loss is that of predicting token p + 1 from
    tokens 0..p."""
    import torch
    import torch.nn.functional as F

    from j0.mini.train.data import windows

    generator = torch.Generator().manual_seed(seed + 1)
    total = torch.zeros(sizes.target_seq - 1, dtype=torch.float64)
    count = 0
    model.eval()
    with torch.no_grad():
        for _ in range(sizes.eval_batches):
            batch = windows(tokens, sizes.target_seq, sizes.target_batch, generator).to(device)
            with autocast(device):
                logits = model(input_ids=batch).logits[:, :-1]
            losses = F.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]),
                batch[:, 1:].reshape(-1),
                reduction="none",
            ).view(batch.shape[0], -1)
            total += losses.sum(0).double().cpu()
            count += batch.shape[0]
    model.train()
    per_position = total / count
    edges = bucket_edges(sizes)
    buckets = []
    for low, high in itertools.pairwise(edges):
        part = per_position[low : min(high, sizes.target_seq - 1)]
        buckets.append(
            PositionBucket(
                start=low,
                to=high,
                tokens=int(part.numel()) * count,
                loss=round(float(part.mean()), 4),
            )
        )
    return float(per_position.mean()), buckets


def compiled(model: Any, device: str, wanted: bool) -> Any:
    """torch.compile(model) where wanted and on CUDA, else the model itself."""
    if not wanted or device != "cuda":
        return model
    import torch

    return torch.compile(model)


def gpu_windows(tokens: Any, seq: int, batch: int, generator: Any) -> Any:
    """[batch, seq] windows at random offsets of `tokens` (a tensor on its device), gathered
    there: no copy through the CPU per step. `generator` (CPU) draws the offsets."""
    import torch

    starts = torch.randint(0, tokens.numel() - seq, (batch, 1), generator=generator)
    index = starts.to(tokens.device) + torch.arange(seq, device=tokens.device)
    return tokens[index]


def train_target(
    train_tokens: Any,
    heldout_tokens: Any,
    sizes: Sizes,
    budget: float,
    device: str,
    seed: int,
    log: Path,
    progress: bool,
    compile_model: bool = True,
) -> tuple[Any, TrainedTarget]:
    """Train until the budget is spent; the model (fp32 weights, on device) and what it did.
    The training stream goes to the device once; each step's windows are gathered there. With
    `compile_model` on CUDA the forward is torch.compile'd; where the first compiled step fails,
    training goes on uncompiled (Trained.compiled says which ran)."""
    import torch
    from transformers import Qwen3ForCausalLM

    from j0.mini.train import flops

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
    if train_tokens.numel() <= sizes.target_seq:
        train_tokens = train_tokens.repeat(sizes.target_seq // max(train_tokens.numel(), 1) + 2)
    stream = train_tokens.to(device)
    forward = compiled(model, device, compile_model)
    note = "compiled" if forward is not model else "eager"
    clock = Clock("target", budget, log, progress)
    step_tokens = sizes.target_seq * sizes.target_batch
    while clock.running():
        lr = clock.lr(sizes.target_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = gpu_windows(stream, sizes.target_seq, sizes.target_batch, generator)
        try:
            with autocast(device):
                loss = forward(input_ids=batch, labels=batch).loss
        except Exception as exc:  # a compiler failure: the first step only, then eager
            if forward is model or clock.steps:
                raise
            forward, note = model, f"eager (torch.compile failed: {type(exc).__name__})"
            continue
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        clock.record(float(loss.detach()), tokens=step_tokens, lr=round(lr, 7))
    seconds = clock.close()
    held, by_position = heldout_by_position(model, heldout_tokens, sizes, device, seed)
    tokens, timed = clock.timed()
    rate = flops.throughput(
        tokens, timed, flops.target_flops_per_token(sizes), flops.device_name(device)
    )
    return model, TrainedTarget(
        clock.steps,
        seconds,
        clock.last_loss,
        held,
        by_position=by_position,
        throughput=rate.to_json(),
        compiled=note,
        warm_s=round(clock.warm_s or 0.0, 1),
    )


def save_target(model: Any, folder: Path) -> None:
    import torch

    model.to(torch.bfloat16).save_pretrained(folder)
