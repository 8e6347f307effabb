"""Acceptance figures from counts: the server's per-request metrics, pooled over requests.

The definitions are vLLM's (vllm/benchmarks/serve.py, vllm/v1/spec_decode/metrics.py):

    acceptance length          1 + accepted draft tokens / drafts (verify steps)
    acceptance rate            accepted draft tokens / draft tokens
    per-position acceptance[i] drafts that accepted more than i tokens / drafts

Pooled means summed over the measured requests first and divided once, which is what /metrics
deltas give too; the mean over requests is reported separately.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STEP_KEYS = ("per_step_accepted", "per_step_drafted")
# Draft tokens per step that the counts take: vLLM's num_speculative_tokens is far below this; a
# larger claim (which would size the per-position counters) is refused, not allocated.
MAX_SPEC_TOKENS = 1024
_COUNT_KEYS = ("num_spec_tokens", "num_draft_tokens", "num_spec_steps", "num_accepted_draft_tokens")
_LIST_KEYS = (*STEP_KEYS, "acceptance_histogram")


@dataclass
class Counts:
    """Speculative-decoding counts over some steps."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    # accepted_per_pos[i]: drafts that accepted more than i tokens (vLLM's per-position counter)
    accepted_per_pos: list[int] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        self.drafts += other.drafts
        self.draft_tokens += other.draft_tokens
        self.accepted += other.accepted
        width = max(len(self.accepted_per_pos), len(other.accepted_per_pos))
        self.accepted_per_pos = [
            _at(self.accepted_per_pos, i) + _at(other.accepted_per_pos, i) for i in range(width)
        ]

    def widened(self, width: int) -> Counts:
        per_pos = [_at(self.accepted_per_pos, i) for i in range(max(width, 0))]
        return Counts(self.drafts, self.draft_tokens, self.accepted, per_pos)

    def to_json(self) -> dict[str, Any]:
        return {
            "num_drafts": self.drafts,
            "num_draft_tokens": self.draft_tokens,
            "num_accepted_tokens": self.accepted,
            "num_accepted_tokens_per_pos": list(self.accepted_per_pos),
        }


def _at(values: Sequence[int], i: int) -> int:
    return values[i] if i < len(values) else 0


def acceptance_length(c: Counts) -> float | None:
    return 1.0 + c.accepted / c.drafts if c.drafts else None


def acceptance_rate(c: Counts) -> float | None:
    return c.accepted / c.draft_tokens if c.draft_tokens else None


def per_position(c: Counts) -> list[float]:
    return [n / c.drafts for n in c.accepted_per_pos] if c.drafts else []


def figures(c: Counts) -> dict[str, Any]:
    return {
        "acceptance_length": acceptance_length(c),
        "acceptance_rate": acceptance_rate(c),
        "per_position_acceptance": per_position(c),
    }


def from_steps(accepted: Sequence[int], drafted: Sequence[int], width: int) -> Counts:
    """Counts of ordered per-step arrays (`per_step_accepted`, `per_step_drafted`)."""
    per_pos = [0] * width
    for a in accepted:
        for i in range(min(a, width)):
            per_pos[i] += 1
    return Counts(len(accepted), sum(drafted), sum(accepted), per_pos)


def from_histogram(histogram: Sequence[int], draft_tokens: int) -> Counts:
    """Counts of `acceptance_histogram` (index j: verify steps that accepted exactly j)."""
    width = max(len(histogram) - 1, 0)
    per_pos = [sum(histogram[i + 1 :]) for i in range(width)]
    accepted = sum(j * n for j, n in enumerate(histogram))
    return Counts(sum(histogram), draft_tokens, accepted, per_pos)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def all_counts(values: list[Any]) -> bool:
    """_is_count of every item; a list of plain ints (a result file's per-step counts, thousands
    of them) is checked at the speed of min() instead of item by item."""
    if set(map(type, values)) <= {int}:
        return not values or min(values) >= 0
    return all(map(_is_count, values))


def all_numbers(values: list[Any]) -> bool:
    """_is_number of every item, plain ints and floats at the speed of map()."""
    kinds = set(map(type, values))
    if kinds <= {int}:
        return True
    if kinds <= {int, float}:
        return all(map(math.isfinite, (v for v in values if type(v) is float)))
    return all(map(_is_number, values))


def spec_problem(spec: Any, whole: bool = True) -> str | None:
    """What in a `speculative_decoding` object the counts cannot take (a type, a negative or
    oversized count), or None: the server's answer and a result file are both read with it.
    With whole=False any finite numbers pass but an oversized width: a result file's values out
    of their ranges are the range checks' (j0.engine.figures.spec_ranges: flagged, kept out of
    figures)."""
    if not isinstance(spec, Mapping):
        return f"speculative_decoding is {type(spec).__name__}, expected an object"
    fits = _is_count if whole else _is_number
    fit_all = all_counts if whole else all_numbers
    wanted = "a whole number >= 0" if whole else "a finite number"
    for key in _COUNT_KEYS:
        value = spec.get(key)
        if value is not None and not fits(value):
            return f"speculative_decoding.{key} is {value!r:.40}, expected {wanted}"
    for key in _LIST_KEYS:
        value = spec.get(key)
        if value is not None and not (isinstance(value, list) and fit_all(value)):
            return f"speculative_decoding.{key} is {value!r:.40}, expected a list of {wanted}s"
    widest = max(
        [
            spec.get("num_spec_tokens") or 0,
            *(spec.get("per_step_drafted") or []),
            len(spec.get("acceptance_histogram") or []) - 1,
        ]
    )
    if widest > MAX_SPEC_TOKENS:
        return f"speculative_decoding claims {widest} draft tokens a step, above {MAX_SPEC_TOKENS}"
    return None


def request_counts(spec: Mapping[str, Any] | None) -> tuple[Counts | None, list[str]]:
    """Counts of one response's `metrics.speculative_decoding`, and any inconsistency in it.

    The ordered per-step arrays (`detailed`) are used where present, else the histogram
    (`summary`); the scalar fields are checked against whichever was used.
    """
    if not spec:
        return None, []
    refused = spec_problem(spec)
    if refused is not None:
        return None, [refused]
    problems: list[str] = []
    width = int(spec.get("num_spec_tokens") or 0)
    steps_a = spec.get("per_step_accepted")
    steps_d = spec.get("per_step_drafted")
    histogram = spec.get("acceptance_histogram")
    if isinstance(steps_a, list) and isinstance(steps_d, list):
        if len(steps_a) != len(steps_d):
            problems.append(
                f"per_step_accepted has {len(steps_a)} entries, per_step_drafted {len(steps_d)}"
            )
        width = max(width, max(steps_d, default=0))
        counts = from_steps(steps_a, steps_d, width)
    elif isinstance(histogram, list) and histogram:
        counts = from_histogram(histogram, int(spec.get("num_draft_tokens") or 0))
    else:
        return None, ["speculative_decoding has neither per-step arrays nor a histogram"]
    for key, value in (
        ("num_spec_steps", counts.drafts),
        ("num_accepted_draft_tokens", counts.accepted),
        ("num_draft_tokens", counts.draft_tokens),
    ):
        if key in spec and spec[key] is not None and int(spec[key]) != value:
            problems.append(f"{key}={spec[key]} but the steps give {value}")
    return counts, problems


def step_contexts(prompt_tokens: int, accepted: Sequence[int]) -> list[int]:
    """The context length (prompt + output tokens so far) at each verify step.

    The prefill step gives the first output token; every verify step then adds 1 + accepted.
    """
    contexts = []
    context = prompt_tokens + 1
    for a in accepted:
        contexts.append(context)
        context += 1 + a
    return contexts


def by_context(
    requests: Iterable[tuple[int, Sequence[int]]], bin_size: int
) -> list[dict[str, Any]]:
    """Acceptance length per context-length bin, from (prompt_tokens, per_step_accepted) pairs."""
    bins: dict[int, list[int]] = {}
    for prompt_tokens, accepted in requests:
        for context, a in zip(step_contexts(prompt_tokens, accepted), accepted, strict=True):
            entry = bins.setdefault(context // bin_size, [0, 0])
            entry[0] += 1
            entry[1] += a
    return [
        {
            "context_start": b * bin_size,
            "context_end": (b + 1) * bin_size,
            "num_drafts": n,
            "num_accepted_tokens": a,
            "acceptance_length": 1.0 + a / n,
        }
        for b, (n, a) in sorted(bins.items())
    ]
