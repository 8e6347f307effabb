"""The report of `j0 dumps check`: one RequestReport per request the steps form, the folder's
CheckReport (verdict, exit code, findings; what --json writes), its draw totals, and the one-line
summary the command prints last."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from j0.dumps import load
from j0.dumps.check.findings import FAIL, UNVERIFIABLE, Finding
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK


@dataclass
class RequestReport:
    number: int
    first_step: str
    last_step: str
    steps: int
    start_pos: int
    kinds: dict[str, int]
    status: str  # checked | warm-up | skipped
    j0: bool | None = None
    slot: int | None = None  # the inferred request slot (req_state_idx)
    slot_candidates: list[int] = field(default_factory=list)  # when several fit equally
    draws: int = 0  # J0 draws (or mask slots with J0 off) looked at
    verified: int = 0
    mismatched: int = 0
    unverifiable: int = 0
    stale_matches: int = 0  # unverifiable draws equal to what an earlier request left there
    # The first unverifiable draws: {"step", "slot", "index", "actual"} (JSON report only).
    unverifiable_draws: list[dict[str, Any]] = field(default_factory=list)
    query_steps: int = 0
    accepted: int = 0
    rejected: int = 0
    note: str = ""


@dataclass(frozen=True)
class DrawTotals:
    """The draws of the checked requests (warm-up and skipped ones left out), and the failures."""

    requests_checked: int
    requests_not_checked: int
    draws: int  # draft slots looked at: J0 draws, or mask slots with J0 off
    verified: int
    mismatched: int
    unverifiable: int
    failures: int  # FAIL findings of the whole folder


@dataclass
class CheckReport:
    root: str
    verdict: str  # PASS | FAIL | UNVERIFIABLE | NOTHING TO CHECK
    exit_code: int
    seed: int
    j0: str  # on | off | mixed
    num_spec: int | None
    mask_token: int | None
    mask_token_source: str
    steps: int
    requests: list[RequestReport]
    findings: list[Finding]
    max_model_len: int | None = None  # when the query positions show vLLM's clamp
    variant: str | None = None  # the speculator.py that ran (--log / --variant), when known

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.level for f in self.findings))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["finding_counts"] = self.counts()
        return data

    def totals(self) -> DrawTotals:
        checked = [r for r in self.requests if r.status == "checked"]
        return DrawTotals(
            requests_checked=len(checked),
            requests_not_checked=len(self.requests) - len(checked),
            draws=sum(r.draws for r in checked),
            verified=sum(r.verified for r in checked),
            mismatched=sum(r.mismatched for r in checked),
            unverifiable=sum(r.unverifiable for r in checked),
            failures=sum(1 for f in self.findings if f.level == FAIL),
        )


def request_report(req: load.Request) -> RequestReport:
    """A request's report before its checks: its steps by kind, accepted and rejected drafts."""
    report = RequestReport(
        number=req.number,
        first_step=req.first.name,
        last_step=req.last.name,
        steps=len(req.steps),
        start_pos=req.start_pos,
        kinds=dict(Counter(req.kinds)),
        status="checked",
        j0=req.first.ctx_noise,
        query_steps=sum(1 for s in req.steps if s.has_query),
    )
    for step, kind in zip(req.steps, req.kinds, strict=True):
        if kind == load.DECODE:
            report.accepted += max(0, step.num_valid - 1)
            report.rejected += step.num_rejected
    return report


def decide_verdict(
    findings: list[Finding], requests: list[RequestReport], allow_unverifiable: bool
) -> tuple[str, int]:
    """(verdict, exit code): FAIL on any failure; UNVERIFIABLE (exit 2, or 0 when allowed) when
    some draws could not be checked; NOTHING TO CHECK without checked draws; else PASS."""
    levels = Counter(f.level for f in findings)
    checked = [r for r in requests if r.status == "checked"]
    draws = sum(r.draws for r in checked)
    query_steps = sum(r.query_steps for r in checked)
    if levels[FAIL]:
        return "FAIL", CHECK_FAILED
    if not checked or query_steps == 0:
        return "NOTHING TO CHECK", INPUT_LACKS
    if levels[UNVERIFIABLE] or sum(r.unverifiable for r in checked):
        return "UNVERIFIABLE", OK if allow_unverifiable else INPUT_LACKS
    if draws == 0:
        return "NOTHING TO CHECK", INPUT_LACKS
    return "PASS", OK


def summary_after_verdict(report: CheckReport) -> str:
    """The summary line without its leading verdict: `: N steps, ... (exit C)`."""
    j0 = f"J0 {report.j0}"
    if report.j0 == "off" and report.mask_token is not None:
        j0 += f", mask token {report.mask_token} ({report.mask_token_source})"
    if report.max_model_len is not None:
        j0 += f", query positions clamped at max_model_len {report.max_model_len}"
    totals = report.totals()
    return (
        f": {report.steps} steps, {totals.requests_checked} request(s) checked, "
        f"{totals.requests_not_checked} not (warm-up/skipped); {j0}; "
        f"{totals.verified}/{totals.draws} draft slots verified, {totals.unverifiable} "
        f"unverifiable, {totals.failures} failure(s) (exit {report.exit_code})"
    )


def summary_line(report: CheckReport) -> str:
    """The last line `j0 dumps check` prints, as plain text: the verdict, then the totals."""
    return report.verdict + summary_after_verdict(report)
