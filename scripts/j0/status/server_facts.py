"""A client of the running vLLM server: what it says on /health, /version, /v1/models, /metrics,
and to one short probe request.

vLLM 0.33.0's endpoints (vllm/entrypoints/serve/instrumentator/health.py and basic.py, the
OpenAI-compatible /v1 routes, prometheus /metrics). The spec-decode counters
(vllm/v1/spec_decode/metrics.py) are `vllm:spec_decode_num_drafts_total`,
`..._num_draft_tokens_total` and `..._num_accepted_tokens_total`, one series per engine and model;
prometheus_client's parser names each family without `_total`. /metrics and /health need no API
key; /v1 does when the server has one. Every request goes through
j0.engine.server.endpoints.request.
"""

from __future__ import annotations

import json
import time
import urllib.error
from dataclasses import dataclass, field
from typing import Any

from j0.edge import urls
from j0.engine.server.endpoints import MAX_METRICS_BYTES, TIMEOUT_S, request
from j0.errors import J0Error, parse_json, require

PROBE_PROMPT = "Speculative decoding drafts several tokens and checks them in one step. In short,"
PROBE_MAX_TOKENS = 32
PROBE_TIMEOUT_S = 300.0
DEADLINE_S = 120.0  # the whole of `j0 status`'s conversation with the server (--deadline)
NO_ANSWER = (urllib.error.URLError, OSError)


class DeadlinePassed(OSError):
    """`j0 status`'s overall deadline passed before a request was sent."""


@dataclass
class Deadline:
    """The time left of `j0 status`'s overall deadline. Each request gets at most half of what
    is left as its timeout, because j0.engine.server.endpoints.request gives a whole request twice
    its timeout: so no request ends after the deadline."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def timeout(self, wanted: float) -> float:
        left = self.seconds - (time.monotonic() - self.started)
        if left <= 0.05:
            raise DeadlinePassed(f"not asked: j0 status's deadline of {self.seconds:g} s passed")
        return min(wanted, left / 2)


@dataclass
class ServerFacts:
    url: str  # as reported: any userinfo masked (j0.edge.urls.redact)
    clock: Deadline = field(default_factory=lambda: Deadline(DEADLINE_S))
    healthy: bool = False
    health: str = ""
    version: str | None = None
    model: str | None = None
    root: str | None = None
    max_model_len: int | None = None
    counters_before: dict[str, float] | None = None
    counters_after: dict[str, float] | None = None
    probe: str = ""  # what the probe did, or why it did not
    problems: list[str] = field(default_factory=list)
    target: str = field(default="", repr=False)  # what is asked: the URL as given

    @property
    def answered(self) -> bool:
        """Whether a server answered /health at all (any status)."""
        return bool(self.health) and not self.health.startswith("no server answers")

    def delta(self, name: str) -> float | None:
        if self.counters_before is None or self.counters_after is None:
            return None
        return self.counters_after.get(name, 0.0) - self.counters_before.get(name, 0.0)


def parse_counters(text: str) -> dict[str, float]:
    """The spec-decode counters' sums over engines and models; {} where there are none."""
    from j0.engine.figures import prometheus_counters

    require("prometheus_client", "j0 status", extra="status")
    snapshot = prometheus_counters.parse(text)
    if snapshot is None:
        return {}
    counts = snapshot.counts
    return {
        "drafts": float(counts.drafts),
        "draft_tokens": float(counts.draft_tokens),
        "accepted": float(counts.accepted),
    }


def _error_words(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return urls.redact_text(str(reason or exc))


def ask(
    url: str, api_key: str | None, probe: bool = True, deadline_s: float = DEADLINE_S
) -> ServerFacts:
    """Everything the server says, in order: /health (nothing more where no server answers),
    /version, /v1/models, /metrics, then (unless `probe` is False) one probe and /metrics again;
    all of it within `deadline_s` seconds (what was not asked in time says so)."""
    require("prometheus_client", "j0 status", extra="status")
    facts = ServerFacts(urls.redact(url).rstrip("/"), Deadline(deadline_s), target=url.rstrip("/"))
    if not _ask_health(facts):
        return facts
    _ask_version(facts)
    _ask_models(facts, api_key)
    facts.counters_before = _counters(facts)
    if not probe:
        facts.probe = "not sent (--no-probe)"
        return facts
    if not facts.healthy or facts.model is None or facts.counters_before is None:
        facts.probe = "not sent (the server is not healthy, serves no model, or has no /metrics)"
        return facts
    if _send_probe(facts, api_key):
        facts.counters_after = _counters(facts)
    return facts


def _ask_health(facts: ServerFacts) -> bool:
    """/health into `facts`; False where no server answers at all."""
    try:
        status, _ = request(facts.target + "/health", timeout=facts.clock.timeout(TIMEOUT_S))
    except NO_ANSWER as exc:
        facts.health = f"no server answers at {facts.url} ({_error_words(exc)})"
        return False
    facts.healthy = status == 200
    facts.health = f"/health {status}" + ("" if facts.healthy else " (loading, or unhealthy)")
    return True


def _ask_version(facts: ServerFacts) -> None:
    try:
        status, body = request(facts.target + "/version", timeout=facts.clock.timeout(TIMEOUT_S))
        if status == 200:
            version = json_object(body).get("version")
            facts.version = version if isinstance(version, str) and version else None
    except NO_ANSWER:
        pass


def _ask_models(facts: ServerFacts, api_key: str | None) -> None:
    """The first model of /v1/models (id, root, max_model_len), or a problem saying why not."""
    try:
        status, body = request(
            facts.target + "/v1/models", api_key, timeout=facts.clock.timeout(TIMEOUT_S)
        )
        if status == 401:
            facts.problems.append("/v1/models: 401, the server wants an API key (--api-key-file)")
        elif status == 200:
            _first_model(facts, json_object(body).get("data"))
        else:
            facts.problems.append(f"/v1/models answered {status}")
    except NO_ANSWER as exc:
        facts.problems.append(f"/v1/models: {_error_words(exc)}")


def json_object(body: bytes) -> dict[str, Any]:
    """A JSON object answered by the server, or {} where the body is none (not JSON, not UTF-8,
    nested too deep, another type): the callers then say what is missing."""
    try:
        value = parse_json(body, "the server's answer")
    except J0Error:
        return {}
    return value if isinstance(value, dict) else {}


def _first_model(facts: ServerFacts, models: Any) -> None:
    """id, root and max_model_len of the first entry of /v1/models' `data`, where they have the
    types vLLM gives them (strings, an integer); a problem where `data` is no list of objects."""
    if not isinstance(models, list) or (models and not isinstance(models[0], dict)):
        facts.problems.append(f"/v1/models: data is {json.dumps(models)[:80]}, expected a list")
        return
    if not models:
        return
    first = models[0]
    model, root = first.get("id"), first.get("root")
    if not isinstance(model, str) or not model:
        facts.problems.append(f"/v1/models: the first id is {json.dumps(model)[:80]}")
        return
    facts.model, facts.root = model, root if isinstance(root, str) else None
    length = first.get("max_model_len")
    whole = isinstance(length, int) and not isinstance(length, bool)
    facts.max_model_len = length if whole else None


def _send_probe(facts: ServerFacts, api_key: str | None) -> bool:
    """One short greedy completion; `facts.probe` says what it did. True where it was answered."""
    body = {
        "model": facts.model,
        "prompt": PROBE_PROMPT,
        "max_tokens": PROBE_MAX_TOKENS,
        "temperature": 0,
    }
    try:
        timeout = facts.clock.timeout(PROBE_TIMEOUT_S)
        status, reply = request(facts.target + "/v1/completions", api_key, body, timeout)
    except NO_ANSWER as exc:
        facts.probe = f"failed: {_error_words(exc)}"
        return False
    if status != 200:
        facts.probe = f"answered {status}: {reply[:200].decode('utf-8', 'replace')}"
        return False
    usage = json_object(reply).get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    shown = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else "?"
    facts.probe = f"{shown} tokens generated"
    return True


def _counters(facts: ServerFacts) -> dict[str, float] | None:
    try:
        status, body = request(
            facts.target + "/metrics",
            limit=MAX_METRICS_BYTES,
            timeout=facts.clock.timeout(TIMEOUT_S),
        )
    except NO_ANSWER as exc:
        facts.problems.append(f"/metrics: {_error_words(exc)}")
        return None
    if status != 200:
        facts.problems.append(f"/metrics answered {status}")
        return None
    try:
        return parse_counters(body.decode("utf-8", "replace"))
    except ValueError as exc:
        facts.problems.append(f"/metrics is not Prometheus text: {exc}")
        return None
