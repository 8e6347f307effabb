"""`j0 status`'s checks of what the server says: /health, the model it serves, and spec-decode
counters that are present and move after the probe."""

from __future__ import annotations

from j0.checks import FAIL, OK, WARN
from j0.pins import Pins
from j0.status.finding import StatusFinding
from j0.status.server_facts import ServerFacts


def _why(head: str, facts: ServerFacts) -> str:
    """`head`, and the problems met (never an empty fragment); where no server answered at all,
    that is the reason, said once in the health check."""
    if not facts.answered:
        return f"{head}: not asked, no server answers"
    return f"{head}: {'; '.join(facts.problems)}" if facts.problems else head


def health(facts: ServerFacts) -> StatusFinding:
    return StatusFinding.of("health", OK if facts.healthy else FAIL, facts.health)


def model(facts: ServerFacts, pins: Pins) -> StatusFinding:
    """The first model of /v1/models is the article's target (by its name or its root)."""
    words = facts.model or "none"
    if facts.root and facts.root != facts.model:
        words += f" (root {facts.root})"
    if facts.max_model_len is not None:
        words += f", max_model_len {facts.max_model_len}"
    if facts.model is None:
        return StatusFinding.of("model", FAIL, _why("no model in /v1/models", facts))
    if pins.target_model not in (facts.model, facts.root):
        return StatusFinding.of(
            "model",
            WARN,
            words,
            f"serves {facts.model}, not the article's target {pins.target_model}",
        )
    return StatusFinding.of("model", OK, words)


def spec_decode(facts: ServerFacts) -> StatusFinding:
    """vllm:spec_decode_* counters in /metrics, and the probe made them move."""
    before, after = facts.counters_before, facts.counters_after
    if before is None:
        return StatusFinding.of("spec-decode", FAIL, _why("no /metrics", facts))
    if "drafts" not in before:
        return StatusFinding.of(
            "spec-decode",
            FAIL,
            "no vllm:spec_decode_* counters in /metrics: speculative decoding is off",
        )
    if after is None and facts.probe.startswith("not sent (--no-probe)"):
        return StatusFinding.of(
            "spec-decode", OK, "counters present (not shown moving: --no-probe)"
        )
    if after is None:
        return StatusFinding.of(
            "spec-decode", WARN, f"counters present; probe {facts.probe}", f"probe {facts.probe}"
        )
    drafts = facts.delta("drafts") or 0.0
    tokens = facts.delta("draft_tokens") or 0.0
    accepted = facts.delta("accepted") or 0.0
    words = (
        f"counters present; the probe ({facts.probe}) drafted {tokens:.0f} tokens in "
        f"{drafts:.0f} steps, {accepted:.0f} accepted"
    )
    if drafts > 0:
        return StatusFinding.of("spec-decode", OK, words)
    return StatusFinding.of("spec-decode", FAIL, words, "the probe request drafted nothing")
