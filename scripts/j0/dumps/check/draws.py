"""Draw verification for `j0 dumps check`: each J0 draw of a request, in the slot inferred for it,
against j0.reference.draws: slot k holds the rebuilt committed token at `r mod L`. A mismatch is a
failure with a reason (a rejected draft, a future token, another index, ...); a draw at a position
no dumped step of the request wrote is unverifiable, and is compared with what earlier dumped
requests left in that slot's history (stale history)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from j0.dumps import load
from j0.dumps.check.context import CheckContext
from j0.dumps.check.findings import FAIL, UNVERIFIABLE, Finding
from j0.dumps.check.query_step import QueryStep
from j0.dumps.check.report import RequestReport
from j0.dumps.check.slot_history import UNWRITTEN
from j0.dumps.check.slot_inference import SlotFit, infer_slot

if TYPE_CHECKING:
    import numpy as np

MAX_LISTED = 200  # unverifiable draws listed per request in the JSON report


def reference_indices(seed: int, slot: int, num_spec: int, committed: int) -> list[int]:
    """The reference's own `r mod L` for one slot (j0.reference.draws.draws)."""
    from j0.reference import draws as reference

    return [d.index for d in reference.draws(seed, slot, num_spec, committed)]


@dataclass
class _Unverifiable:
    """The request's unverifiable draws so far, for their one summary finding."""

    stale: np.ndarray | None  # what earlier dumped requests left in the slot (a unique slot only)
    writers: np.ndarray | None  # which request wrote each of those entries
    stale_from: Counter[int] = field(default_factory=Counter)  # request -> stale matches
    reads: dict[int, tuple[int, str, int]] = field(default_factory=dict)  # index -> token, step, k
    first: Finding | None = None
    steps: int = 0  # query steps with at least one unverifiable draw


def check_draws(
    ctx: CheckContext,
    req: load.Request,
    report: RequestReport,
    queries: list[QueryStep],
    history: np.ndarray,
) -> None:
    """Infer the request slot, check every draw in it, and record the request's history there."""
    fit = infer_slot(queries)
    report.draws = sum(len(q.actual) for q in queries)
    if not fit.checkable:
        # Nothing verifiable for any slot: every draw landed where the dumps never wrote.
        report.unverifiable = report.draws
        ctx.findings.add(
            UNVERIFIABLE,
            "j0-draw",
            queries[0].step,
            f"all {report.draws} J0 draws of {req.label()} land on positions that no dumped "
            f"step of it wrote (it starts at position {req.start_pos}); request slot unknown",
            request=req.number,
        )
        return
    _report_fit(ctx, req, report, fit, queries[0].step)
    tally = _Unverifiable(
        stale=ctx.slots.tokens.get(fit.slot) if fit.unique else None,
        writers=ctx.slots.writers.get(fit.slot),
    )
    for q_i, q in enumerate(queries):
        _verify_step(ctx, req, report, fit.slot, q, queries[q_i + 1 :], history, tally)
    if tally.first is not None:
        ctx.findings.append(_summarize_unverifiable(report, fit.slot, tally))
    if fit.unique:
        ctx.slots.record(fit.slot, history, req.number)


def _report_fit(
    ctx: CheckContext, req: load.Request, report: RequestReport, fit: SlotFit, first: load.Step
) -> None:
    report.slot = fit.slot
    report.slot_candidates = fit.candidates if not fit.unique else []
    report.verified = fit.matches
    report.mismatched = fit.misses
    report.unverifiable = report.draws - report.verified - report.mismatched
    if report.mismatched:
        ctx.findings.add(
            FAIL,
            "j0-draw",
            first,
            f"no request slot in 0..{ctx.max_slots - 1} makes the J0 draws of {req.label()} "
            f"follow the rule; the closest, slot {fit.slot}, explains {report.verified} of "
            f"{report.verified + report.mismatched} checkable draws (failures below use it; "
            "a server with more request slots needs a larger --max-slots)",
            request=req.number,
        )


def _verify_step(
    ctx: CheckContext,
    req: load.Request,
    report: RequestReport,
    slot: int,
    q: QueryStep,
    later: list[QueryStep],
    history: np.ndarray,
    tally: _Unverifiable,
) -> None:
    """Every draft slot k of one query step: the committed token at its index, or unverifiable."""
    # The reference itself names the indices for this slot (the table is its mirror).
    indices = reference_indices(ctx.seed, slot, len(q.actual), q.committed)
    if indices != [int(x) for x in q.indices[slot]]:
        raise RuntimeError("j0 bug: the draw table disagrees with the reference")
    step_unverifiable = 0
    for k, (idx, actual) in enumerate(zip(indices, q.actual, strict=True), start=1):
        want = int(q.expected[slot, k - 1])
        if want == UNWRITTEN:
            step_unverifiable += 1
            _unwritten_draw(ctx, req, report, slot, q, k, idx, int(actual), tally)
            continue
        if want == int(actual):
            continue
        ctx.findings.add(
            FAIL,
            "j0-draw",
            q.step,
            f"request slot {slot}: r = Philox({ctx.seed}, {slot}*64+{k}) mod L = "
            f"{q.committed} gives index {idx}, whose committed token is {want}; "
            + explain(int(actual), idx, q, later, history),
            slot=k,
            expected=want,
            actual=int(actual),
            request=req.number,
        )
    tally.steps += int(step_unverifiable > 0)


def _unwritten_draw(
    ctx: CheckContext,
    req: load.Request,
    report: RequestReport,
    slot: int,
    q: QueryStep,
    k: int,
    idx: int,
    actual: int,
    tally: _Unverifiable,
) -> None:
    """A draw at a position no dumped step of the request wrote: listed, compared with earlier
    draws of the same index and with the slot's stale history; the first one is kept."""
    if len(report.unverifiable_draws) < MAX_LISTED:
        report.unverifiable_draws.append(
            {"step": q.step.name, "slot": k, "index": idx, "actual": actual}
        )
    # Nothing writes a position below the request's first one while it runs, so two draws of the
    # same index must read the same token.
    earlier = tally.reads.setdefault(idx, (actual, q.step.name, k))
    if earlier[0] != actual:
        ctx.findings.add(
            FAIL,
            "j0-draw",
            q.step,
            f"draws index {idx}, which no dumped step of {req.label()} wrote, "
            f"as {earlier[1]} slot {earlier[2]} did, and reads another token: "
            "the history cannot change at a position the request never writes",
            slot=k,
            expected=earlier[0],
            actual=actual,
            request=req.number,
        )
    held = None
    stale, writers = tally.stale, tally.writers
    if stale is not None and idx < len(stale) and stale[idx] != UNWRITTEN:
        held = int(stale[idx])
        if held == actual:
            report.stale_matches += 1
            tally.stale_from[int(writers[idx])] += 1  # type: ignore[index]
    if tally.first is None:
        tally.first = Finding(
            UNVERIFIABLE,
            "j0-draw",
            q.step.name,
            f"draws index {idx} (r mod L, L = {q.committed}), a position no "
            f"dumped step of {req.label()} wrote: the kernel read whatever "
            f"request slot {slot}'s history held there"
            + (
                f" (it held {held}, from request {int(writers[idx])})"  # type: ignore[index]
                if held is not None
                else ""
            ),
            slot=k,
            expected="unknown",
            actual=actual,
            request=req.number,
        )


def _summarize_unverifiable(report: RequestReport, slot: int, tally: _Unverifiable) -> Finding:
    """The first unverifiable draw's finding, with the request's totals (and stale matches)."""
    assert tally.first is not None
    stale_from = tally.stale_from
    tally.first.why += (
        f"; {report.unverifiable} of {report.draws} draws in {tally.steps} "
        "steps are unverifiable"
        + (
            f", {report.stale_matches} of them equal to what earlier dumped requests "
            f"left in slot {slot}'s history ("
            + ", ".join(f"request {w}: {n}" for w, n in sorted(stale_from.items()))
            + "): stale history, as after a prefix-cache hit"
            if stale_from
            else ""
        )
    )
    return tally.first


def explain(
    actual: int, idx: int, q: QueryStep, later: list[QueryStep], history: np.ndarray
) -> str:
    """Why a slot holds `actual`: a rejected draft, a future token, another index, ..."""
    import numpy as np

    past = np.nonzero(q.history == actual)[0]
    for pos, tok in sorted(q.rejected.items()):
        if tok == actual and not len(past):
            return f"it holds the rejected draft at position {pos} of this step"
    if len(past):
        return f"it holds the committed token at index {int(past[0])}, not at {idx}"
    future = np.nonzero(history[q.committed :] == actual)[0]
    if len(future):
        pos = int(future[0]) + q.committed
        return f"it holds a future token: committed later at position {pos} >= L"
    for other in later:
        if actual in other.rejected.values():
            return "it holds a token that only a later step drafted"
    return "that token is nowhere among the request's committed tokens"
