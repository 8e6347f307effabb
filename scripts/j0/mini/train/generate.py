"""The target's own text, as the DFlash and EAGLE recipes train drafters on it: windows of a
token stream cut to `gen_prompt` tokens and continued by the frozen target (its own KV cache, EOS
not special, as vLLM continues with ignore_eos) to `draft_seq` tokens, at the temperature the
engine will sample with (0: greedy). In these rows every token after the prompt is one the
target chose, so the context a drafter learns from is the context the engine gives it."""

from __future__ import annotations

import time
from typing import Any

from j0.mini.device import autocast
from j0.mini.sizes import Sizes


def continue_rows(
    target: Any,
    prompts: Any,
    length: int,
    device: str,
    temperature: float = 0.0,
    generator: Any | None = None,
) -> Any:
    """prompts [B, P] continued to [B, length]: greedily (temperature 0), else sampled from
    softmax(logits / temperature) with `generator` (a torch.Generator on `device`)."""
    import torch

    def choose(logits: Any) -> Any:
        if temperature <= 0:
            return logits.argmax(-1, keepdim=True)
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        return torch.multinomial(probs, 1, generator=generator)

    ids = prompts.to(device)
    with torch.no_grad(), autocast(device):
        out = target(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        pieces = [ids]
        token = choose(out.logits[:, -1])
        for _ in range(length - ids.shape[1]):
            pieces.append(token)
            if sum(p.shape[1] for p in pieces) >= length:
                break
            out = target(input_ids=token, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            token = choose(out.logits[:, -1])
    return torch.cat(pieces, dim=1)[:, :length]


def greedy_rows(target: Any, prompts: Any, length: int, device: str) -> Any:
    """prompts [B, P] continued greedily to [B, length]."""
    return continue_rows(target, prompts, length, device)


def device_generator(device: str, seed: int) -> Any:
    import torch

    return torch.Generator(device=device).manual_seed(seed)


def generate_rows(
    target: Any,
    tokens: Any,
    sizes: Sizes,
    seconds: float,
    device: str,
    generator: Any,
    *,
    count: int | None = None,
    temperature: float = 0.0,
    seed: int = 0,
) -> Any:
    """[N, draft_seq] rows (on the CPU): batches of `gen_batch` until `count` rows are made
    (None: no count) or `seconds` have passed, whichever is first; at least one batch.
    `generator` draws the prompts' offsets; `seed` the samples (temperature above 0)."""
    import torch

    from j0.mini.train.data import windows

    started = time.monotonic()
    sampler = device_generator(device, seed) if temperature > 0 else None
    rows: list[Any] = []
    made = 0
    while not rows or (time.monotonic() - started < seconds and (count is None or made < count)):
        batch = sizes.gen_batch if count is None else min(sizes.gen_batch, count - made)
        prompts = windows(tokens, sizes.gen_prompt, batch, generator)
        rows.append(
            continue_rows(target, prompts, sizes.draft_seq, device, temperature, sampler).cpu()
        )
        made += batch
    return torch.cat(rows)
