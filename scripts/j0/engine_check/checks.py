"""The engine check's verdicts, each from evidence a run leaves behind (server log, responses,
/metrics before and after, step dumps), so each can be re-run on recorded files.

A check is (name, ok, detail); none of them trusts the code under test: the identity comes from
the sha256 in the log, J0's draws from `j0 dumps check`'s independent reference, the metrics from
two different channels of the server (per-request metrics vs Prometheus counters).
"""

from __future__ import annotations

from collections.abc import Sequence

from j0.checks import Check
from j0.engine.server import server_log
from j0.engine_check.requests import Exchange
from j0.pins import Pins


def identity(log: str, pins: Pins, run: str, audited: bool = False) -> Check:
    """The identity line (`j0 image identity`, first thing the entrypoint logs) names the article's
    speculator.py by its sha256; `audited`: the audited article's file (AUDIT_ARTICLE_SHA256,
    identity=audit), which the serving scenarios' J0-on server runs."""
    facts = server_log.parse(log, run)
    name = f"identity ({run})"
    if facts.identity is None:
        if "identity" in facts.unreadable:
            return Check.of(
                name, False, f"unreadable identity line: {facts.unreadable['identity']}"
            )
        return Check.of(name, False, "no `j0-entrypoint ... sha256=` identity line in the log")
    line = facts.lines["identity"]
    sha, kind = (
        (pins.values["AUDIT_ARTICLE_SHA256"], "audit")
        if audited
        else (
            pins.patched_sha256,
            "article",
        )
    )
    ok = facts.speculator_sha256 == sha and facts.identity == kind
    want = f"sha256={sha[:12]}… identity={kind}"
    return Check.of(name, ok, line if ok else f"{line} (expected {want})")


def patch_log_lines(log: str, j0_on: bool, run: str, max_num_seqs: int, max_len: int) -> Check:
    """The patch's own log lines: `DFLASH_CTX_NOISE=1 pool=(max_num_seqs, max_model_len)` with J0
    on (`=0 pool=(1, 1)` off) and `DFLASH_DRAFT_KV_DTYPES=[...]` at the draft's load."""
    facts = server_log.parse(log, run)
    name = f"patch log lines ({run})"
    noise = facts.j0 is not None and facts.pool_shape is not None
    dtypes = facts.draft_kv_dtypes is not None
    if not noise or not dtypes:
        missing = [
            w for w, m in (("DFLASH_CTX_NOISE", noise), ("DFLASH_DRAFT_KV_DTYPES", dtypes)) if not m
        ]
        return Check.of(name, False, f"missing from the log: {', '.join(missing)}")
    flag = 1 if facts.j0 == "on" else 0
    rows, cols = facts.pool_shape or (0, 0)
    want = (1, max_num_seqs, max_len) if j0_on else (0, 1, 1)
    detail = (
        f"DFLASH_CTX_NOISE={flag} pool=({rows}, {cols}); "
        f"DFLASH_DRAFT_KV_DTYPES={facts.draft_kv_dtypes}"
    )
    if (flag, rows, cols) != want:
        return Check.of(
            name,
            False,
            f"{detail} (expected DFLASH_CTX_NOISE={want[0]} pool=({want[1]}, {want[2]}))",
        )
    return Check.of(name, True, detail)


def outputs_identical(on: Sequence[Exchange], off: Sequence[Exchange]) -> Check:
    """Greedy outputs are the same token ids with J0 on and off (speculative decoding is lossless),
    plain and streamed alike."""
    name = "greedy outputs J0 on = off"
    if len(on) != len(off) or not on:
        return Check.of(name, False, f"{len(on)} responses with J0 on, {len(off)} off")
    for a, b in zip(on, off, strict=True):
        for label, x, y in (
            ("plain", a.output(), b.output()),
            ("streamed", a.streamed_output(), b.streamed_output()),
            ("on: plain vs streamed", a.output(), a.streamed_output()),
        ):
            if x != y:
                at = next(
                    (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                    min(len(x), len(y)),
                )
                return Check.of(
                    name,
                    False,
                    f"{a.words}-word prompt, {label}: token {at} differs "
                    f"({x[at] if at < len(x) else 'end'} vs {y[at] if at < len(y) else 'end'})",
                )
    total = sum(len(e.output()) for e in on)
    return Check.of(name, True, f"{len(on)} prompts x (plain + streamed), {total} tokens each way")


def metrics_agree(exchanges: Sequence[Exchange], before: str, after: str, run: str) -> Check:
    """The per-request `metrics.speculative_decoding` of every response, summed, equals the
    Prometheus counters' deltas around the requests (drafts, draft tokens, accepted, per
    position)."""
    from j0.engine.figures import prometheus_counters, spec_counts

    name = f"per-request metrics = /metrics deltas ({run})"
    summed = spec_counts.Counts()
    problems: list[str] = []
    responses = 0
    for e in exchanges:
        for spec in e.spec_metrics():
            counts, issues = spec_counts.request_counts(spec)
            problems += issues
            if counts is not None:
                summed.add(counts)
                responses += 1
    if responses != 2 * len(exchanges):
        problems.append(f"{responses} of {2 * len(exchanges)} responses carry spec-decode metrics")
    try:
        snap_after = prometheus_counters.parse(after)
        snap_before = prometheus_counters.parse(before)
    except prometheus_counters.MetricsFormatError as exc:
        return Check.of(name, False, f"/metrics: {exc}")
    if snap_after is None:
        return Check.of(name, False, "no vllm:spec_decode_* counters in /metrics")
    delta = snap_after.minus(snap_before) if snap_before else snap_after.counts
    width = max(len(delta.accepted_per_pos), len(summed.accepted_per_pos))
    mine, theirs = summed.widened(width).to_json(), delta.widened(width).to_json()
    if mine != theirs:
        problems.append(f"responses {mine} vs counters {theirs}")
    if problems:
        return Check.of(name, False, "; ".join(problems))
    return Check.of(
        name,
        True,
        f"{responses} responses: {delta.drafts} drafts, {delta.draft_tokens} draft tokens, "
        f"{delta.accepted} accepted, per position {delta.accepted_per_pos}",
    )


def from_exit(name: str, code: int, detail: str, ok_codes: Sequence[int] = (0,)) -> Check:
    return Check.of(name, code in ok_codes, f"exit {code}: {detail}")
