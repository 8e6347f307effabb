"""The vLLM stand-in's engine, simulated one step at a time as vLLM's scheduler does it
(vllm/v1/core/sched/scheduler.py, vllm/v1/metrics/stats.py RequestSpecDecodeMetrics): a prefill
step gives the first token, then every verify step drafts `num_spec_tokens` (fewer only near
max_model_len) and accepts some of them; requests go to the engines in turn; every step lands in
the request's record and in its engine's counters. Part of vllm/server.py, our vLLM 0.33
stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from .records import EARLIER_DRAFTS, EngineCounters, RequestRecord

# One engine step: the token ids it gives and the finish reason (None: the output goes on).
Step = tuple[list[int], str | None]


class AcceptanceModel:
    """How many of a step's drafted tokens are accepted: `script` (counts used in order, then
    repeated), else a seeded RNG (position 0 with `prob`, each later one `decay` times less
    likely, all of it falling as 1/(1 + context/context_scale) where that is set)."""

    def __init__(
        self,
        script: list[int] | None,
        seed: int,
        prob: float,
        decay: float,
        context_scale: float | None,
    ) -> None:
        self.script = list(script) if script else None
        self.prob = prob
        self.decay = decay
        self.context_scale = context_scale
        self._rng = random.Random(seed)
        self._script_pos = 0
        self._lock = threading.Lock()

    def accepted_for_step(self, drafted: int, context: int) -> int:
        with self._lock:
            if self.script is not None:
                value = self.script[self._script_pos % len(self.script)]
                self._script_pos += 1
                return max(0, min(int(value), drafted))
            scale = 1.0
            if self.context_scale:
                scale = 1.0 / (1.0 + context / self.context_scale)
            accepted = 0
            for i in range(drafted):
                if self._rng.random() >= self.prob * (self.decay**i) * scale:
                    break
                accepted += 1
            return accepted


class SimulatedEngine:
    """The engines behind the API server: their counters, and a record of every request."""

    def __init__(
        self,
        acceptance: AcceptanceModel,
        *,
        num_spec_tokens: int,
        max_model_len: int,
        output_len: int | None,
        step_delay: float,
        prefill_delay: float,
        engines: int,
        lossy_from: int | None = None,
    ) -> None:
        self.acceptance = acceptance
        self.lossy_from = lossy_from
        self.num_spec_tokens = num_spec_tokens
        self.max_model_len = max_model_len
        self.output_len = output_len
        self.step_delay = step_delay
        self.prefill_delay = prefill_delay
        self.records: list[RequestRecord] = []
        self.dead = False  # no new request once the server died
        started = time.time() - 3600.0
        self.counters = [
            EngineCounters.with_past(num_spec_tokens, EARLIER_DRAFTS[i % 2] + 100 * i, started + i)
            for i in range(engines)
        ]
        self._lock = threading.Lock()
        self._engine_lock = threading.Lock()  # one engine step at a time, like one GPU

    # -- requests -------------------------------------------------------------------------------

    def new_record(self, **kwargs: Any) -> RequestRecord | None:
        """Register a generation request; None where the server is dead."""
        with self._lock:
            if self.dead:
                return None
            index = len(self.records)
            record = RequestRecord(index=index, engine=index % len(self.counters), **kwargs)
            self.records.append(record)
            return record

    def observe_step(
        self, record: RequestRecord, drafted: int, accepted: int, context: int
    ) -> None:
        with self._lock:
            record.per_step_accepted.append(accepted)
            record.per_step_drafted.append(drafted)
            record.step_context_lengths.append(context)
            c = self.counters[record.engine]
            c.drafts += 1
            c.draft_tokens += drafted
            c.accepted += accepted
            for i in range(accepted):
                c.accepted_per_pos[i] += 1

    def finish(self, record: RequestRecord, reason: str) -> None:
        with self._lock:
            record.finish_reason = reason
            c = self.counters[record.engine]
            c.prompt_tokens += record.prompt_tokens
            c.prompt_tokens_cached += record.cached_tokens
            c.prefix_cache_queries += record.prompt_tokens
            c.prefix_cache_hits += record.cached_tokens
            c.generation_tokens += record.output_tokens
            c.success[reason] = c.success.get(reason, 0) + 1

    def generate(self, record: RequestRecord, seed_text: str) -> Iterator[Step]:
        """Yield (token ids of this step, finish reason or None), one engine step at a time.

        The tokens depend on the prompt only (speculative decoding is lossless); how many come
        per step depends on the accepted counts. With `lossy_from` N (a speculator that is not
        lossless), output token N on (counted from 0) is another one."""
        rng = random.Random(hashlib.sha256(seed_text.encode()).digest())
        lossy_from = self.lossy_from
        sent = 0

        class Tokens:
            def randrange(self, low: int, high: int) -> int:
                nonlocal sent
                value = rng.randrange(low, high)
                if lossy_from is not None and sent >= lossy_from:
                    value = low + (value - low + 1) % (high - low)
                sent += 1
                return value

        out_rng = Tokens()
        budget = record.max_tokens
        natural = self.output_len
        context = record.prompt_tokens
        produced = 0

        def end_reason() -> str | None:
            if natural is not None and produced >= natural:
                return "stop"
            if produced >= budget or context >= self.max_model_len:
                return "length"
            return None

        with self._engine_lock:
            time.sleep(self.prefill_delay)
        produced, context = 1, context + 1
        yield [out_rng.randrange(4, 4000)], end_reason()
        while end_reason() is None:
            drafted = max(0, min(self.num_spec_tokens, self.max_model_len - context - 1))
            with self._engine_lock:
                time.sleep(self.step_delay)
            accepted = self.acceptance.accepted_for_step(drafted, context) if drafted else 0
            if drafted:
                self.observe_step(record, drafted, accepted, context)
            room = budget - produced
            if natural is not None:
                room = min(room, natural - produced)
            room = min(room, self.max_model_len - context)
            n = min(1 + accepted, room)
            produced += n
            context += n
            yield [out_rng.randrange(4, 4000) for _ in range(n)], end_reason()

    # -- what it did ----------------------------------------------------------------------------

    def counters_now(self) -> list[EngineCounters]:
        """A copy of every engine's counters, taken at one moment."""
        with self._lock:
            return [EngineCounters(**asdict(c)) for c in self.counters]

    def truth(self, first: int = 0, last: int | None = None) -> dict[str, Any]:
        """Totals over records[first:last], summed step by step from what the server did."""
        with self._lock:
            records = self.records[first:last]
        drafts = draft_tokens = accepted = 0
        per_pos = [0] * self.num_spec_tokens
        for record in records:
            for a, d in zip(record.per_step_accepted, record.per_step_drafted, strict=True):
                drafts += 1
                draft_tokens += d
                accepted += a
                for i in range(a):
                    per_pos[i] += 1
        return {
            "requests": len(records),
            "drafts": drafts,
            "draft_tokens": draft_tokens,
            "accepted": accepted,
            "accepted_per_pos": per_pos,
        }

    def record_json(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": [asdict(r) for r in self.records]}
