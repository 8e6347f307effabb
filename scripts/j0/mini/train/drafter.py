"""A drafter: the `dflash` package's DFlashDraftModel (its layers, fc and norms; the target's
embed_tokens and lm_head frozen and shared), trained on the target's taps over a time budget,
then measured slot by slot on held-out windows and saved as the folder vLLM 0.33 serves as a
DFlash draft (config.json: architectures ["DFlashDraftModel"], dflash_config, block_size,
is_causal)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.mini.device import autocast
from j0.mini.manifest import SlotScores
from j0.mini.sizes import MASK_ID, Sizes
from j0.mini.train import batch as drafter_batch
from j0.mini.train.schedule import Clock
from j0.mini.train.target import target_config

HELD_EVERY = 100  # steps between two held-out losses


@dataclass(frozen=True)
class DraftRecipe:
    init: str  # mask | j0
    labels: str  # data | target
    gamma: float  # slot weights exp(-(k-1)/gamma); <= 0: equal


def drafter_config(sizes: Sizes) -> Any:
    return target_config(
        sizes,
        sizes.draft_layers,
        num_target_layers=sizes.layers,
        block_size=sizes.block,
        is_causal=True,
        dflash_config={
            "mask_token_id": MASK_ID,
            "target_layer_ids": list(sizes.taps),
            "causal": True,
            "causal_head": True,
        },
    )


def make_drafter(sizes: Sizes, device: str, seed: int) -> Any:
    import torch
    from dflash.model import DFlashDraftModel

    torch.manual_seed(seed)
    return DFlashDraftModel(drafter_config(sizes)).to(device)


@dataclass(frozen=True)
class DrafterRun:
    """What one drafter's training did: steps, seconds, the last loss, the rows it drew (a row:
    one window of draft_seq tokens) and their rate after the first step."""

    steps: int
    seconds: float
    last_loss: float
    rows_seen: int
    rows_per_s: float
    tokens_per_s: float


def train_drafter(
    target: Any,
    train_tokens: Any,
    sizes: Sizes,
    recipe: DraftRecipe,
    budget: float,
    device: str,
    seed: int,
    log: Path,
    progress: bool,
    rows: Any | None = None,
    held_rows: Any | None = None,
) -> tuple[Any, DrafterRun]:
    """(drafter, what its training did); rows: [N, draft_seq] windows to draw from (the
    target's own text, `--draft-data generated`; moved to the device once) instead of the
    training stream; held_rows: rows of the same kind from held-out text, whose loss is logged
    every HELD_EVERY steps (`heldout_loss` in the log: the curve that shows whether the rows are
    memorised). The learning rate's cosine ends with the budget (j0.mini.train.schedule)."""
    import torch

    from j0.mini.train.data import windows

    drafter = make_drafter(sizes, device, seed)
    drafter.train()
    generator = torch.Generator().manual_seed(seed)
    weights = drafter_batch.slot_weights(sizes.block, recipe.gamma, device)
    optimizer = torch.optim.AdamW(
        drafter.parameters(),
        lr=sizes.draft_lr,
        betas=(0.9, 0.95),
        weight_decay=0.01,
        fused=device == "cuda",
    )
    pool = rows.to(device) if rows is not None else None
    clock = Clock(f"drafter {recipe.init}", budget, log, progress)
    while clock.running():
        lr = clock.lr(sizes.draft_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if pool is None:
            ids = windows(train_tokens, sizes.draft_seq, sizes.draft_batch, generator).to(device)
        else:
            pick = torch.randint(0, pool.shape[0], (sizes.draft_batch,), generator=generator)
            ids = pool[pick.to(device)]
        with autocast(device):
            loss = batch_loss(drafter, target, ids, sizes, recipe, generator, weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), 1.0)
        optimizer.step()
        extra: dict[str, float] = {"lr": round(lr, 7)}
        if held_rows is not None and (clock.steps % HELD_EVERY == 0 or not clock.running()):
            extra["heldout_loss"] = heldout_loss(
                drafter, target, held_rows, sizes, recipe, device, seed
            )
        clock.record(float(loss.detach()), tokens=int(ids.numel()), **extra)
    seconds = clock.close()
    tokens, timed = clock.timed()
    per_s = tokens / timed if timed > 0 else 0.0
    return drafter, DrafterRun(
        steps=clock.steps,
        seconds=seconds,
        last_loss=clock.last_loss,
        rows_seen=clock.steps * sizes.draft_batch,
        rows_per_s=round(per_s / sizes.draft_seq, 1),
        tokens_per_s=round(per_s, 1),
    )


def heldout_loss(
    drafter: Any, target: Any, rows: Any, sizes: Sizes, recipe: DraftRecipe, device: str, seed: int
) -> float:
    """The training loss on one fixed batch of held-out rows (the same anchors every time)."""
    import torch

    generator = torch.Generator().manual_seed(seed + 9)
    weights = drafter_batch.slot_weights(sizes.block, recipe.gamma, device)
    drafter.eval()
    with torch.no_grad(), autocast(device):
        ids = rows[: sizes.draft_batch].to(device)
        loss = float(batch_loss(drafter, target, ids, sizes, recipe, generator, weights))
    drafter.train()
    return round(loss, 5)


def batch_loss(
    drafter: Any,
    target: Any,
    ids: Any,
    sizes: Sizes,
    recipe: DraftRecipe,
    generator: Any,
    weights: Any,
) -> Any:
    """The weighted slot loss of the drafter on windows `ids` (anchors drawn with `generator`):
    what training minimises and what the held-out curve shows."""
    batch = drafter_batch.build(
        ids,
        target,
        sizes.taps,
        sizes.block,
        sizes.anchors,
        recipe.init,
        recipe.labels,
        generator,
    )
    scores = drafter_batch.logits(drafter, target, batch, sizes.block)
    return drafter_batch.weighted_loss(scores, batch.labels, weights)


def score_slots(
    drafter: Any,
    target: Any,
    tokens: Any,
    sizes: Sizes,
    init: str,
    device: str,
    seed: int,
    held_rows: Any | None = None,
) -> SlotScores:
    """Per-slot scores on held-out windows of the text; with held_rows (the target's own
    continuations of held-out text, at the miniature's temperature), also the chain estimate on
    those, closest to what the engine's verify step sees (`greedy_rows_k7`, `greedy_rows_k15`:
    the name of greedy days; under sampling it counts agreement with the target's argmax, which
    the engine accepts with the target's probability of it, so it is an upper estimate)."""
    import torch

    from j0.mini.train.data import windows

    generator = torch.Generator().manual_seed(seed + 7)
    hits_data, hits_target, agree_rows = [], [], []
    drafter.eval()
    chain: dict[str, float] = {}
    with torch.no_grad():
        if held_rows is not None:
            with autocast(device):
                batch = drafter_batch.build(
                    held_rows.to(device),
                    target,
                    sizes.taps,
                    sizes.block,
                    sizes.anchors,
                    init,
                    "target",
                    generator,
                )
                guess = drafter_batch.logits(drafter, target, batch, sizes.block).argmax(-1)
            agree = (guess == batch.target_labels).flatten(0, 1)
            for k in (7, sizes.block - 1):
                chain[f"greedy_rows_k{k}"] = round(drafter_batch.expected_acceptance(agree, k), 4)
        for _ in range(sizes.eval_batches):
            ids = windows(tokens, sizes.draft_seq, sizes.draft_batch, generator).to(device)
            with autocast(device):
                batch = drafter_batch.build(
                    ids, target, sizes.taps, sizes.block, sizes.anchors, init, "data", generator
                )
                guess = drafter_batch.logits(drafter, target, batch, sizes.block).argmax(-1)
            hits_data.append((guess == batch.data_labels).flatten(0, 1).float())
            agree = (guess == batch.target_labels).flatten(0, 1)
            hits_target.append(agree.float())
            agree_rows.append(agree)
    drafter.train()
    data = torch.cat(hits_data).mean(0)
    tgt = torch.cat(hits_target).mean(0)
    rows = torch.cat(agree_rows)
    for k in (7, sizes.block - 1):
        chain[f"text_k{k}"] = round(drafter_batch.expected_acceptance(rows, k), 4)
    return SlotScores([round(float(x), 4) for x in data], [round(float(x), 4) for x in tgt], chain)


def save_drafter(drafter: Any, folder: Path) -> None:
    import torch

    drafter.to(torch.bfloat16).save_pretrained(folder)
