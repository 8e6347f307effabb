"""`--draft-data generated`: the drafters' training text made by the target itself, as the DFlash
and EAGLE recipes train on the target's own outputs. Windows of the training stream are cut to
`gen_prompt` tokens and continued greedily by the frozen target (its own KV cache, EOS not
special, as vLLM continues with ignore_eos) to `draft_seq` tokens, batch after batch until the
time is spent. In these rows every token after the prompt is the target's greedy choice, which
is what the engine's verify step accepts."""

from __future__ import annotations

import time
from typing import Any

from j0.mini.device import autocast
from j0.mini.sizes import Sizes


def greedy_rows(target: Any, prompts: Any, length: int, device: str) -> Any:
    """prompts [B, P] continued greedily to [B, length]."""
    import torch

    ids = prompts.to(device)
    with torch.no_grad(), autocast(device):
        out = target(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        pieces = [ids]
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(length - ids.shape[1]):
            pieces.append(token)
            if sum(p.shape[1] for p in pieces) >= length:
                break
            out = target(input_ids=token, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            token = out.logits[:, -1].argmax(-1, keepdim=True)
    return torch.cat(pieces, dim=1)[:, :length]


def generate_rows(
    target: Any, tokens: Any, sizes: Sizes, seconds: float, device: str, generator: Any
) -> Any:
    """[N, draft_seq] rows (on the CPU), at least one batch, until `seconds` have passed."""
    import torch

    from j0.mini.data import windows

    started = time.monotonic()
    rows = []
    while not rows or time.monotonic() - started < seconds:
        prompts = windows(tokens, sizes.gen_prompt, sizes.gen_batch, generator)
        rows.append(greedy_rows(target, prompts, sizes.draft_seq, device).cpu())
    return torch.cat(rows)


def row_batch(rows: Any, batch: int, generator: Any) -> Any:
    import torch

    return rows[torch.randint(0, rows.shape[0], (batch,), generator=generator)]
