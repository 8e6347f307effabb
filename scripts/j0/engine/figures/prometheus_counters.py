"""vLLM's speculative-decoding counters in a /metrics exposition, summed over engines.

The counters (vllm/v1/spec_decode/metrics.py, SpecDecodingProm), labelled `engine` and
`model_name` (and `position`):

    vllm:spec_decode_num_drafts_total
    vllm:spec_decode_num_draft_tokens_total
    vllm:spec_decode_num_accepted_tokens_total
    vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}

prometheus_client's parser names a counter family without `_total`; the `_created` samples (and
the `_created` gauge families the classic text format has) are creation times, not counts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from j0.engine.figures.spec_counts import MAX_SPEC_TOKENS, Counts
from j0.errors import require

PREFIX = "vllm:spec_decode_num_"
FAMILIES = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted",
    "vllm:spec_decode_num_accepted_tokens_per_pos": "per_pos",
}
_POSITION = re.compile(r"[0-9]{1,6}")


class MetricsFormatError(ValueError):
    """An exposition that is not Prometheus text, or counters no server writes (a position label
    that is no draft position below MAX_SPEC_TOKENS, a negative or non-finite count)."""


@dataclass
class Snapshot:
    """The counters at one moment: totals over engines, and which engines were seen."""

    counts: Counts
    engines: list[str] = field(default_factory=list)

    def minus(self, before: Snapshot) -> Counts:
        width = max(len(self.counts.accepted_per_pos), len(before.counts.accepted_per_pos))
        after, earlier = self.counts.widened(width), before.counts.widened(width)
        return Counts(
            after.drafts - earlier.drafts,
            after.draft_tokens - earlier.draft_tokens,
            after.accepted - earlier.accepted,
            [a - b for a, b in zip(after.accepted_per_pos, earlier.accepted_per_pos, strict=True)],
        )


def parse(text: str) -> Snapshot | None:
    """The spec-decode counters of an exposition; None where it has none (no spec decoding).
    Raises MetricsFormatError (a ValueError) for text that is not an exposition or counters that
    no server writes; nothing is sized by a label before it is checked."""
    parser = require("prometheus_client.parser", "j0 bench", extra="bench")
    totals = {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0}
    per_pos: dict[int, float] = {}
    engines: set[str] = set()
    found = False
    try:
        families = list(parser.text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise MetricsFormatError(f"not Prometheus text ({type(exc).__name__}: {exc})") from None
    for family in families:
        name = family.name.removesuffix("_total")
        kind = FAMILIES.get(name)
        if kind is None:
            continue
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            found = True
            value = float(sample.value)
            if not math.isfinite(value) or value < 0:
                raise MetricsFormatError(f"{sample.name} is {sample.value}, expected a count >= 0")
            engines.add(str(sample.labels.get("engine", "")))
            if kind == "per_pos":
                pos = _position(sample.labels.get("position", "0"))
                per_pos[pos] = per_pos.get(pos, 0.0) + value
            else:
                totals[kind] += value
    if not found:
        return None
    width = max(per_pos, default=-1) + 1
    counts = Counts(
        drafts=round(totals["drafts"]),
        draft_tokens=round(totals["draft_tokens"]),
        accepted=round(totals["accepted"]),
        accepted_per_pos=[round(per_pos.get(i, 0.0)) for i in range(width)],
    )
    return Snapshot(counts, sorted(engines))


def _position(label: str) -> int:
    if not _POSITION.fullmatch(label) or int(label) >= MAX_SPEC_TOKENS:
        raise MetricsFormatError(
            f"position={label!r:.40}: expected a draft position 0..{MAX_SPEC_TOKENS - 1}"
        )
    return int(label)
