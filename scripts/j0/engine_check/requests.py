"""The engine check's requests: short and long prompts of random words, greedy, each sent once plain
and once streamed (the final usage chunk carries the per-request spec-decode metrics), and /metrics.

Standard library only (urllib): the check must run inside the image, whose Python has no extras.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from j0.engine.server import endpoints
from j0.engine_check.tiny_models import MASK_TOKEN, word
from j0.errors import CHECK_FAILED, parse_json

PROMPT_WORDS = (40, 200, 700)  # short, medium, long (a 700-word prompt is one prefill chunk here)
FIRST_WORD, LAST_WORD = 4, MASK_TOKEN - 96  # never the special ids 0-3 nor the mask token


@dataclass
class Exchange:
    """One prompt's plain and streamed responses."""

    words: int
    plain: dict[str, Any]
    stream_chunks: list[dict[str, Any]] = field(default_factory=list)

    def output(self) -> list[int | str]:
        """The plain response's token ids (vLLM's `return_token_ids`), else its words."""
        choice = self.plain["choices"][0]
        ids = choice.get("token_ids")
        return list(ids) if ids is not None else list(choice["text"].split())

    def streamed_output(self) -> list[int | str]:
        """The streamed chunks' token ids in order, else their words."""
        choices = [ch for c in self.stream_chunks for ch in c.get("choices", [])]
        if any(ch.get("token_ids") is not None for ch in choices):
            return [t for ch in choices for t in ch.get("token_ids") or []]
        return list("".join(ch.get("text") or "" for ch in choices).split())

    def spec_metrics(self) -> list[dict[str, Any]]:
        """`metrics.speculative_decoding` of the plain response and of the final streamed chunk."""
        found = [(self.plain.get("metrics") or {}).get("speculative_decoding")]
        found += [(c.get("metrics") or {}).get("speculative_decoding") for c in self.stream_chunks]
        return [m for m in found if m]


def prompts(seed: int = 1) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    return [
        (n, " ".join(word(rng.randrange(FIRST_WORD, LAST_WORD)) for _ in range(n)))
        for n in PROMPT_WORDS
    ]


def parse_sse(raw: str) -> list[dict[str, Any]]:
    """The JSON events of a server-sent-events body, without the final `[DONE]`."""
    events = []
    for block in raw.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                events.append(parse_json(line[6:], "an event of the streamed answer", CHECK_FAILED))
    return events


def exchange(base_url: str, model: str, max_tokens: int, timeout: float = 300.0) -> list[Exchange]:
    """Send every prompt plain, then streamed with usage; greedy, EOS ignored, token ids back."""
    out = []
    for words, prompt in prompts():
        body: dict[str, Any] = {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": True,
            "return_token_ids": True,
        }
        url = f"{base_url}/v1/completions"
        plain = parse_json(endpoints.post(url, body, timeout), url, CHECK_FAILED)
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        chunks = parse_sse(endpoints.post(url, streamed, timeout).decode())
        out.append(Exchange(words=words, plain=plain, stream_chunks=chunks))
    return out
