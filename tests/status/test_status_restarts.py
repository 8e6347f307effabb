"""A log that holds several start-ups (`docker compose restart server` after another overlay file
was mounted, or a log file appended to by each run): `j0 status` judges the last start-up, the
server that answers now, and says that the log holds others.

Before: only the lines up to the first "server is up" line were read, so a log of a base-file run
followed by a restart with the article's file was judged by the base file's lines (and the
reverse: the article's start-up vouched for a server since restarted with the base file).

Real processes: `j0 status --log` in this process against our vLLM stand-in on 127.0.0.1
(tests/servers/vllm/server.py), the logs written as compose shows vLLM's (status_logs.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.engine.server import server_log
from j0.status import StatusReport, log_checks
from servers.vllm.server import VllmStandIn
from status.status_logs import ARTICLE_SHA, BASE_SHA, article_log, status_json

BASE = article_log(sha=BASE_SHA, kind="base (the unpatched file)", noise=0, pool="(1, 1)")
ARTICLE = article_log()
# What a run leaves after the server is up: requests, and the server stopping.
SERVED = "\n".join(
    [
        'server-1  | INFO:     172.18.0.1:40000 - "POST /v1/completions HTTP/1.1" 200 OK',
        "server-1  | INFO:     Shutting down",
        "server-1  | INFO:     Finished server process [60]",
        "",
    ]
)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def judged(tmp_path: Path, *startups: str) -> tuple[int, dict]:
    log = tmp_path / "server.log"
    log.write_text(SERVED.join(startups))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    return code, json.loads(printed)


def test_the_last_start_up_is_judged_after_a_restart_with_the_articles_file(
    tmp_path: Path, host: Host
) -> None:
    code, value = judged(tmp_path, BASE, ARTICLE)
    assert (value["identity"], value["speculator_sha256"]) == ("article", ARTICLE_SHA), value
    assert value["j0"] == "on" and value["pool_shape"] == [4, 40960]
    assert code == 0 and value["article_setup"] is True, value["reasons"]
    assert value["log_startups"] == 2
    verdict = StatusReport.from_json(value).verdict()
    assert verdict == "==> the article's setup, J0 on (the last of 2 start-ups in the log)"


def test_a_restart_with_the_base_file_is_not_vouched_for_by_the_first(
    tmp_path: Path, host: Host
) -> None:
    code, value = judged(tmp_path, ARTICLE, BASE)
    assert (value["identity"], value["speculator_sha256"]) == ("base", BASE_SHA), value
    assert code == 1 and value["article_setup"] is False
    assert value["log_startups"] == 2


def test_one_start_up_says_nothing_of_others(tmp_path: Path, host: Host) -> None:
    code, value = judged(tmp_path, ARTICLE)
    assert code == 0 and value["log_startups"] == 1


def test_the_start_ups_are_counted_and_the_last_one_read() -> None:
    text = SERVED.join([BASE, ARTICLE, BASE.replace("pool=(1, 1)", "pool=(2, 2)")])
    facts = server_log.parse(text, "three")
    assert facts.startups == 3
    assert (facts.identity, facts.pool_shape) == ("base", [2, 2])
    # The judged start-up's first line is named (1-based, in the whole log).
    first = text.splitlines().index(BASE.splitlines()[0], 20) + 1
    assert facts.startup_line == first
    detail = log_checks.started(facts).check.detail
    said = "the log holds 3 start-ups (a restarted server, an appended log): the last, from line"
    assert f"{said} {first}" in detail


def test_a_start_up_that_did_not_come_up_is_not_judged() -> None:
    """A restart that never came up (or lines a request wrote that look like one): the last
    start-up that came up is judged, and the one after it is named."""
    text = ARTICLE + SERVED + "\n".join(BASE.splitlines()[:6]) + "\n"
    facts = server_log.parse(text, "cut")
    assert facts.startups == 1 and facts.identity == "article"
    assert facts.not_up is not None and "j0 serve: target" in facts.not_up
