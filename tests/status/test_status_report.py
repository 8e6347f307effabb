"""The StatusReport type against what `j0 status --json` really prints: the stand-in server
(tests/servers/vllm/server.py) with logs as our entrypoint and the patch write them, the real
engine's recorded logs, no log and no server. Read back, each prints the same bytes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.errors import INPUT_LACKS, J0Error
from j0.status.status_report import StatusReport
from servers.base import free_port
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log, status_json

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def printed_reports(tmp_path: Path) -> list[str]:
    """What `j0 status --json` printed for the article's setup (J0 on and off), a setup that is
    not the article's, the real engine's log, --no-probe, no log, and no server at all."""
    on, off, other = tmp_path / "on.log", tmp_path / "off.log", tmp_path / "other.log"
    on.write_text(article_log())
    off.write_text(article_log(noise=0, pool="(1, 1)"))
    other.write_text(article_log(kind="base", pool="(8, 40960)"))
    printed = []
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        for args in (
            ["--log", str(on)],
            ["--log", str(off)],
            ["--log", str(other)],
            ["--log", str(DATA / "server-j0-on.log")],
            ["--log", str(on), "--no-probe"],
            [],
        ):
            printed.append(status_json(vllm.url, *args)[1])
    printed.append(status_json(f"http://127.0.0.1:{free_port()}")[1])
    return printed


def test_a_real_status_reads_back_to_the_same_object_and_bytes(host: Host, tmp_path: Path) -> None:
    for text in printed_reports(tmp_path):
        value = json.loads(text)
        report = StatusReport.from_json(value)
        assert report.to_json() == value
        assert list(report.to_json()) == list(value)  # the same keys in the same order
        assert json.dumps(report.to_json(), indent=2) + "\n" == text


def test_the_fields_are_the_printed_keys_in_order(host: Host, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, text = status_json(vllm.url, "--log", str(log))
    value = json.loads(text)
    assert code == 0 and len(value) == 26
    assert [f.name for f in dataclasses.fields(StatusReport)] == list(value)
    report = StatusReport.from_json(value)
    assert (report.j0, report.identity, report.article_setup) == ("on", "article", True)
    assert report.verdict() == "==> the article's setup, J0 on"


def test_unknown_keys_are_ignored_and_missing_keys_read_as_defaults() -> None:
    report = StatusReport.from_json({"j0": "off", "identity": "article", "later_key": [1, 2]})
    assert (report.j0, report.identity, report.reasons, report.healthy) == (
        "off",
        "article",
        [],
        False,
    )
    assert "later_key" not in report.to_json()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"j0": {"on": True}}, '\'j0\' is {"on": true}, expected "on", "off" or null'),
        ({"j0": "maybe"}, '\'j0\' is "maybe", expected "on", "off" or null'),
        ({"reasons": "none"}, "'reasons' is \"none\", expected a list of strings"),
        ({"reasons": ["a", 1]}, "'reasons' is [\"a\", 1], expected a list of strings"),
        ({"pool_shape": [2, True]}, "'pool_shape' is [2, true], expected a list of whole numbers"),
        ({"max_model_len": "4096"}, "'max_model_len' is \"4096\", expected a whole number or null"),
        ({"healthy": 1}, "'healthy' is 1, expected true or false"),
        ({"spec_decode_accepted_delta": False}, "is false, expected a number or null"),
        ([1, 2], "[1, 2], expected an object"),
    ],
)
def test_a_value_of_the_wrong_type_is_named(value: object, words: str) -> None:
    with pytest.raises(J0Error) as raised:
        StatusReport.from_json(value, "status.json")
    assert str(raised.value).startswith("status.json: ") and words in str(raised.value)
    assert raised.value.exit_code == INPUT_LACKS
