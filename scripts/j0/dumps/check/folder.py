"""A whole dump folder through `j0 dumps check`: the folder's own checks (unreadable or missing
step files, one ctx_noise and one query block size for the whole server), the mask token settled
for J0 off, then every request in step order (the start-up warm-up and --skip-requests left out),
and the folder's CheckReport with its verdict."""

from __future__ import annotations

from collections import Counter
from typing import Any

from j0.dumps import load
from j0.dumps.check.context import CheckContext
from j0.dumps.check.findings import FAIL, Finding
from j0.dumps.check.report import CheckReport, RequestReport, decide_verdict, request_report
from j0.dumps.check.request import check_request


def check_dumps(
    dumps: load.DumpSet,
    seed: int,
    skip_requests: int,
    mask_token: int | None,
    max_slots: int,
    allow_unverifiable: bool,
    variant: str | None = None,
    prompts: list[Any] | None = None,
) -> CheckReport:
    """Check a loaded dump set; the report holds every finding and the verdict. `variant`
    (article / prefix-safe) and `prompts` (token ids) concern draws below a request's start."""
    ctx = CheckContext(
        seed=seed, max_slots=max_slots, mask_token=mask_token, variant=variant, prompts=prompts
    )
    _check_files(ctx, dumps)
    j0 = _check_one_ctx_noise(ctx, dumps)
    num_spec = _check_one_num_spec(ctx, dumps)
    requests = load.group_requests(dumps.steps)
    checked = [r for r in requests if not r.warmup and r.number >= skip_requests]
    mask_source = _settle_mask_token(ctx, checked)
    reports = [_check_or_skip(ctx, req, skip_requests, num_spec) for req in requests]
    verdict, code = decide_verdict(ctx.findings.all, reports, allow_unverifiable)
    return CheckReport(
        root=str(dumps.root),
        verdict=verdict,
        exit_code=code,
        seed=seed,
        j0=j0,
        num_spec=num_spec,
        mask_token=ctx.mask_token,
        mask_token_source=mask_source,
        steps=len(dumps.steps),
        requests=reports,
        findings=ctx.findings.all,
        max_model_len=ctx.max_model_len,
        variant=variant,
    )


def _check_files(ctx: CheckContext, dumps: load.DumpSet) -> None:
    for path, why in dumps.problems:
        ctx.findings.append(Finding(FAIL, "format", path.name, why))
    for number in dumps.missing:
        ctx.findings.append(
            Finding(
                FAIL,
                "format",
                f"step{number:04d}.pt",
                "missing: the patch numbers its dumps without gaps",
            )
        )


def _check_one_ctx_noise(ctx: CheckContext, dumps: load.DumpSet) -> str:
    """J0 on, off or mixed (a failure: one server has one VLLM_DFLASH_CTX_NOISE)."""
    j0_values = dumps.ctx_noise_values
    j0 = "mixed" if len(j0_values) > 1 else ("on" if True in j0_values else "off")
    if len(j0_values) > 1:
        first = dumps.steps[0]
        other = next(s for s in dumps.steps if s.ctx_noise != first.ctx_noise)
        ctx.findings.add(
            FAIL,
            "ctx_noise",
            other,
            f"ctx_noise is {other.ctx_noise} here but {first.ctx_noise} in {first.name}: "
            "one server has one VLLM_DFLASH_CTX_NOISE",
            expected=first.ctx_noise,
            actual=other.ctx_noise,
        )
    return j0


def _check_one_num_spec(ctx: CheckContext, dumps: load.DumpSet) -> int | None:
    """The query blocks' common num_speculative_tokens; a step with another size fails."""
    spec_counts = Counter(s.num_spec for s in dumps.steps if s.has_query)
    num_spec = spec_counts.most_common(1)[0][0] if spec_counts else None
    for s in dumps.steps:
        if s.has_query and s.num_spec != num_spec:
            ctx.findings.add(
                FAIL,
                "format",
                s,
                f"a query block of {s.num_spec + 1} slots; the other steps have "
                f"{num_spec + 1} (num_speculative_tokens + 1)",
                expected=num_spec,
                actual=s.num_spec,
            )
    return num_spec


def _settle_mask_token(ctx: CheckContext, checked: list[load.Request]) -> str:
    """Where the mask token comes from: given, inferred from the J0-off draft slots, or none."""
    values = Counter(
        int(t)
        for r in checked
        for s in r.steps
        if s.has_query and not s.ctx_noise
        for t in s.query_ids[1:]
    )
    if ctx.mask_token is not None:
        return "given"
    if not values:
        return "none"
    ctx.mask_token = values.most_common(1)[0][0]
    return "inferred: the one value of the J0-off draft slots"


def _check_or_skip(
    ctx: CheckContext, req: load.Request, skip_requests: int, num_spec: int | None
) -> RequestReport:
    report = request_report(req)
    if req.warmup:
        report.status = "warm-up"
        report.note = (
            f"starts at position {req.start_pos} before any request that starts at 0: "
            "vLLM's start-up warm-up (CUDA graphs); its J0 slots read whatever the "
            "history held, not checked"
        )
    elif req.number < skip_requests:
        report.status = "skipped"
        report.note = "--skip-requests"
    else:
        check_request(ctx, req, report, num_spec)
    return report
