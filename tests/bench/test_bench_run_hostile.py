"""`j0 bench run` against a hostile vLLM stand-in of ours on 127.0.0.1 (tests/servers/
vllm/hostile_server.py: the stand-in of vllm/server.py with answers that misbehave): a stream that
never ends or sends only comments, fields of the wrong type, bodies over their caps, redirects to
another origin. The real client (aiohttp) reads real HTTP; each bad request is kept as failed, with
its reason, and the run goes on to the next; nothing is a traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from servers.vllm.hostile_server import HostileVllm
from servers.vllm.server import VllmStandIn


def bench(url: str, out: Path, *extra: str) -> int:
    return main(["bench", "run", "--url", url, "--out", str(out), "--no-progress", *extra])


def run_with_one_bad(
    tmp_path: Path, mode: str, *extra: str, **server: Any
) -> tuple[int, dict[str, Any], list[str]]:
    """Three requests, the second one answered as `mode` says: the exit code, the result file
    and the errors of its entries."""
    out = tmp_path / f"{mode}.json"
    with HostileVllm(mode, bad={1}, num_spec_tokens=7, seed=3, **server) as hostile:
        code = bench(hostile.url, out, "--requests", "3", "--max-tokens", "40", *extra)
        assert hostile.hostile_served == 1
    doc = json.loads(out.read_text())
    return code, doc, [e["error"] for e in doc["requests"]]


WRONG_TYPES = {
    "string-count": 'usage.completion_tokens is "7"; expected a whole number',
    "infinity": "Infinity is not JSON",
    "nan": "NaN is not JSON",
    "choices-string": 'choices is "abc"; expected a list of objects',
    "choices-missing": "an answer without `choices`",
    "usage-string": 'usage is "lots"; expected an object',
    "non-utf8": "is not UTF-8",
    "spec-string": 'per_step_accepted[] is "a"; expected a whole number',
    "huge-width": "per_step_drafted[] is 1000000000000; expected a finite number up to 4096",
}


@pytest.mark.parametrize("mode", sorted(WRONG_TYPES))
def test_a_field_of_the_wrong_type_fails_its_request_only(tmp_path: Path, mode: str) -> None:
    """Before: a TypeError/ValueError/OverflowError/MemoryError out of `bench run`, the file
    lost (or an answer taken as it came)."""
    code, doc, errors = run_with_one_bad(tmp_path, mode)
    assert code == 1  # requests failed
    assert [e["ok"] for e in doc["requests"]] == [True, False, True]
    assert errors[0] is None and errors[2] is None
    assert WRONG_TYPES[mode] in errors[1], errors[1]
    assert doc["complete"] is True and doc["summary"]["requests_failed"] == 1
    assert doc["acceptance_length"] is not None  # the good requests are pooled


def test_an_error_body_that_is_not_utf8(tmp_path: Path) -> None:
    """Before: UnicodeDecodeError out of aiohttp's response.text(), a traceback."""
    code, doc, errors = run_with_one_bad(tmp_path, "error-non-utf8")
    assert code == 1
    assert errors[1].startswith("HTTP 500: ") and "broken" in errors[1]
    assert [e["ok"] for e in doc["requests"]] == [True, False, True]


def test_an_endless_error_body_is_cut(tmp_path: Path) -> None:
    """An HTTP 500 whose body never ends: read up to MAX_ERROR_BYTES, shown cut, the run goes on
    (before: read whole, for ever)."""
    started = time.monotonic()
    code, doc, errors = run_with_one_bad(tmp_path, "huge-error", "--request-deadline", "30")
    assert code == 1
    assert errors[1].startswith("HTTP 500: eeee") and len(errors[1]) < 600
    assert [e["ok"] for e in doc["requests"]] == [True, False, True]
    assert time.monotonic() - started < 30  # not the deadline: the cap ended it


def test_a_line_over_the_cap_fails_its_request(tmp_path: Path) -> None:
    code, doc, errors = run_with_one_bad(tmp_path, "huge-line", "--request-deadline", "60")
    assert code == 1
    assert "a line of more than 16777216 bytes" in errors[1]
    assert [e["ok"] for e in doc["requests"]] == [True, False, True]


@pytest.mark.parametrize("mode", ["endless", "comments"])
def test_a_stream_that_never_ends_meets_the_request_deadline(tmp_path: Path, mode: str) -> None:
    """Keep-alive comments (or chunks without a token) every 50 ms keep the idle --timeout from
    ever firing; --request-deadline 1 ends the request, recorded as failed, and the run goes on
    (before: held for ever)."""
    started = time.monotonic()
    code, doc, errors = run_with_one_bad(
        tmp_path, mode, "--timeout", "5", "--request-deadline", "1"
    )
    assert code == 1
    assert (
        "no complete answer within the request deadline of 1 s (--request-deadline" in (errors[1])
    )
    assert [e["ok"] for e in doc["requests"]] == [True, False, True]
    assert time.monotonic() - started < 30


def test_the_default_deadline_comes_from_timeout_and_max_tokens() -> None:
    from j0.bench.run.options import DEADLINE_PER_TOKEN_S, RunOptions

    opts = RunOptions(url="http://x", out=Path("r.json"), timeout_s=10.0)
    assert opts.deadline_for(5) == 10.0 + 5 * DEADLINE_PER_TOKEN_S
    assert RunOptions(url="x", out=Path("r"), request_deadline_s=2.5).deadline_for(9) == 2.5


def test_a_redirect_to_another_server_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every route of --url answers 307 to another server (another origin: another port).
    Before: aiohttp followed, and bench measured the other server while the manifest named
    --url. Now: refused, exit 1, the other server never asked."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3) as other:
        with HostileVllm("redirect", redirect_to=other.url) as hostile:
            code = bench(hostile.url, out, "--requests", "2", "--max-tokens", "20")
        assert other.records == []
    assert code == 1
    err = capsys.readouterr().err
    assert f"{hostile.url}/v1/models: HTTP 307 redirect to another origin refused" in err
    assert not out.exists()  # nothing was measured


def test_a_redirect_of_the_generation_route_only_is_refused(tmp_path: Path, capsys: Any) -> None:
    """/v1/models answers, the generation route redirects to another server: each request fails
    with the reason, no request reaches the other server."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3) as other:
        with HostileVllm("post-redirect", redirect_to=other.url) as hostile:
            code = bench(hostile.url, out, "--requests", "2", "--max-tokens", "20")
        assert other.records == []
    assert code == 1
    doc = json.loads(out.read_text())
    assert all("redirect to another origin refused" in e["error"] for e in doc["requests"])


def test_a_redirect_to_the_same_server_is_followed(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with HostileVllm("same-redirect", num_spec_tokens=7, seed=3) as hostile:
        assert bench(hostile.url, out, "--requests", "2", "--max-tokens", "20") == 0
        assert len(hostile.records) == 2
    assert json.loads(out.read_text())["summary"]["requests_ok"] == 2


def test_an_event_with_an_empty_data_line_is_no_event(tmp_path: Path) -> None:
    """`data: ` with nothing after it: the SSE standard dispatches no event for it, so the
    request it is in goes on (before: "an event of the stream" was not JSON, and the whole
    request failed)."""
    code, doc, errors = run_with_one_bad(tmp_path, "empty-data")
    assert errors == [None, None, None], errors
    assert [e["ok"] for e in doc["requests"]] == [True, True, True]
    assert code == 0


def run_closing(
    tmp_path: Path, mode: str, bad: set[int]
) -> tuple[int, dict[str, Any], HostileVllm]:
    """Three requests, those the server gets as its generation requests numbered in `bad` (from
    0, a resend counted) answered as `mode` says (a connection closed): the exit code, the
    result file and the server (its requests counted)."""
    out = tmp_path / f"{mode}.json"
    with HostileVllm(mode, bad=bad, num_spec_tokens=7, seed=3) as hostile:
        code = bench(hostile.url, out, "--requests", "3", "--max-tokens", "40")
    return code, json.loads(out.read_text()), hostile


def resent_warnings(entry: dict[str, Any]) -> list[str]:
    from j0.bench.result.results import RESENT

    return [w for w in entry["warnings"] if isinstance(w, str) and w.startswith(RESENT)]


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("close-unanswered", "ServerDisconnectedError: Server disconnected"),
        ("reset-unanswered", "Connection reset by peer"),
    ],
)
def test_a_connection_closed_before_any_answer_is_sent_again_once(
    tmp_path: Path, mode: str, error: str
) -> None:
    """The second request's connection (a kept-alive one, as in the keep-alive race) is read and
    closed without a byte of answer by the server, then the request sent again is answered as
    vLLM's endpoint streams it: the request is ok, its entry says it was sent twice and why, and
    its start is the second sending's (after the server closed the first). The real aiohttp
    client against our stand-in on 127.0.0.1. Before: the request failed with
    ServerDisconnectedError (on a GPU run 1, 8 and 19 of 296 requests so)."""
    code, doc, hostile = run_closing(tmp_path, mode, {1})
    entries = doc["requests"]
    assert [e["ok"] for e in entries] == [True, True, True], [e["error"] for e in entries]
    assert code == 0
    assert hostile.generation_requests == 4 and hostile.hostile_served == 1
    assert len(hostile.records) == 3  # the stand-in ran each prompt once
    (warning,) = resent_warnings(entries[1])
    assert "the first connection closed before any answer" in warning and error in warning
    assert resent_warnings(entries[0]) == resent_warnings(entries[2]) == []
    (closed_at,) = hostile.closed_at
    assert entries[1]["started_at"] > closed_at  # the resend's own start
    assert entries[1]["output_tokens"] == 40 and entries[1]["ttft_ms"] is not None


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("status-then-close", "ServerDisconnectedError"),
        ("head-then-close", "ClientPayloadError: Response payload is not completed"),
    ],
)
def test_a_connection_closed_after_the_status_is_not_sent_again(
    tmp_path: Path, mode: str, error: str
) -> None:
    """The server sends the status line (or the whole head of a stream), then closes: it may have
    run the request, so it is not sent again; it fails with the error, as before, and the run
    goes on. Real aiohttp against our stand-in on 127.0.0.1."""
    code, doc, hostile = run_closing(tmp_path, mode, {1})
    entries = doc["requests"]
    assert code == 1
    assert [e["ok"] for e in entries] == [True, False, True]
    assert entries[1]["error"].startswith(error), entries[1]["error"]
    assert hostile.generation_requests == 3
    assert all(resent_warnings(e) == [] for e in entries)
    assert doc["complete"] is True and doc["summary"]["requests_failed"] == 1


def test_a_request_closed_unanswered_twice_fails_after_one_resend(tmp_path: Path) -> None:
    """The server closes the second request's connection unanswered, and the resend's too: the
    request fails with the error, sent twice and no more (the server got 4 generation requests
    for 3 prompts), its entry says so, and the run goes on. Real aiohttp against our stand-in on
    127.0.0.1."""
    code, doc, hostile = run_closing(tmp_path, "close-unanswered", {1, 2})
    entries = doc["requests"]
    assert code == 1
    assert [e["ok"] for e in entries] == [True, False, True]
    assert entries[1]["error"] == "ServerDisconnectedError: Server disconnected"
    assert entries[1]["output_tokens"] == 0
    assert hostile.generation_requests == 4 and hostile.hostile_served == 2
    assert len(resent_warnings(entries[1])) == 1
    assert doc["complete"] is True and doc["summary"]["requests_failed"] == 1
