"""`j0 status`'s judgement: the server's facts and its log's, checked one fact at a time against
the pins and the article's serving rules, and the StatusReport they make.

The article's setup: the article's speculator.py (identity=article), vLLM at the pinned commit,
the DFlash drafter with 15 or 7 draft tokens and the draft KV cache "auto", --max-num-seqs 4,
the patch's lines in the log, spec-decode counters that move. J0 on and J0 off (the baseline) are
both the article's setup; which one runs is reported.
"""

from __future__ import annotations

from j0.article.spec_config import LoggedSpec
from j0.checks import Check
from j0.engine.server.j0_state import UNKNOWN, J0State, j0_ran
from j0.engine.server.server_log import LogFacts
from j0.pins import Pins
from j0.status import log_checks, server_checks
from j0.status.finding import StatusFinding
from j0.status.server_facts import ServerFacts
from j0.status.status_report import StatusReport


def judge(
    facts: ServerFacts, log: LogFacts | None, pins: Pins, why_no_log: str | None = None
) -> tuple[list[Check], StatusReport]:
    """One check per fact, in the order printed; and the report (with article_setup, reasons).
    `why_no_log`: where there is no log, why (log_checks.no_log)."""
    findings: list[StatusFinding] = [
        server_checks.health(facts),
        server_checks.model(facts, pins),
        server_checks.spec_decode(facts),
    ]
    if log is None:
        findings.append(log_checks.no_log(why_no_log))
    else:
        findings += log_checks.all_of(log, facts, pins)
    reasons = [why for finding in findings if (why := finding.why_not) is not None]
    return [finding.check for finding in findings], report_of(facts, log, pins, reasons)


def j0_state(log: LogFacts | None) -> J0State:
    """J0 as run by the one rule (j0.engine.server.j0_state); without a log, not seen."""
    if log is None:
        return J0State(UNKNOWN, UNKNOWN, "no server log read", seen=False)
    return j0_ran(log)


def report_of(
    facts: ServerFacts, log: LogFacts | None, pins: Pins, reasons: list[str]
) -> StatusReport:
    """The flat report: the server's facts, the log's (None without a log), the verdict."""
    before = facts.counters_before
    spec = log.speculative_config if log else None
    return StatusReport(
        url=facts.url,
        healthy=facts.healthy,
        model=facts.model,
        max_model_len=facts.max_model_len,
        j0=log.j0 if log else None,
        j0_state=j0_state(log).to_json(),
        pool_shape=log.pool_shape if log else None,
        draft_kv_dtypes=log.draft_kv_dtypes if log else None,
        spec_kv_cache_dtype=log.spec_kv_cache_dtype if log else None,
        speculator_sha256=log.speculator_sha256 if log else None,
        speculator_path=log.speculator_path if log else None,
        identity=log.identity if log else None,
        vllm_version=(log.vllm_version if log else None) or facts.version,
        vllm_commit=log.vllm_commit if log else None,
        vllm_commit_pinned=pins.vllm_commit,
        num_speculative_tokens=LoggedSpec.of(spec).tokens,
        speculative_config=spec,
        max_num_seqs=log.max_num_seqs if log else None,
        spec_decode_counters=before is not None and "drafts" in before,
        spec_decode_drafts_delta=facts.delta("drafts"),
        spec_decode_draft_tokens_delta=facts.delta("draft_tokens"),
        spec_decode_accepted_delta=facts.delta("accepted"),
        log_source=log.source if log else None,
        log_startups=log.startups if log else None,
        article_setup=not reasons,
        reasons=reasons,
    )
