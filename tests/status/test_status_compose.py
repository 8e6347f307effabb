"""`j0 status --compose` where compose's project has no server container (never started, or
removed by `docker compose down`): `docker compose logs server` then prints nothing and exits 0,
and status said the log "is cut, or is not vLLM's". It says there is no server container and how
to start one. And where `docker compose` itself does not run (Compose v1 only, as Debian 12's own
docker-compose package gives), it says how to get Compose v2.

The first two use the stand-in `docker` of tests/doctor/bin (its `compose ps` lists the scenario's
containers); the last runs the real Docker Compose on a copy of the project, where no container
of its project exists (a Docker test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.cli import main
from servers.base import free_port

ROOT = Path(__file__).resolve().parents[2]
NO_CONTAINER = "no server container in compose's project"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def test_no_server_container_is_said_so(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "server.log"
    empty.write_text("")
    host.docker(compose_logs=str(empty), compose_ps="")
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["status", "--url", url, "--compose"]) == 1
    out = capsys.readouterr().out
    assert NO_CONTAINER in out and "docker compose up -d" in out, out
    assert "is cut" not in out, out
    compose = ["compose", "-f", str(host.home / "compose.yaml")]
    assert [*compose, "ps", "--all", "--quiet", "server"] in host.docker_calls()
    assert main(["status", "--url", url, "--compose", "--json"]) == 1
    value = json.loads(capsys.readouterr().out)
    assert "no server container (compose has not started the server)" in value["reasons"]


def test_compose_v1_only_says_how_to_get_v2(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    host.docker(compose=None)
    url = f"http://127.0.0.1:{free_port()}"
    code = main(["status", "--url", url, "--compose"])
    err = capsys.readouterr().err
    assert code != 0
    assert "`docker compose logs server` failed" in err, err
    assert "docker-compose-plugin" in err and "Compose v2" in err, err


@pytest.mark.docker
def test_the_real_compose_with_no_server_container(tmp_path: Path) -> None:
    """The real `docker compose` on a copy of compose.yaml and what it includes, in a folder of
    the test's own (so compose's project, named after the folder, has no container)."""
    from conftest import require_docker

    require_docker()
    home = tmp_path / "j0noserver"
    for name in ("compose.yaml", "compose.serve.yaml", "overlay/pins.env"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, home / name)
    for route in ROOT.glob("overlay/route-*.env"):
        shutil.copy(route, home / "overlay" / route.name)
    env = {k: v for k, v in os.environ.items() if k != "COMPOSE_PROJECT_NAME"}
    env.update(J0_HOME=str(home), PYTHONPATH=str(ROOT / "scripts"))
    run = subprocess.run(
        [sys.executable, "-m", "j0", "status", "--compose", "--no-probe",
         "--url", f"http://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=120, env=env, cwd=home,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert NO_CONTAINER in run.stdout, run.stdout + run.stderr
    assert "is cut" not in run.stdout, run.stdout
