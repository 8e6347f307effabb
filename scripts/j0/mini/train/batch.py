"""One drafter training batch: the target's taps and greedy predictions of `batch` windows, the
anchors, each anchor's block of query slots, the one attention mask for all blocks, the labels and
the slot weights.

Conventions (the ones vLLM's DFlash serves): the context of an anchor at position p is the
target's taps (hidden_states[l + 1] of each tapped layer l, concatenated) at positions < p; its
block is [token at p, slots 1..B-1] at positions p..p+B-1 and the drafter's output at slot k
predicts the token at p + k. Slots 1..B-1 hold the mask token (`init="mask"`, vLLM's) or, for
J0, the committed token at an index drawn uniformly from 0..p (`init="j0"`). A block sees the
context before its anchor and, within itself, the slots up to its own (causal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from j0.mini.sizes import MASK_ID

# The drafters' block initialisations (each trains a drafter of its own: drafter-mask,
# drafter-j0), their labels (`--labels`) and what they train on (`--draft-data`), declared here
# once for the command line, the training and the run.
MASK_INIT, J0_INIT = "mask", "j0"
INITS = (MASK_INIT, J0_INIT)
LABELS = ("data", "target")
DRAFT_DATA = ("text", "generated")


@dataclass
class DraftBatch:
    taps: Any  # [B, T, len(taps) * H]
    noise_ids: Any  # [B, A * K]
    position_ids: Any  # [B, T + A * K]
    mask: Any  # bool [B, 1, A * K, T + A * K]
    labels: Any  # [B, A, K - 1] (slots 1..K-1)
    data_labels: Any  # [B, A, K - 1], the text's own tokens
    target_labels: Any  # [B, A, K - 1], the target's greedy prediction for those positions


def slot_weights(block: int, gamma: float, device: str) -> Any:
    """exp(-(k - 1) / gamma) for slots k = 1..block-1 (gamma <= 0: all 1), normalised to mean 1."""
    import torch

    k = torch.arange(1, block, dtype=torch.float32, device=device)
    weights = torch.ones_like(k) if gamma <= 0 else torch.exp(-(k - 1) / gamma)
    return weights / weights.mean()


def draw_anchors(batch: int, seq: int, anchors: int, block: int, generator: Any) -> Any:
    """[batch, anchors] distinct sorted positions in 1..seq-block (each block's labels fit)."""
    import torch

    room = seq - block
    if room < anchors:
        raise ValueError(f"sequences of {seq} hold fewer than {anchors} anchors of block {block}")
    order = torch.rand(batch, room, generator=generator).argsort(dim=1)[:, :anchors] + 1
    return order.sort(dim=1).values


def block_mask(anchor: Any, seq: int, block: int) -> Any:
    """bool [B, 1, A*K, T + A*K]: query (a, k) sees context j < anchor[a] and slots (a, <= k)."""
    import torch

    batch, count = anchor.shape
    device = anchor.device
    ctx = torch.arange(seq, device=device)
    context = ctx[None, None, None, :] < anchor[:, :, None, None]  # [B, A, 1, T]
    context = context.expand(batch, count, block, seq).reshape(batch, count * block, seq)
    which = torch.arange(count * block, device=device)
    same_block = (which[:, None] // block) == (which[None, :] // block)
    causal = (which[None, :] % block) <= (which[:, None] % block)
    inner = (same_block & causal)[None].expand(batch, -1, -1)
    return torch.cat([context, inner], dim=2)[:, None]


def build(
    ids: Any,
    target: Any,
    taps: tuple[int, ...],
    block: int,
    anchors: int,
    init: str,
    labels: str,
    generator: Any,
) -> DraftBatch:
    """The batch for windows `ids` [B, T] (on the target's device), the target frozen."""
    import torch

    batch, seq = ids.shape
    device = ids.device
    with torch.no_grad():
        out = target.model(input_ids=ids, output_hidden_states=True)
        hidden = out.hidden_states
        features = torch.cat([hidden[layer + 1] for layer in taps], dim=-1)
        greedy = target.lm_head(out.last_hidden_state).argmax(dim=-1)  # [B, T]
    anchor = draw_anchors(batch, seq, anchors, block, generator).to(device)
    offsets = torch.arange(block, device=device)
    positions = anchor[:, :, None] + offsets  # [B, A, K]
    first = ids.gather(1, anchor)  # [B, A]
    if init == "mask":
        rest = torch.full((batch, anchors, block - 1), MASK_ID, dtype=ids.dtype, device=device)
    elif init == "j0":
        u = torch.rand(batch, anchors, block - 1, generator=generator).to(device)
        index = (u * (anchor[:, :, None] + 1).float()).floor().long()
        index = torch.minimum(index, anchor[:, :, None])
        rest = ids.gather(1, index.view(batch, -1)).view(batch, anchors, block - 1)
    else:
        raise ValueError(f"init {init!r}: expected one of {INITS}")
    noise = torch.cat([first[:, :, None], rest], dim=2).view(batch, anchors * block)
    later = positions[:, :, 1:]
    data_labels = ids.gather(1, later.reshape(batch, -1)).view_as(later)
    target_labels = greedy.gather(1, (later - 1).reshape(batch, -1)).view_as(later)
    if labels not in LABELS:
        raise ValueError(f"labels {labels!r}: expected one of {LABELS}")
    context = torch.arange(seq, device=device)[None].expand(batch, seq)
    return DraftBatch(
        taps=features,
        noise_ids=noise,
        position_ids=torch.cat([context, positions.view(batch, -1)], dim=1),
        mask=block_mask(anchor, seq, block),
        labels=target_labels if labels == "target" else data_labels,
        data_labels=data_labels,
        target_labels=target_labels,
    )


def logits(drafter: Any, target: Any, batch: DraftBatch, block: int) -> Any:
    """The drafter's logits [B, A, K - 1, V] for slots 1..K-1, through the target's frozen
    embed_tokens and lm_head."""
    import torch

    with torch.no_grad():
        noise = target.model.embed_tokens(batch.noise_ids)
    hidden = drafter(
        position_ids=batch.position_ids,
        attention_mask=batch.mask,
        noise_embedding=noise,
        target_hidden=batch.taps,
    )
    size, length, width = hidden.shape
    hidden = hidden.view(size, length // block, block, width)[:, :, 1:]
    return target.lm_head(hidden)


def weighted_loss(scores: Any, labels: Any, weights: Any) -> Any:
    """Cross-entropy per slot, weighted by slot (weights [K - 1]), averaged."""
    import torch.nn.functional as F

    flat = F.cross_entropy(
        scores.float().reshape(-1, scores.shape[-1]), labels.reshape(-1), reduction="none"
    )
    return (flat.view_as(labels) * weights).mean()


def expected_acceptance(agree: Any, draft_tokens: int) -> float:
    """1 + the mean count of leading slots that agree (bool [N, K - 1]), over the first
    draft_tokens slots: teacher-forced on the text, an estimate, not the engine's figure."""
    run = agree[:, :draft_tokens].long().cumprod(dim=1).sum(dim=1).float()
    value = 1.0 + float(run.mean())
    return value if math.isfinite(value) else float("nan")
