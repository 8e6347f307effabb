"""Token streams and the windows sampled from them: every file encoded, `</s>` after each, all
concatenated; a batch is `batch` windows of `seq` tokens at uniformly drawn offsets."""

from __future__ import annotations

from typing import Any

from j0.mini.sizes import EOS_ID


def stream(tokenizer: Any, texts: list[str]) -> Any:
    """One int64 tensor of every text's ids, each followed by </s>."""
    import torch

    ids: list[int] = []
    for encoding in tokenizer.encode_batch(texts):
        ids.extend(encoding.ids)
        ids.append(EOS_ID)
    return torch.tensor(ids, dtype=torch.long)


def windows(tokens: Any, seq: int, batch: int, generator: Any) -> Any:
    """[batch, seq] windows at random offsets (the stream is repeated if it is short)."""
    import torch

    if tokens.numel() <= seq:
        tokens = tokens.repeat(seq // max(tokens.numel(), 1) + 2)
    starts = torch.randint(0, tokens.numel() - seq, (batch,), generator=generator)
    return torch.stack([tokens[s : s + seq] for s in starts.tolist()])
