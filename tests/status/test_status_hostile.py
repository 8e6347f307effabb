"""`j0 status` against a hostile server: our vLLM stand-in (tests/servers/vllm/server.py on
127.0.0.1) with one route answered as a broken or malicious server would (tests/servers/
vllm/hostile_routes.py): wrong JSON types, truncated or deeply nested JSON, bytes that are not
UTF-8, bodies far over the clients' caps, redirects to another origin, connection resets.

Each one is a clear "NOT the article's setup" (exit 1) naming the route, with the real
engine's log given so that the server's answers are all that is wrong; never an internal error
(exit 70) or a traceback. A body that never ends is left to tests/engine/test_endpoints.py (the
whole-request deadline there is seconds; status's own is 2 x its 10 s timeout per request).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.cli import main
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log

ROUTES = {
    "/v1/models": ["bad-types", "truncated", "nested", "not-utf8", "huge", "redirect", "reset"],
    "/metrics": ["bad-types", "truncated", "not-utf8", "huge", "redirect", "reset"],
    "/v1/completions": ["bad-types", "nested", "huge", "redirect", "reset"],
    "/version": ["bad-types", "nested", "huge", "reset"],
}
# What the reasons name for each route (the probe is the POST to /v1/completions).
NAMED = {"/v1/models": "model", "/metrics": "metrics", "/v1/completions": "probe"}
CASES = [(route, behaviour) for route, kinds in ROUTES.items() for behaviour in kinds]


@pytest.mark.parametrize("route, behaviour", CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_a_hostile_answer_is_a_clear_verdict(
    route: str, behaviour: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, hostile={route: behaviour}) as vllm:
        code = main(["status", "--url", vllm.url, "--log", str(log), "--json"])
    out = capsys.readouterr()
    value = json.loads(out.out)
    assert code in (0, 1), out.err
    assert "internal error" not in out.err and "Traceback" not in out.err
    if route == "/version":
        # /version is only shown; the verdict stands on the rest, which is the article's.
        assert code == 0 and value.get("version") in (None, ""), value
    else:
        assert code == 1 and value["article_setup"] is False, value
        assert any(NAMED[route] in reason for reason in value["reasons"]), value["reasons"]


def test_the_same_server_without_hostility_is_the_articles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control for the cases above."""
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        assert main(["status", "--url", vllm.url, "--log", str(log), "--json"]) == 0
