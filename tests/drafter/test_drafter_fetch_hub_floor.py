"""`j0 drafter fetch` on huggingface_hub 1.31.0, the oldest release vLLM 0.33.0 allows, which is
what compose's drafter service may find inside a vLLM image. That line talks HTTP through httpx,
where 2.x uses httpx2: nothing in j0 may need a 2.x-only module.

The 1.31 packages (requirements/hub-floor.txt) are installed by scripts/test into
$J0_VENV/hub-floor and put on PYTHONPATH here ahead of the test environment's 2.x;
tests/drafter/without_httpx2/sitecustomize.py goes first and makes `import httpx2` fail, as it
does in an image without huggingface_hub 2.x. The Hub is our Hub-like server on 127.0.0.1
(tests/servers/hub/server.py), which the real huggingface_hub client talks to as to the Hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fetch_env import NEEDED, ROOT, Env, default_dir, make_env, pinned_commit, pinned_sha, serving

from servers.hub.server import FakeRepo, HubServer, article_repo


def hub_floor() -> Path:
    # The test environment's own folder (scripts/test: $J0_VENV, default .venv-test), the one
    # this Python runs in.
    folder = Path(sys.prefix) / "hub-floor"
    if not (folder / "huggingface_hub").is_dir():
        pytest.fail(f"{folder}: no huggingface_hub 1.31 there; scripts/test installs it")
    return folder


@pytest.fixture(scope="module")
def repo() -> FakeRepo:
    return article_repo(weight_mb=2)


@pytest.fixture
def hub(repo: FakeRepo) -> Iterator[HubServer]:
    with serving(repo) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: HubServer) -> Env:
    made = make_env(tmp_path, hub.url)
    made.vars["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).parent / "without_httpx2"), str(hub_floor()), str(ROOT / "scripts")]
    )
    return made


def test_the_floor_is_what_the_subprocess_imports(env: Env) -> None:
    code = (
        "import huggingface_hub, httpx; print(huggingface_hub.__version__, httpx.__version__)\n"
        "try:\n    import httpx2\nexcept ModuleNotFoundError:\n    print('no httpx2')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env.vars, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1.31.0 0.28.1", "no httpx2"]


def test_fetch_on_huggingface_hub_1_31(env: Env, hub: HubServer, repo: FakeRepo) -> None:
    result = env.run()
    assert result.returncode == 0, result.stderr
    sha = pinned_sha(repo)
    assert f"3147a351 -> {sha}" in result.stdout
    assert pinned_commit(env) == sha
    folder = default_dir(env)
    assert {p.name for p in folder.iterdir()} >= NEEDED
    files = repo.commits[sha].files
    expected = json.loads(files["config.json"])
    expected["dflash_config"]["causal"] = True
    assert json.loads((folder / "config.json").read_text()) == expected
    again = env.run()
    assert again.returncode == 0, again.stderr


def test_a_closed_port_is_one_message_on_1_31(env: Env) -> None:
    """No server: the transport error of httpx (not httpx2) becomes j0's one-line message."""
    from servers.base import free_port

    result = env.run(HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert "httpx2" not in result.stderr
    assert result.stderr.startswith("j0: error: "), result.stderr
