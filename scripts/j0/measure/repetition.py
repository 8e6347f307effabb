"""How much an output repeats itself: acceptance measured on loops says little about drafting
(a prompt-lookup drafter follows a loop for free), so every output carries this measure and the
report applies a gate to it.

    distinct_n        distinct n-grams / n-grams of the output, n = 1, 2, 3 (None when the
                      output is shorter than n)
    repeating_suffix  the longest suffix that repeats with some period p (at least two whole
                      periods: x[i] == x[i + p] throughout it), p <= SEARCH_PERIOD; its length
                      and the smallest such period (`period`; 0 and None when no suffix repeats)
    loop              the output's second half (its last ceil(n / 2) units) lies in a repeating
                      suffix of period <= LOOP_PERIOD (at least two periods long)
    gate              at each context bin, at least GATE_SHARE of the outputs are no loop

The units are the output's token ids where the server gave them (`units`: "token ids"), else its
characters ("characters": the gate is judged on token ids only). Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

LOOP_PERIOD = 64
SEARCH_PERIOD = 512
GATE_SHARE = 0.9
TOKEN_IDS = "token ids"
CHARACTERS = "characters"


def distinct(units: Sequence[Any], n: int) -> float | None:
    grams = len(units) - n + 1
    if grams < 1:
        return None
    return len({tuple(units[i : i + n]) for i in range(grams)}) / grams


def suffix_with_period(units: Sequence[Any], p: int) -> int:
    """The length of the longest suffix with x[i] == x[i + p] throughout (>= p: the pattern
    and the run of matches after it); 0 when it holds fewer than two periods."""
    n = len(units)
    run = 0
    while run < n - p and units[n - 1 - run] == units[n - 1 - run - p]:
        run += 1
    return run + p if run >= p else 0


def repeating_suffix(
    units: Sequence[Any], max_period: int = SEARCH_PERIOD
) -> tuple[int, int | None]:
    """(length, smallest period) of the longest repeating suffix, periods <= max_period."""
    best, period = 0, None
    for p in range(1, min(max_period, len(units) // 2) + 1):
        length = suffix_with_period(units, p)
        if length > best:
            best, period = length, p
    return best, period


def is_loop(units: Sequence[Any], max_period: int = LOOP_PERIOD) -> bool:
    """Whether the second half lies in a repeating suffix of period <= max_period."""
    n = len(units)
    half = n - n // 2
    return any(suffix_with_period(units, p) >= half for p in range(1, min(max_period, n // 2) + 1))


def measure(units: Sequence[Any], kind: str = TOKEN_IDS) -> dict[str, Any]:
    length, period = repeating_suffix(units)
    return {
        "units": kind,
        "length": len(units),
        "distinct_1": distinct(units, 1),
        "distinct_2": distinct(units, 2),
        "distinct_3": distinct(units, 3),
        "repeating_suffix": length,
        "period": period,
        "loop": is_loop(units),
    }


def of_output(token_ids: Sequence[int] | None, text: str | None) -> dict[str, Any] | None:
    """The measure of one output: on its token ids, else on its characters."""
    if token_ids:
        return measure(list(token_ids), TOKEN_IDS)
    if text:
        return measure(text, CHARACTERS)
    return None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class MeasuredRequest(Protocol):
    """What the gate reads of a request (j0.bench's RequestEntry has it)."""

    ok: bool | None
    prompt_tokens: int | float | None
    repetition: dict[str, Any] | None


def gate(
    entries: Sequence[MeasuredRequest],
    bin_of: Callable[[int], tuple[int, int | None]],
    share: float = GATE_SHARE,
) -> list[dict[str, Any]]:
    """Per context bin of the prompts (prompt_tokens): the outputs measured on token ids, how
    many are loops, the share that is not, and whether the gate passes (`passed`: None where
    no output of the bin has token ids); with the bin's mean distinct-n and repeating suffix."""
    bins: dict[tuple[int, int | None], list[dict[str, Any]]] = {}
    for e in entries:
        rep = e.repetition
        if not e.ok or rep is None or e.prompt_tokens is None:
            continue
        bins.setdefault(bin_of(int(e.prompt_tokens)), []).append(rep)
    out = []
    for b, reps in sorted(bins.items(), key=lambda x: x[0][0]):
        judged = [r for r in reps if r.get("units") == TOKEN_IDS]
        loops = sum(1 for r in judged if r.get("loop"))
        clean = (len(judged) - loops) / len(judged) if judged else None
        out.append(
            {
                "context_start": b[0],
                "context_end": b[1],
                "outputs": len(reps),
                "judged": len(judged),
                "loops": loops,
                "share_without_loop": clean,
                "passed": None if clean is None else clean >= share,
                **{
                    f"mean_{key}": _mean([float(r[key]) for r in reps if r.get(key) is not None])
                    for key in ("distinct_1", "distinct_2", "distinct_3", "repeating_suffix")
                },
            }
        )
    return out


def gate_verdict(bins: Sequence[dict[str, Any]]) -> bool | None:
    """True: every judged bin passes; False: one fails; None: no bin could be judged."""
    judged = [b["passed"] for b in bins if b["passed"] is not None]
    return None if not judged else all(judged)
