"""The per-step checks of `j0 dumps check`: a step's counts and positions fit its kind, the
hand-over to the request's next step (anchor position, anchor token), the query block's
positions (with vLLM's clamp at max_model_len - 1), and the mask token in every draft slot when
J0 is off."""

from __future__ import annotations

from j0.dumps import load
from j0.dumps.check.context import CheckContext
from j0.dumps.check.findings import FAIL
from j0.dumps.check.report import RequestReport


def check_positions(ctx: CheckContext, req: load.Request, step: load.Step) -> None:
    """Target positions run without a hole (a negative one is refused where the file is read,
    j0.dumps.load)."""
    import numpy as np

    expected_pos = step.positions[0] + np.arange(step.num_tokens)
    if not (step.positions == expected_pos).all():
        j = int(np.nonzero(step.positions != expected_pos)[0][0])
        ctx.findings.add(
            FAIL,
            "positions",
            step,
            f"target position {j} of the step is not {int(expected_pos[j])}: one request's "
            "positions run without a hole",
            expected=int(expected_pos[j]),
            actual=int(step.positions[j]),
            request=req.number,
        )


def check_counts(ctx: CheckContext, req: load.Request, step: load.Step, kind: str) -> None:
    """The positions, then num_sampled and num_rejected against the step's kind."""
    check_positions(ctx, req, step)
    if kind == load.PREFILL_CHUNK and step.num_rejected != 0:
        ctx.findings.add(
            FAIL,
            "counts",
            step,
            "a prefill chunk (num_sampled 0) has no drafts to reject",
            expected=0,
            actual=step.num_rejected,
            request=req.number,
        )
    elif kind == load.PREFILL_LAST and (step.num_sampled, step.num_rejected) != (1, 0):
        ctx.findings.add(
            FAIL,
            "counts",
            step,
            "the chunk that ends a prompt samples one token and rejects none "
            "(num_sampled, num_rejected)",
            expected=(1, 0),
            actual=(step.num_sampled, step.num_rejected),
            request=req.number,
        )
    elif kind == load.DECODE and step.num_sampled + step.num_rejected != step.num_tokens:
        ctx.findings.add(
            FAIL,
            "counts",
            step,
            f"a decode step of {step.num_tokens} tokens (the anchor and "
            f"{step.num_tokens - 1} drafts) must have num_sampled + num_rejected = "
            f"{step.num_tokens}",
            expected=step.num_tokens,
            actual=step.num_sampled + step.num_rejected,
            request=req.number,
        )


def check_continuity(
    ctx: CheckContext, req: load.Request, step: load.Step, nxt: load.Step | None
) -> int | None:
    """Check the hand-over to the next step; return the anchor token the history gets."""
    from j0.reference import draws as reference

    apos = reference.anchor_position(int(step.positions[0]), step.num_tokens, step.num_rejected)
    if nxt is None:
        return int(step.query_ids[0]) if step.has_query else None
    start = int(nxt.positions[0])
    if start != apos:
        ctx.findings.add(
            FAIL,
            "positions",
            nxt,
            f"the request's next step must start at the anchor position of {step.name} "
            f"(last valid position {step.last_valid_pos} + 1, with num_rejected "
            f"{step.num_rejected})",
            expected=apos,
            actual=start,
            request=req.number,
        )
    token = int(nxt.input_ids[0])
    if step.has_query and int(step.query_ids[0]) != token:
        ctx.findings.add(
            FAIL,
            "anchor",
            step,
            f"slot 0 (the anchor: the bonus or next prefill token) must come back as the "
            f"first input id of {nxt.name}",
            slot=0,
            expected=token,
            actual=int(step.query_ids[0]),
            request=req.number,
        )
    return token


def check_query_positions(ctx: CheckContext, req: load.Request, step: load.Step) -> None:
    """Query slot k sits at anchor_pos + k, or at vLLM's clamp (max_model_len - 1) past it."""
    import numpy as np

    apos = step.anchor_pos
    want = apos + np.arange(step.num_spec + 1)
    got = step.query_positions
    if (got == want).all():
        return
    # vLLM clamps query positions to max_model_len - 1: a constant tail at or past the anchor.
    clamp = int(got[-1])
    clamped = np.minimum(want, clamp)
    if clamp >= apos and (got == clamped).all() and (ctx.max_model_len in (None, clamp + 1)):
        ctx.max_model_len = clamp + 1
        return
    k = int(np.nonzero(got != want)[0][0])
    ctx.findings.add(
        FAIL,
        "query-positions",
        step,
        f"query slot k sits at the anchor position {apos} + k (last valid position "
        f"{step.last_valid_pos} + 1)",
        slot=k,
        expected=int(want[k]),
        actual=int(got[k]),
        request=req.number,
    )


def check_mask(
    ctx: CheckContext, req: load.Request, step: load.Step, report: RequestReport
) -> None:
    """J0 off: every draft slot holds the mask token; counted in the request's report."""
    for k, token in enumerate(step.query_ids[1:], start=1):
        report.draws += 1
        if int(token) == ctx.mask_token:
            report.verified += 1
            continue
        report.mismatched += 1
        ctx.findings.add(
            FAIL,
            "mask",
            step,
            "J0 off (ctx_noise false): every draft slot holds the mask token "
            "(parallel_drafting_token_id)",
            slot=k,
            expected=ctx.mask_token,
            actual=int(token),
            request=req.number,
        )
