"""The run's prompts: held-out source cut to each context length by the mini tokenizer's count.
Prompt i of every length starts at held-out file i (files joined in order until long enough), so
the lengths share their files and no two prompts of one length share a prefix. Written as the
bench's JSONL dataset ({"id", "prompt"} per line); the token ids are kept for the cross-check."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.atomic import write_text_atomic
from j0.errors import INPUT_LACKS, J0Error


@dataclass(frozen=True)
class MiniPrompt:
    id: str
    context: int
    ids: list[int]
    text: str


def make_prompts(
    heldout_texts: Sequence[str], tokenizer: Any, contexts: Sequence[int], requests: int
) -> list[MiniPrompt]:
    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in heldout_texts]
    total = sum(len(e) for e in encoded)
    if not encoded or total < max(contexts):
        raise J0Error(
            f"the held-out files hold {total} tokens; the longest context asked is {max(contexts)}",
            INPUT_LACKS,
        )
    prompts = []
    for context in contexts:
        for i in range(requests):
            ids: list[int] = []
            file = i % len(encoded)
            while len(ids) < context:
                ids.extend(encoded[file])
                file = (file + 1) % len(encoded)
            ids = ids[:context]
            prompts.append(MiniPrompt(f"ctx{context}-{i:02d}", context, ids, tokenizer.decode(ids)))
    return prompts


def write_jsonl(prompts: Sequence[MiniPrompt], path: Path) -> None:
    write_text_atomic(
        path,
        "".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in prompts),
    )
