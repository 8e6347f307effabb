"""One request through `j0 dumps check`, step by step: each step's own checks, the request's
committed tokens rebuilt from the dumps as the patch's `_ctx_pool_write_kernel` writes them (each
step's inputs except the rejected ones at their positions, then the anchor: the next step's first
input), and, with J0 on, the query steps whose draws draws.py then checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from j0.dumps import bounds, load
from j0.dumps.check.context import CheckContext
from j0.dumps.check.draws import check_draws
from j0.dumps.check.findings import FAIL
from j0.dumps.check.query_step import QueryStep
from j0.dumps.check.report import RequestReport
from j0.dumps.check.slot_history import UNWRITTEN
from j0.dumps.check.steps import (
    check_continuity,
    check_counts,
    check_mask,
    check_query_positions,
)
from j0.errors import INPUT_LACKS, J0Error

if TYPE_CHECKING:
    import numpy as np

MAX_POSITION = 1 << 26  # positions past this are refused rather than allocated for


@dataclass
class _Walk:
    """The request's history as rebuilt so far and its J0 query steps."""

    history: np.ndarray
    table: np.ndarray | None  # the draw table, when the request's J0 draws are checked
    num_spec: int | None
    queries: list[QueryStep]


def check_request(
    ctx: CheckContext, req: load.Request, report: RequestReport, num_spec: int | None
) -> None:
    """Every step of one request, then its J0 draws (the request slot inferred from them)."""
    import numpy as np

    prefix = None
    if req.start_pos != 0 and req.first.ctx_noise:
        report.note, prefix = _below_start(ctx, req)
    top = max(int(s.positions.max()) for s in req.steps) + (num_spec or 0) + 2
    if top > MAX_POSITION:
        _refuse_far_positions(ctx, req)
        return
    j0_queries = num_spec and req.first.ctx_noise
    committed = [s.anchor_pos + 1 for s in req.steps if j0_queries and s.num_spec == num_spec]
    problem = bounds.request_problem(req.label(), top + 1, committed, ctx.max_slots, num_spec or 0)
    if problem is not None:
        raise J0Error(f"{req.first.path.parent}: {problem} (docs/dumps.md, Limits)", INPUT_LACKS)
    walk = _Walk(
        history=np.full(top + 1, UNWRITTEN, dtype=np.int64),
        table=ctx.draw_table(num_spec) if num_spec and req.first.ctx_noise else None,
        num_spec=num_spec,
        queries=[],
    )
    if prefix is not None:
        walk.history[: len(prefix)] = prefix
    for i, step in enumerate(req.steps):
        nxt = req.steps[i + 1] if i + 1 < len(req.steps) else None
        _check_step(ctx, req, report, walk, step, req.kinds[i], nxt)
    if walk.queries:
        check_draws(ctx, req, report, walk.queries, walk.history)


def _below_start(ctx: CheckContext, req: load.Request) -> tuple[str, np.ndarray | None]:
    """The request's note, and its own tokens below its first dumped position where they are
    known and the file that ran reads them there (the prefix-safe variant, with --prompts)."""
    from j0.article.variants import ARTICLE_VARIANT as ARTICLE
    from j0.article.variants import PREFIX_SAFE
    from j0.dumps.check.own_prefix import own_prefix

    start = req.start_pos
    unchecked = (
        f"starts at position {start}: its earlier tokens were never dumped (a prefix-cache hit, "
        f"or steps that ran with other requests); J0 draws below position {start} "
    )
    if ctx.variant == ARTICLE:
        return unchecked + (
            "read whatever the request slot's history held (the article's file: its known "
            "behaviour under prefix caching) and cannot be checked"
        ), None
    if ctx.variant != PREFIX_SAFE:
        return unchecked + (
            "cannot be checked (which speculator.py ran is not known: --log or --variant)"
        ), None
    if ctx.prompts is None:
        return unchecked + (
            "read the request's own tokens (the prefix-safe variant), which the dumps lack: "
            "--prompts FILE (the prompts' token ids) checks them"
        ), None
    found = own_prefix(req, ctx.prompts)
    if found.tokens is None:
        return unchecked + f"cannot be checked: {found.note}", None
    return (
        f"starts at position {start} (a prefix-cache hit): the prefix-safe variant fills "
        f"positions 0..{start - 1} from the request's own tokens; J0 draws there are checked "
        f"against {found.note}"
    ), found.tokens


def _refuse_far_positions(ctx: CheckContext, req: load.Request) -> None:
    worst = max(req.steps, key=lambda s: int(s.positions.max()))
    ctx.findings.add(
        FAIL,
        "positions",
        worst,
        f"a target position beyond {MAX_POSITION} (no model context is that long); "
        "the request is not checked further",
        actual=int(worst.positions.max()),
        request=req.number,
    )


def _check_step(
    ctx: CheckContext,
    req: load.Request,
    report: RequestReport,
    walk: _Walk,
    step: load.Step,
    kind: str,
    nxt: load.Step | None,
) -> None:
    check_counts(ctx, req, step, kind)
    anchor = check_continuity(ctx, req, step, nxt)
    # What _ctx_pool_write_kernel writes: the valid inputs, then the anchor.
    valid = step.num_valid
    keep = step.positions[:valid] >= 0
    walk.history[step.positions[:valid][keep]] = step.input_ids[:valid][keep]
    apos = step.anchor_pos
    if anchor is not None and apos >= 0:
        walk.history[apos] = anchor
    if not step.has_query:
        return
    check_query_positions(ctx, req, step)
    if step.ctx_noise and walk.table is not None and step.num_spec == walk.num_spec:
        walk.queries.append(_query_step(step, walk.history, walk.table))
    elif not step.ctx_noise:
        check_mask(ctx, req, step, report)


def _query_step(step: load.Step, history: np.ndarray, table: np.ndarray) -> QueryStep:
    """A J0 query step with the history it drew from: L = last_valid_pos + 2 = anchor_pos + 1."""
    valid = step.num_valid
    committed = step.anchor_pos + 1
    indices = table % committed
    rejected = {
        int(p): int(t) for p, t in zip(step.positions[valid:], step.input_ids[valid:], strict=True)
    }
    return QueryStep(
        step,
        committed,
        history[indices],
        indices,
        step.query_ids[1:],
        rejected,
        history[:committed].copy(),
    )
