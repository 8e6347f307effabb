"""A result's `metrics_crosscheck` block, owned here: the pooled per-request counts against the
/metrics counters' change over the same requests (warm-up excluded, summed over engines), and
whether they match. `crosscheck` makes it when `j0 bench run` ends; the report reads it back
through MetricsCrosscheck.from_json, checked against its type where the result file is read.

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

from dataclasses import dataclass
from typing import Any

from j0.edge.document import KeptKeys, attribute, table_of
from j0.edge.fields import field_problem
from j0.engine.figures import spec_ranges
from j0.engine.figures.spec_counts import Counts, figures


@dataclass
class MetricsCrosscheck(KeptKeys):
    """The block, a typed document (none of its keys must be there: a result written before the
    block, or by hand, may lack any); `keys` the keys it has, in its order (to_json writes those
    only), `extra` keys the type does not know, kept as they were."""

    status: str | None = None
    match: bool | None = None
    per_request: dict[str, Any] | None = None
    metrics_delta: dict[str, Any] | None = None
    engines: list[Any] | None = None  # the engines' names
    differences: dict[str, Any] | None = None
    note: str | None = None
    delta_problems: list[Any] | None = None  # in words
    keys: tuple[str, ...] = attribute(default=())
    extra: dict[str, Any] = attribute(default_factory=dict)


def problem_of(value: dict[str, Any]) -> str | None:
    """What in the block has another kind than MetricsCrosscheck says, or None."""
    return field_problem(value, table_of(MetricsCrosscheck))


def crosscheck(
    per_request: Counts | None, delta: Counts | None, engines: list[str], note: str | None = None
) -> MetricsCrosscheck:
    mine = None if per_request is None else {**per_request.to_json(), **figures(per_request)}
    theirs = None if delta is None else {**delta.to_json(), **figures(delta)}

    def block(status: str, match: bool | None = None, **more: Any) -> MetricsCrosscheck:
        return MetricsCrosscheck.made(
            status=status,
            match=match,
            per_request=mine,
            metrics_delta=theirs,
            engines=engines,
            differences=more.pop("differences", {}),
            note=note,
            **more,
        )

    if delta is not None and (impossible := spec_ranges.counts_problems(delta)):
        return block("out of range", delta_problems=impossible)  # cannot be true: no figure
    if per_request is None or delta is None:
        return block("unavailable")
    width = max(len(per_request.accepted_per_pos), len(delta.accepted_per_pos))
    a, b = per_request.widened(width).to_json(), delta.widened(width).to_json()
    differences = {
        key: {"per_request": a[key], "metrics_delta": b[key]} for key in a if a[key] != b[key]
    }
    return block("mismatch" if differences else "match", not differences, differences=differences)
