"""`j0 drafter fetch` and `patch-config` keep what the user has: config.json.orig stays the Hub's
exact bytes, and a config.json that is neither the Hub's bytes nor what patch-config writes from
them (a hand edit) is refused, exit 2, and left as it is.

The Hub is tests/servers/hub/server.py, a small HTTP server of ours on 127.0.0.1 (the real Hub
cannot be reached from the tests); huggingface_hub is the real client, `j0` a subprocess with
HF_ENDPOINT pointing at the server (fetch_env.py). What the project writes from the Hub's bytes
is computed here as the article's one-key edit by string replacement, not with j0's code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fetch_env import Env, default_dir, make_env, pinned_sha, serving

from j0.cli import main
from servers.hub.server import FakeRepo, HubServer, article_repo


@pytest.fixture(scope="module")
def repo() -> FakeRepo:
    return article_repo(weight_mb=1)


@pytest.fixture(scope="module")
def hub_config(repo: FakeRepo) -> bytes:
    return repo.commits[pinned_sha(repo)].files["config.json"]


@pytest.fixture
def hub(repo: FakeRepo) -> Iterator[HubServer]:
    with serving(repo) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: HubServer) -> Env:
    return make_env(tmp_path, hub.url)


def fetched(env: Env) -> Path:
    result = env.run()
    assert result.returncode == 0, result.stderr
    return default_dir(env)


def hand_edit(folder: Path) -> bytes:
    """config.json as the fetch left it, with one more value changed by hand."""
    config = folder / "config.json"
    data = json.loads(config.read_bytes())
    data["num_hidden_layers"] += 1
    edited = (json.dumps(data, indent=2) + "\n").encode()
    config.write_bytes(edited)
    return edited


def test_the_fetch_writes_the_hubs_bytes_and_the_articles_edit(env: Env, hub_config: bytes) -> None:
    folder = fetched(env)
    assert (folder / "config.json.orig").read_bytes() == hub_config
    text = hub_config.decode()
    data = json.loads(text)
    assert "causal" not in data["dflash_config"]
    patched = json.loads((folder / "config.json").read_bytes())
    data["dflash_config"]["causal"] = True
    assert patched == data


def test_a_hand_edited_config_is_refused_not_overwritten(env: Env, hub_config: bytes) -> None:
    folder = fetched(env)
    edited = hand_edit(folder)
    result = env.run()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "drafter/3147a351/config.json was edited" in result.stderr
    assert "refusing to overwrite it" in result.stderr
    assert (folder / "config.json").read_bytes() == edited
    assert (folder / "config.json.orig").read_bytes() == hub_config


def test_a_hand_edit_without_the_orig_is_refused_too(env: Env, hub_config: bytes) -> None:
    """No .orig to compare with: the Hub's bytes are fetched aside to tell an edit from the
    project's own output; the folder keeps the edit and gets no .orig."""
    folder = fetched(env)
    (folder / "config.json.orig").unlink()
    edited = hand_edit(folder)
    result = env.run()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "was edited" in result.stderr
    assert (folder / "config.json").read_bytes() == edited
    assert not (folder / "config.json.orig").exists()


def test_the_same_data_in_another_layout_is_an_edit(env: Env) -> None:
    """Equal as data but not the bytes patch-config writes (re-indented): refused, kept."""
    folder = fetched(env)
    config = folder / "config.json"
    relaid = json.dumps(json.loads(config.read_bytes()), indent=4).encode()
    config.write_bytes(relaid)
    result = env.run()
    assert result.returncode == 2, result.stderr
    assert config.read_bytes() == relaid


def test_the_projects_own_output_without_its_orig_gets_the_orig_back(
    env: Env, hub_config: bytes
) -> None:
    folder = fetched(env)
    patched = (folder / "config.json").read_bytes()
    (folder / "config.json.orig").unlink()
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert (folder / "config.json.orig").read_bytes() == hub_config
    assert (folder / "config.json").read_bytes() == patched


def test_an_orig_that_is_a_folder_is_refused(env: Env) -> None:
    folder = fetched(env)
    (folder / "config.json.orig").unlink()
    (folder / "config.json.orig").mkdir()
    result = env.run()
    assert result.returncode == 2, result.stderr
    assert "config.json.orig: a directory" in result.stderr


def test_patch_config_refuses_a_hand_edit_beside_the_orig(
    tmp_path: Path, hub_config: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """The local command, no Hub: config.json.orig stands for the Hub's bytes."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "config.json.orig").write_bytes(hub_config)
    data = json.loads(hub_config)
    data["dflash_config"]["causal"] = True
    data["num_hidden_layers"] += 1
    edited = (json.dumps(data, indent=2) + "\n").encode()
    (folder / "config.json").write_bytes(edited)
    assert main(["drafter", "patch-config", str(folder)]) == 2
    assert "was edited" in capsys.readouterr().err
    assert (folder / "config.json").read_bytes() == edited
    assert (folder / "config.json.orig").read_bytes() == hub_config
