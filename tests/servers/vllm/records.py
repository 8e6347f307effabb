"""What the vLLM stand-in keeps: one record per generation request (what it did, step by step),
and each engine's Prometheus counters, which start from an earlier value as on a server that has
run before. Part of vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

DEFAULT_MODEL = "Qwen/Qwen3.8-27B"
VERSION = "0.33.0"
BLOCK_SIZE = 16
# A fixed past for the counters: (drafts, accepted per position) per engine; draft tokens and
# accepted totals follow from them. Nonzero, so a client must take deltas.
EARLIER_DRAFTS = (1234, 777)


@dataclass
class RequestRecord:
    """What the server did for one generation request."""

    index: int
    request_id: str
    endpoint: str
    model: str
    stream: bool
    engine: int
    prompt_tokens: int
    cached_tokens: int
    max_tokens: int
    enable_thinking: bool | None
    temperature: float | None = None  # the request's sampling fields, as sent
    seed: int | None = None
    per_step_accepted: list[int] = field(default_factory=list)
    per_step_drafted: list[int] = field(default_factory=list)
    step_context_lengths: list[int] = field(default_factory=list)
    output_tokens: int = 0
    output_token_ids: list[int] = field(default_factory=list)  # every output token, as sent
    finish_reason: str | None = None
    died: bool = False
    # time.monotonic() when the first and the last output token were written
    first_token_time: float | None = None
    last_token_time: float | None = None

    def add_output(self, token_ids: list[int]) -> int:
        """Count these output tokens, written now; the count before them."""
        before = self.output_tokens
        self.output_tokens += len(token_ids)
        self.output_token_ids.extend(token_ids)
        now = time.monotonic()
        if self.first_token_time is None:
            self.first_token_time = now
        self.last_token_time = now
        return before


@dataclass
class EngineCounters:
    """One engine's Prometheus counters (values and creation times)."""

    num_spec_tokens: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    prompt_tokens_cached: int = 0
    generation_tokens: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    success: dict[str, int] = field(default_factory=dict)
    created: float = 0.0
    preemptions: int = 0  # vllm:num_preemptions (the stand-in never preempts by itself)

    @classmethod
    def with_past(cls, num_spec_tokens: int, drafts: int, created: float) -> EngineCounters:
        per_pos = [
            max(0, drafts * (num_spec_tokens - i) // (2 * num_spec_tokens))
            for i in range(num_spec_tokens)
        ]
        return cls(
            num_spec_tokens=num_spec_tokens,
            drafts=drafts,
            draft_tokens=drafts * num_spec_tokens,
            accepted=sum(per_pos),
            accepted_per_pos=per_pos,
            prompt_tokens=drafts * 9,
            generation_tokens=drafts * 3,
            success={
                "stop": drafts // 100,
                "length": drafts // 50,
                "abort": 0,
                "error": 0,
                "repetition": 0,
            },
            created=created,
        )
