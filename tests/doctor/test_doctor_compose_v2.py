"""`j0 doctor` on a host without Docker Compose v2 or buildx says how to get them on Debian and
Ubuntu: Debian 12's own docker-compose package is Compose v1 (1.29, the `docker-compose`
command) and it has no buildx package, so "install docker-compose-plugin" alone sent a Debian
user to a package Debian does not have. Where a v1 `docker-compose` is on PATH it is named as
such. Docker and docker-compose are stand-ins (tests/doctor/doctor_env.py; the v1 one answers
`docker-compose version --short` as Debian 12's 1.29.2 does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main

ADVICE = (
    "sudo apt-get install docker-compose docker-buildx",  # Debian 13
    "sudo apt-get install docker-compose-v2 docker-buildx",  # Ubuntu 24.04
    "docker-buildx-plugin docker-compose-plugin",  # Docker's apt repository
    "Debian 12 (bookworm, whose docker-compose package is Compose v1)",
)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    host = Host(tmp_path, monkeypatch)
    host.gpus(H200)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WHEEL_INDEX", "http://127.0.0.1:9/{commit}/")
    return host


def checks(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    main(["doctor", "--json"])
    return {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}


def test_no_compose_plugin_and_a_v1_docker_compose(
    host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    host.docker(compose=None, buildx=None)
    v1 = host.bin / "docker-compose"
    v1.write_text("#!/bin/sh\necho 1.29.2\n")
    v1.chmod(0o755)
    found = checks(capsys)
    compose, buildx = found["compose"], found["buildx"]
    assert compose["status"] == "fail"
    assert "docker-compose 1.29.2 is Compose v1" in compose["detail"], compose
    for words in ADVICE:
        assert words in compose["fix"], compose["fix"]
        assert words in buildx["fix"], buildx["fix"]


def test_an_old_compose_plugin_gets_the_same_advice(
    host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    host.docker(compose="2.17.3")
    compose = checks(capsys)["compose"]
    assert compose["status"] == "fail" and "v1" not in compose["detail"]
    for words in ADVICE:
        assert words in compose["fix"], compose["fix"]


def test_the_readme_says_the_same() -> None:
    """The README's host requirements name the same packages (its lines wrapped anywhere)."""
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    for words in ADVICE[:3]:
        assert words in readme, words
    assert "Debian 12's own `docker-compose` package is Compose v1" in readme
