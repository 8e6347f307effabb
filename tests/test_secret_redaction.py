"""No secret reaches what a command prints or writes, whoever prints it: j0's own lines, and what
the libraries it calls log or warn (huggingface_hub retries a failing file listing with six
warning lines that named HF_ENDPOINT's password in clear; httpx, urllib3 and docker log through
the same logging). A secret is put in every place one can be: the userinfo of HF_ENDPOINT and of
a server URL, a token file (HF_TOKEN_PATH), HF_TOKEN, an API key file, and the Authorization
headers they make (Basic of the userinfo, Bearer of the token); HF_DEBUG=1 makes huggingface_hub
log every request. Every byte of stdout, stderr and every file the commands wrote is searched.

Real processes and servers of ours on 127.0.0.1: our Hub stand-in (tests/servers/hub/), whose
file listing fails with 503 twice so that huggingface_hub retries and warns, and our vLLM
stand-in (tests/servers/vllm/) behind an API key, for `j0 status`.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from servers.hub.server import (
    FakeCommit,
    FakeRepo,
    HubServer,
    article_repo,
    fake_commit_id,
    safetensors_bytes,
)
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "pw-SENTINEL-endpoint-4f2a"
TOKEN_IN_FILE = "hf_SENTINEL_tokenfile_9d3c71"
TOKEN_IN_ENV = "hf_SENTINEL_environment_51be"
API_KEY = "sk-SENTINEL-apikey-0c9e"
URL_PASSWORD = "pw-SENTINEL-serverurl-77aa"
SECRETS = {
    "HF_ENDPOINT's password": PASSWORD,
    "the token file's token": TOKEN_IN_FILE,
    "HF_TOKEN": TOKEN_IN_ENV,
    "the API key": API_KEY,
    "the server URL's password": URL_PASSWORD,
    "the Basic header of HF_ENDPOINT": base64.b64encode(f"alice:{PASSWORD}".encode()).decode(),
    "the Basic header of the server URL": base64.b64encode(f"bob:{URL_PASSWORD}".encode()).decode(),
}


def target_repo() -> FakeRepo:
    """The target as doctor asks the Hub about it: a config and one small shard."""
    files = {
        "config.json": b'{"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 2}\n',
        "model-00001-of-00001.safetensors": safetensors_bytes("w", 1 << 12, seed=3),
    }
    commit = FakeCommit(fake_commit_id("", "target"), "target", "2026-10-01T00:00:00Z", None, files)
    return FakeRepo("Qwen/Qwen3.8-27B", {commit.id: commit}, branches={"main": commit.id})


@pytest.fixture
def hub() -> Iterator[HubServer]:
    server = HubServer([article_repo(), target_repo()]).start()
    yield server
    server.stop()


def with_userinfo(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@")


def run_j0(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "j0", *args],
        capture_output=True,
        env=env,
        cwd=tmp / "work",
        timeout=300,
    )


def leaks(data: bytes) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret.encode() in data]


def test_no_secret_in_anything_printed_or_written(tmp_path: Path, hub: HubServer) -> None:
    (tmp_path / "work").mkdir()
    token_file = tmp_path / "secrets" / "hf-token"
    token_file.parent.mkdir()
    token_file.write_text(TOKEN_IN_FILE + "\n")
    key_file = tmp_path / "secrets" / "api-key"
    key_file.write_text(API_KEY + "\n")
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGING", "J0_")) and k != "PATH"
    }
    base.update(
        PATH=str(tmp_path / "empty-bin"),  # no docker, no nvidia-smi: doctor says so
        PYTHONPATH=str(ROOT / "scripts"),
        HOME=str(tmp_path / "home"),
        HF_HOME=str(tmp_path / "hf-home"),
        HF_ENDPOINT=with_userinfo(hub.url, "alice", PASSWORD),
        HF_DEBUG="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        J0_HOME=str(ROOT),
        DRAFTER_DIR=str(tmp_path / "work" / "drafter"),
    )
    (tmp_path / "empty-bin").mkdir()
    ran = []
    hub.fail_api["tree"] = [503, 503]  # huggingface_hub retries, warning with the URL
    ran.append(
        run_j0(
            tmp_path,
            {**base, "HF_TOKEN_PATH": str(token_file)},
            "drafter", "fetch", "--out", str(tmp_path / "work" / "drafter"),
            "--json", str(tmp_path / "work" / "fetch.json"),
        )
    )  # fmt: skip
    assert ran[-1].returncode == 0, ran[-1].stderr.decode()
    assert b"Retrying in" in ran[-1].stderr  # huggingface_hub's warnings were there
    hub.fail_api["tree"] = [503, 503]
    ran.append(
        run_j0(
            tmp_path,
            {**base, "HF_TOKEN": TOKEN_IN_ENV},
            "doctor", "--json", str(tmp_path / "work" / "doctor.json"),
        )
    )  # fmt: skip
    assert b"Retrying in" in ran[-1].stderr
    log = tmp_path / "work" / "server.log"
    log.write_text(article_log())
    with VllmStandIn(api_key=API_KEY) as vllm:
        ran.append(
            run_j0(
                tmp_path,
                base,
                "status", "--url", with_userinfo(vllm.url, "bob", URL_PASSWORD),
                "--api-key-file", str(key_file), "--log", str(log),
                "--json", str(tmp_path / "work" / "status.json"),
            )
        )  # fmt: skip
    found = {}
    for number, result in enumerate(ran):
        found[f"command {number}: stdout"] = leaks(result.stdout)
        found[f"command {number}: stderr"] = leaks(result.stderr)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent.name != "secrets"]
    assert len(written) > 10  # the drafter's files, the Hub's metadata, the JSON files
    for path in written:
        found[str(path.relative_to(tmp_path))] = leaks(path.read_bytes())
    assert {where: names for where, names in found.items() if names} == {}
