"""A result's `metrics_crosscheck` block, owned here: the pooled per-request counts against the
/metrics counters' change over the same requests (warm-up excluded, summed over engines), and
whether they match. `crosscheck` makes it when `j0 bench run` ends; the report reads it back
through MetricsCrosscheck.from_json, checked against FIELDS where the result file is read.

    status          "match" | "mismatch" | "unavailable" | "out of range" (the deltas cannot be
                    true: delta_problems says why, and nothing is compared)
    match           whether the two agree (null where nothing was compared)
    per_request, metrics_delta
                    each side's counts and figures (null where that side is missing)
    engines         the engines whose counters were summed
    differences     per count, both sides, where they differ
    note            what the reader should know of the deltas

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from j0.edge.fields import FieldTable, KeptKeys, field_problem
from j0.engine import spec_counts, spec_ranges
from j0.engine.spec_counts import Counts

_NULL = type(None)
# The block's keys in the order they are written, with the kinds a reader takes; none must be
# there (a result written before the block, or by hand, may lack any).
FIELDS: FieldTable = {
    "status": ((str, _NULL), False),
    "match": ((bool, _NULL), False),
    "per_request": ((dict, _NULL), False),
    "metrics_delta": ((dict, _NULL), False),
    "engines": ((list, _NULL), False),
    "differences": ((dict, _NULL), False),
    "note": ((str, _NULL), False),
    "delta_problems": ((list, _NULL), False),
}


@dataclass
class MetricsCrosscheck(KeptKeys):
    """The block (FIELDS says each key); `keys` the keys it has, in its order (to_json writes
    those only), `extra` keys FIELDS does not know, kept as they were."""

    status: str | None = None
    match: bool | None = None
    per_request: dict[str, Any] | None = None
    metrics_delta: dict[str, Any] | None = None
    engines: list[str] | None = None
    differences: dict[str, Any] | None = None
    note: str | None = None
    delta_problems: list[str] | None = None
    keys: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    FIELD_TABLE: ClassVar[FieldTable] = FIELDS  # problem_of checks it where a result is read


def problem_of(value: dict[str, Any]) -> str | None:
    """What in the block has another kind than FIELDS says, or None."""
    return field_problem(value, FIELDS)


def crosscheck(
    per_request: Counts | None, delta: Counts | None, engines: list[str], note: str | None = None
) -> MetricsCrosscheck:
    block: dict[str, Any] = {
        "status": "unavailable",
        "match": None,
        "per_request": None,
        "metrics_delta": None,
        "engines": engines,
        "differences": {},
        "note": note,
    }
    if per_request is not None:
        block["per_request"] = {**per_request.to_json(), **spec_counts.figures(per_request)}
    if delta is not None:
        block["metrics_delta"] = {**delta.to_json(), **spec_counts.figures(delta)}
        impossible = spec_ranges.counts_problems(delta)
        if impossible:  # a /metrics that cannot be true: no figure, no comparison
            block["status"] = "out of range"
            block["delta_problems"] = impossible
            return MetricsCrosscheck.from_json(block)
    if per_request is None or delta is None:
        return MetricsCrosscheck.from_json(block)
    width = max(len(per_request.accepted_per_pos), len(delta.accepted_per_pos))
    a, b = per_request.widened(width).to_json(), delta.widened(width).to_json()
    block["differences"] = {
        key: {"per_request": a[key], "metrics_delta": b[key]} for key in a if a[key] != b[key]
    }
    block["match"] = not block["differences"]
    block["status"] = "match" if block["match"] else "mismatch"
    return MetricsCrosscheck.from_json(block)
