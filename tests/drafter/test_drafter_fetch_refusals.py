"""What `j0 drafter fetch` refuses, with the real huggingface_hub client against our Hub-like
server: downloaded files that differ from the Hub's listing (size, sha256, git blob id), server
errors (5xx retried, then given up; 4xx not retried), an index naming missing shards, revisions
and folders that cannot be trusted, offline folders that are incomplete, and a config.json.orig
that is not the Hub's.

No mocks: tests/servers/hub/server.py is a small HTTP server of ours on 127.0.0.1; `j0` runs as a
subprocess with HF_ENDPOINT pointing at it (fetch_env.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fetch_env import BIG, Env, default_dir, make_env, pinned_commit, pinned_sha, serving

from servers.hub.server import FakeRepo, HubServer, article_repo, git_blob_id


@pytest.fixture(scope="module")
def repo() -> FakeRepo:
    return article_repo(weight_mb=12)


@pytest.fixture(scope="module")
def article_sha(repo: FakeRepo) -> str:
    return pinned_sha(repo)


@pytest.fixture
def hub(repo: FakeRepo) -> Iterator[HubServer]:
    with serving(repo) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: HubServer) -> Env:
    return make_env(tmp_path, hub.url)


# --- the download check: files that differ from the Hub's listing are refused -------------------
# The server serves other bytes than its file list describes (hub.corrupt), as a broken mirror or
# disk would; huggingface_hub itself only checks that a file has the length the HEAD announced.

INDEX = "model.safetensors.index.json"


def _flip_middle_byte(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def _assert_refused_unpatched(env: Env, result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "downloaded files differ from the Hub's listing" in result.stderr
    assert "nothing was patched" in result.stderr
    assert not (default_dir(env) / "config.json.orig").exists()
    assert "draft layers causal" not in result.stdout


def test_a_file_of_another_size_is_refused(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    real = repo.commits[article_sha].files[BIG]
    hub.corrupt[BIG] = real + b"\0"
    result = env.run()
    _assert_refused_unpatched(env, result)
    # The size check's own words (the sha256 would differ too, but the size is checked first).
    assert f"{BIG}: {len(real) + 1} bytes, the Hub lists {len(real)}" in result.stderr


def test_an_lfs_file_with_another_sha256_is_refused(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    real = repo.commits[article_sha].files[BIG]
    served = _flip_middle_byte(real)  # same size: only the hash tells
    hub.corrupt[BIG] = served
    result = env.run()
    _assert_refused_unpatched(env, result)
    expected = hashlib.sha256(real).hexdigest()
    actual = hashlib.sha256(served).hexdigest()
    assert f"{BIG}: sha256 {actual}, the Hub lists {expected}" in result.stderr


def test_a_git_file_with_another_blob_id_is_refused(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    real = repo.commits[article_sha].files[INDEX]
    served = real.replace(b'"metadata"', b'"metadatA"')  # same size, still valid JSON
    assert len(served) == len(real) and served != real
    hub.corrupt[INDEX] = served
    result = env.run()
    _assert_refused_unpatched(env, result)
    assert f"{INDEX}: git blob {git_blob_id(served)}, the Hub lists {git_blob_id(real)}" in (
        result.stderr
    )


def test_a_server_error_is_retried(env: Env, hub: HubServer) -> None:
    """huggingface_hub retries a file's GET on 408/429 only; j0 retries 5xx answers itself."""
    hub.fail_next[BIG] = [503]
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert len(hub.requests("GET", BIG)) == 2
    assert "attempt 2 of 3" in result.stderr
    assert "all 5 draft layers causal" in result.stdout


def test_a_lasting_server_error_gives_up_after_three_attempts(env: Env, hub: HubServer) -> None:
    hub.fail_next[BIG] = [503, 502, 500]
    result = env.run()
    assert result.returncode == 1
    assert len(hub.requests("GET", BIG)) == 3
    assert "answered HTTP 500" in result.stderr
    assert "attempt 3 of 3" in result.stderr


def test_a_client_error_is_not_retried(env: Env, hub: HubServer) -> None:
    hub.fail_next[BIG] = [403]
    result = env.run()
    assert result.returncode == 1
    assert len(hub.requests("GET", BIG)) == 1
    assert "answered HTTP 403" in result.stderr


# --- revisions and folders that are refused -----------------------------------------------------


def _own_hub(repo: FakeRepo) -> HubServer:
    return HubServer([repo]).start()


def test_a_branch_named_like_a_commit_prefix_is_refused(env: Env) -> None:
    """A branch `beef1234` pointing at main: the Hub resolves the name to main's commit, which
    does not start with beef1234; j0 refuses rather than pin a commit the user did not mean."""
    repo = article_repo(weight_mb=0.01)
    assert not [c for c in repo.commits if c.startswith("beef1234")]
    repo.branches["beef1234"] = repo.branches["main"]
    server = _own_hub(repo)
    try:
        result = env.run("--revision", "beef1234", HF_ENDPOINT=server.url)
        downloads = server.requests(contains="/resolve/")
    finally:
        server.stop()
    assert result.returncode == 1, result.stderr
    assert (
        f"'beef1234' is the name of a branch or tag pointing to {repo.branches['main']}"
        in result.stderr
    )
    assert not downloads
    assert pinned_commit(env) == ""


def test_an_index_naming_missing_shards_is_refused(env: Env) -> None:
    repo = article_repo(weight_mb=0.01)
    (sha,) = [c for c in repo.commits if c.startswith("3147a351")]
    files = repo.commits[sha].files
    index = json.loads(files[INDEX])
    index["weight_map"]["layers.2.weight"] = "model-00003-of-00003.safetensors"
    files[INDEX] = (json.dumps(index, indent=2) + "\n").encode()
    server = _own_hub(repo)
    try:
        result = env.run(HF_ENDPOINT=server.url)
    finally:
        server.stop()
    assert result.returncode == 2, result.stderr
    assert "names shards the repo does not have: model-00003-of-00003.safetensors" in (
        result.stderr
    )
    assert not (default_dir(env) / "config.json.orig").exists()


def test_a_folder_holding_another_commit_is_refused(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    """Online and offline: one folder, one commit (the files and config.json's original would
    mix); the message names compose's knob as well as the flag."""
    assert env.run().returncode == 0
    other = next(c for c in repo.commits if c.startswith("5eed1234"))
    folder = str(default_dir(env))
    for extra in ({}, {"HF_HUB_OFFLINE": "1"}):
        result = env.run("--revision", other, "--dir", folder, **extra)
        assert result.returncode == 1, (extra, result.stderr)
        assert f"holds {repo.repo_id}@{article_sha}, not {other}" in result.stderr
        assert "DRAFTER_DIR" in result.stderr


def test_an_offline_folder_with_a_file_of_another_size_is_refused(
    env: Env, repo: FakeRepo, article_sha: str
) -> None:
    assert env.run().returncode == 0
    small = "model-00002-of-00002.safetensors"
    path = default_dir(env) / small
    real = repo.commits[article_sha].files[small]
    path.write_bytes(real[:-1])
    result = env.run(HF_HUB_OFFLINE="1")
    assert result.returncode == 2, result.stderr
    shown = path.relative_to(env.work)  # the default folder is relative to the working directory
    assert f"{shown}: {len(real) - 1} bytes, listed {len(real)}" in result.stderr


def test_an_offline_folder_missing_a_file_is_refused(env: Env) -> None:
    assert env.run().returncode == 0
    (default_dir(env) / "model-00002-of-00002.safetensors").unlink()
    result = env.run(HF_HUB_OFFLINE="1")
    assert result.returncode == 2, result.stderr
    assert "not a complete download" in result.stderr


def test_the_offline_error_names_the_compose_knobs(env: Env) -> None:
    result = env.run(HF_HUB_OFFLINE="1")
    assert result.returncode == 2
    assert "DRAFTER_REVISION=<full commit> DRAFTER_DIR=DIR" in result.stderr


# --- a config.json.orig that is not the Hub's ------------------------------------------------


def test_a_config_orig_of_other_bytes_is_not_taken_for_the_hubs(
    env: Env, repo: FakeRepo, article_sha: str
) -> None:
    """A folder whose config.json.orig is not the Hub's config.json (copied from elsewhere, no
    download record): the original is checked before it is trusted, so config.json is fetched
    again, and patch-config then refuses to overwrite the foreign .orig."""
    folder = default_dir(env)
    folder.mkdir(parents=True)
    real = json.loads(repo.commits[article_sha].files["config.json"])
    foreign = {**real, "num_hidden_layers": 4}
    (folder / "config.json.orig").write_text(json.dumps(foreign, indent=2) + "\n")
    patched = {**foreign, "dflash_config": {**foreign["dflash_config"], "causal": True}}
    (folder / "config.json").write_text(json.dumps(patched, indent=2) + "\n")
    result = env.run()
    assert result.returncode == 1, result.stderr
    assert "config.json.orig holds other bytes" in result.stderr
    assert "never overwritten" in result.stderr
    assert json.loads((folder / "config.json.orig").read_text()) == foreign


# --- identity: a full commit asked is the commit received ------------------------------------


@pytest.mark.parametrize("how", ["full", "prefix"])
def test_an_endpoint_answering_another_commit_is_refused(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str, how: str
) -> None:
    """The endpoint answers commit B for the revision asked (hub.substitute: model info, tree
    and files all of B, as a mirror out of step would). Before: with a full commit A asked, j0
    downloaded B and recorded it beside A ("a full commit id"); now refused, naming both, and
    nothing is downloaded. A prefix of A answered with B was refused already (B does not start
    with it), and stays so."""
    other = next(c for c in repo.commits if c.startswith("5eed1234"))
    asked = article_sha if how == "full" else article_sha[:8]
    hub.substitute[asked] = other
    folder = env.work / "drafter-x"
    result = env.run("--revision", asked, "--dir", str(folder))
    assert result.returncode == 1, result.stdout + result.stderr
    if how == "full":
        assert f"commit {article_sha} was asked, but" in result.stderr
        assert f"answered commit {other}: refused" in result.stderr
    else:
        assert "not a prefix of that commit" in result.stderr
    assert not hub.requests("GET", f"/resolve/{asked}/")
    assert not (folder / "config.json").exists()
    assert other not in (env.pins.read_text())
