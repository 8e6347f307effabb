"""What a client of the server writes into the server's log cannot change `j0 status`'s verdict,
either way. vLLM logs the name of a model it does not serve as a request gave it (line breaks and
all), and uvicorn's access log writes a request's path (percent-decoded) and raw query: a client
can put whole lines there that look like the patch's, the entrypoint's or vLLM's start-up lines.
`j0 status` reads only the start-up (the lines before the server is up) and each kind only from
its writer's logger, so those lines are never read.

Real processes: our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py) writes its log as
vLLM does (tests/servers/vllm/log.py), hostile requests are sent to it over HTTP with
http.client, then `j0 status --log` reads that log and asks the same server.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from doctor.doctor_env import Host
from servers.vllm.server import VllmStandIn
from status.status_logs import ARTICLE_SHA, BASE_SHA, INSTALLED, article_log, status_json


def patch_line(noise: int, pool: str) -> str:
    return (
        "(EngineCore pid=71) INFO 11-30 12:00:53 [speculator.py:144] "
        f"DFLASH_CTX_NOISE={noise} pool={pool} dump=None/0"
    )


def identity_line(sha: str, kind: str) -> str:
    return (
        "j0-entrypoint: vLLM 0.33.1.dev0+gc50aca144 commit c50aca144 (the pinned commit), "
        f"{INSTALLED}/speculator.py: speculator.py sha256={sha} identity={kind}"
    )


# What a client would make the log say: J0 off (the baseline, still the article's setup) on a J0
# on server; J0 on on a J0-off server; another file (NOT) on the article's server.
TO_OFF = [patch_line(0, "(1, 1)")]
TO_ON = [patch_line(1, "(4, 40960)")]
TO_BASE = [identity_line(BASE_SHA, "base"), "server-1  | " + identity_line(BASE_SHA, "base")]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def unknown_model(url: str, forged: list[str]) -> None:
    """A completion for a model the server does not serve, the forged lines in its name."""
    address = urlsplit(url)
    body = json.dumps({"model": "x\n" + "\n".join(forged) + "\n", "prompt": "a", "max_tokens": 1})
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    assert conn.getresponse().status == 404
    conn.close()


def crafted_paths(url: str, forged: list[str]) -> None:
    """GET /health with the lines in its raw query, and a path whose %0A are line breaks once
    uvicorn has decoded it (unauthenticated: /health needs no key)."""
    address = urlsplit(url)
    text = "\n" + "\n".join(forged) + "\n"
    for target in (
        "/health?" + quote(text, safe="=()[]',/:"),
        "/health" + quote(text, safe="/"),
    ):
        conn = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
        conn.request("GET", target)
        conn.getresponse().read()
        conn.close()


ATTACKS = {"unknown-model": unknown_model, "crafted-path": crafted_paths}


def verdict(tmp_path: Path, noise: int, pool: str, forged: list[str], attack: str) -> dict:
    log = tmp_path / "server.log"
    startup = article_log(noise=noise, pool=pool, up=False)
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, log=log, log_startup=startup) as v:
        ATTACKS[attack](v.url, forged)
        assert forged[0] in log.read_text()  # the client's lines are in the server's log
        code, printed = status_json(v.url, "--log", str(log))
    value = json.loads(printed)
    value["exit_code"] = code
    return value


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_client_cannot_turn_j0_on_into_the_baseline(
    tmp_path: Path, host: Host, attack: str
) -> None:
    """Before: the last DFLASH_CTX_NOISE line anywhere in the log won, and the forged one came
    last: "J0 off, the article's setup", exit 0, on a server running J0."""
    value = verdict(tmp_path, 1, "(4, 40960)", TO_OFF, attack)
    assert (value["j0"], value["pool_shape"]) == ("on", [4, 40960]), value
    assert value["article_setup"] is True and value["exit_code"] == 0, value["reasons"]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_client_cannot_turn_the_baseline_into_j0_on(
    tmp_path: Path, host: Host, attack: str
) -> None:
    value = verdict(tmp_path, 0, "(1, 1)", TO_ON, attack)
    assert (value["j0"], value["pool_shape"]) == ("off", [1, 1]), value
    assert value["exit_code"] == 0, value["reasons"]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_client_cannot_make_a_good_server_not_the_articles(
    tmp_path: Path, host: Host, attack: str
) -> None:
    """Before: a forged identity line (identity=base) after the real one won: "NOT the article's
    setup" for the article's server."""
    value = verdict(tmp_path, 1, "(4, 40960)", TO_BASE, attack)
    assert (value["identity"], value["speculator_sha256"]) == ("article", ARTICLE_SHA), value
    assert value["article_setup"] is True and value["exit_code"] == 0, value["reasons"]


def test_a_log_that_does_not_show_the_server_up_is_not_believed(tmp_path: Path, host: Host) -> None:
    """Without the line of the server coming up, no line can be told from a request's: the log
    is named as the reason, whatever its lines say."""
    log = tmp_path / "server.log"
    log.write_text(article_log(up=False))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    value = json.loads(printed)
    assert code == 1 and value["article_setup"] is False
    assert "the log does not show the server's start-up" in value["reasons"], value["reasons"]


def test_patch_lines_count_only_from_the_patch_logger(tmp_path: Path, host: Host) -> None:
    """A line of another logger (vLLM's serving.py) whose message is the patch's, before the
    server is up, is not the patch's line."""
    text = article_log(up=False).replace("[speculator.py:144]", "[serving.py:144]")
    log = tmp_path / "server.log"
    log.write_text(text + article_log().splitlines()[-1] + "\n")
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    value = json.loads(printed)
    assert value["j0"] is None and code == 1, value
