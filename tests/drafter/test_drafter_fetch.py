"""`j0 drafter fetch` with the real huggingface_hub client against our Hub-like server: the
download and its re-runs (resumed, completed, unchanged), the token, revisions, offline runs,
folder names, and where the pin is recorded (and where it is not).

No mocks: tests/servers/hub/server.py is a small HTTP server of ours on 127.0.0.1 that answers the
Hub endpoints huggingface_hub 2.4 uses; `j0` runs as a subprocess with HF_ENDPOINT pointing at it,
as a user (or the compose drafter service) runs it. The pins file is a copy in a temporary
J0_HOME, so the checkout's overlay/pins.env is never written (fetch_env.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fetch_env import (
    BIG,
    NEEDED,
    ROOT,
    TOKEN,
    Env,
    default_dir,
    make_env,
    pinned_commit,
    pinned_sha,
    serving,
)

from j0.drafter import fetch as drafter_fetch
from j0.errors import J0Error
from servers.hub.server import FakeRepo, HubServer, article_repo


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


def test_fetch_resolves_the_short_revision_and_patches(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    hub.page_size = 2  # the file and commit lists come in pages (Link: rel="next")
    assert pinned_commit(env) == ""
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert f"3147a351 -> {article_sha}" in result.stdout
    assert pinned_commit(env) == article_sha
    folder = default_dir(env)
    assert {p.name for p in folder.iterdir()} == NEEDED | {".cache"}
    files = repo.commits[article_sha].files
    for name in NEEDED - {"config.json", "config.json.orig"}:
        assert (folder / name).read_bytes() == files[name]
    assert (folder / "config.json.orig").read_bytes() == files["config.json"]
    expected = json.loads(files["config.json"])
    expected["dflash_config"]["causal"] = True
    assert json.loads((folder / "config.json").read_text()) == expected
    assert "all 5 draft layers causal" in result.stdout
    # Only what vLLM reads was downloaded, always at the full commit.
    downloaded = {e["path"].rsplit("/", 1)[-1] for e in hub.requests("GET", "/resolve/")}
    assert downloaded == NEEDED - {"config.json.orig"}
    assert all(f"/resolve/{article_sha}/" in e["path"] for e in hub.requests(contains="/resolve/"))
    assert any("cursor=" in e["query"] for e in hub.requests("GET", "/tree/"))
    assert "skipped: .gitattributes, README.md, runs/events.txt, tokenizer.json" in result.stdout


def test_second_run_downloads_nothing_and_changes_nothing(env: Env, hub: HubServer) -> None:
    assert env.run().returncode == 0
    folder = default_dir(env)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    count = len(hub.requests("GET", "/resolve/"))
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert "unchanged" in result.stdout
    assert "nothing to download" in result.stdout and "fetching" not in result.stdout
    assert len(hub.requests("GET", "/resolve/")) == count
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_dropped_connection_is_resumed_with_a_range_request(
    env: Env, hub: HubServer, repo: FakeRepo, article_sha: str
) -> None:
    # huggingface_hub writes 10 MiB chunks: drop after 10.5 MiB so that one chunk is on disk.
    hub.drop_once[BIG] = 10 * (1 << 20) + (1 << 19)
    result = env.run()
    assert result.returncode == 0, result.stderr
    ranges = [e["range"] for e in hub.requests("GET", BIG)]
    assert ranges == [None, f"bytes={10 * (1 << 20)}-"]
    data = (default_dir(env) / BIG).read_bytes()
    assert (
        hashlib.sha256(data).digest()
        == hashlib.sha256(repo.commits[article_sha].files[BIG]).digest()
    )


def test_interrupted_run_is_completed_by_the_next(env: Env, hub: HubServer) -> None:
    """Kill the first run while the big shard is half sent; the second run fetches only what is
    missing."""
    hub.stall.add(BIG)
    process = subprocess.Popen(
        [sys.executable, "-m", "j0", "drafter", "fetch"],
        cwd=env.work,
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert hub.stalled.wait(60), "the big shard's download never started"
        small = default_dir(env) / "model-00002-of-00002.safetensors"
        deadline = time.monotonic() + 30
        while not small.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    assert not (default_dir(env) / BIG).exists()
    hub.stall.clear()
    hub.release.set()
    result = env.run()
    assert result.returncode == 0, result.stderr
    plan = next(line for line in result.stdout.splitlines() if "fetching " in line)
    fetched, _, here = plan.partition("; already here: ")
    assert BIG in fetched and "model-00002-of-00002.safetensors" in here, plan
    assert len(hub.requests("GET", "model-00002-of-00002.safetensors")) == 1
    assert len(hub.requests("GET", BIG)) == 2
    assert "all 5 draft layers causal" in result.stdout
    assert "partial file(s) of interrupted runs" in result.stderr  # the killed run's, named


# Slow: three fetches in child processes (5 s in a fast-subset run of 2026-12-06).
@pytest.mark.slow
def test_token_from_env_or_file_never_printed(env: Env, hub: HubServer, tmp_path: Path) -> None:
    hub.token = TOKEN
    without = env.run()
    assert without.returncode == 1
    assert "401" in without.stderr and "HF_TOKEN" in without.stderr

    wrong = env.run(HF_TOKEN="hf_wrong_token_value")
    assert wrong.returncode == 1
    assert "refused the token" in wrong.stderr
    assert "hf_wrong_token_value" not in wrong.stdout + wrong.stderr

    with_env = env.run(HF_TOKEN=TOKEN)
    assert with_env.returncode == 0, with_env.stderr
    shutil.rmtree(default_dir(env))
    token_file = tmp_path / "secret" / "hf_token"
    token_file.parent.mkdir()
    token_file.write_text(TOKEN + "\n")
    with_file = env.run(HF_TOKEN_PATH=str(token_file))
    assert with_file.returncode == 0, with_file.stderr
    assert "HF_TOKEN_PATH" in with_file.stdout
    for result in (without, wrong, with_env, with_file):
        assert TOKEN not in result.stdout + result.stderr
    assert env.run(HF_TOKEN_PATH=str(tmp_path / "missing")).returncode == 2


def test_unknown_revision_is_refused(env: Env, hub: HubServer) -> None:
    result = env.run("--revision", "deadbeef")
    assert result.returncode == 2
    assert "no commit starts with 'deadbeef'" in result.stderr
    result = env.run("--revision", "no-such-branch")
    assert result.returncode == 2
    assert "no-such-branch" in result.stderr
    assert not (env.work / "drafter").exists()
    assert pinned_commit(env) == ""


@pytest.mark.parametrize("policy", ["404", "first"])
def test_ambiguous_prefix_is_refused_with_candidates(
    policy: str, env: Env, hub: HubServer, repo: FakeRepo
) -> None:
    """Whether the Hub answers an ambiguous prefix with an error or with one of the commits."""
    hub.ambiguous = policy
    result = env.run("--revision", "5eed1234")
    assert result.returncode == 1
    assert "ambiguous" in result.stderr
    for sha in (c for c in repo.commits if c.startswith("5eed1234")):
        assert sha in result.stderr
    assert not hub.requests(contains="/resolve/")
    assert pinned_commit(env) == ""


def test_branch_and_full_commit(env: Env, hub: HubServer, repo: FakeRepo) -> None:
    main_sha = repo.branches["main"]
    result = env.run("--revision", "main", "--dir", str(env.work / "m"))
    assert result.returncode == 0, result.stderr
    assert f"main -> {main_sha}" in result.stdout
    assert "pins: not touched" in result.stdout
    assert pinned_commit(env) == ""
    result = env.run("--revision", main_sha, "--dir", str(env.work / "m"))
    assert result.returncode == 0, result.stderr
    assert "unchanged" in result.stdout


def test_commit_without_weights_is_refused(env: Env, repo: FakeRepo) -> None:
    first = next(c for c in repo.commits.values() if c.parent is None)
    result = env.run("--revision", first.id)
    assert result.returncode == 2
    assert "no config.json and *.safetensors" in result.stderr


def test_offline_rerun_uses_the_existing_dir(env: Env, hub: HubServer) -> None:
    assert env.run().returncode == 0
    hub.stop()
    seen = len(hub.log)
    result = env.run(HF_HUB_OFFLINE="1")
    assert result.returncode == 0, result.stderr
    assert "unchanged" in result.stdout and "all 5 draft layers causal" in result.stdout
    assert len(hub.log) == seen
    # Offline with a --dir that holds nothing: a clear refusal.
    empty = env.run("--dir", str(env.work / "empty"), HF_HUB_OFFLINE="1")
    assert empty.returncode == 2
    assert "HF_HUB_OFFLINE=1" in empty.stderr


def test_offline_without_a_download_is_refused(env: Env, hub: HubServer) -> None:
    result = env.run(HF_HUB_OFFLINE="1")
    assert result.returncode == 2
    assert "HF_HUB_OFFLINE=1" in result.stderr
    assert not hub.log


@pytest.mark.parametrize("name", ["eagle-drafter", "my_MTP_head", "Medusa", "dspark"])
def test_dir_named_like_another_method_is_refused(name: str, env: Env, hub: HubServer) -> None:
    result = env.run("--dir", str(env.work / name / "x"))
    assert result.returncode == 64
    assert "47486" in result.stderr
    assert not hub.log


def test_default_dir_name_is_safe() -> None:
    path = drafter_fetch.default_dir("3147a351")
    assert path == Path("drafter") / "3147a351"
    drafter_fetch.check_dir_name(path)
    for bad in ("", "../up", "/abs"):
        with pytest.raises(J0Error) as info:
            drafter_fetch.default_dir(bad)
        assert info.value.exit_code == 64


def test_pins_not_writable_is_a_warning(env: Env) -> None:
    """As in an image, the pins file cannot be written; the fetch still works. Root may write
    anywhere, so the second run gets a file-size limit (RLIMIT_FSIZE) below the pins file's size:
    its write fails with EFBIG, while the rest of that run writes nothing."""
    import resource

    original = env.pins.read_text()
    assert env.run().returncode == 0
    env.pins.write_text(original)  # DRAFTER_COMMIT= empty again
    limit = len(original) // 2

    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-m", "j0", "drafter", "fetch"],
        cwd=env.work,
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
    )
    assert result.returncode == 0, result.stderr
    assert "warning: cannot record DRAFTER_COMMIT=" in result.stderr
    assert env.pins.read_text() == original
    assert "all 5 draft layers causal" in result.stdout


def test_a_different_pin_is_a_conflict(env: Env) -> None:
    text = env.pins.read_text().replace(
        "DRAFTER_COMMIT=", "DRAFTER_COMMIT=" + "3147a351" + "0" * 32
    )
    env.pins.write_text(text)
    result = env.run()
    assert result.returncode == 1
    assert "DRAFTER_COMMIT" in result.stderr and "moved" in result.stderr


def test_standalone_server_from_a_repo_dir(tmp_path: Path, env: Env, article_sha: str) -> None:
    """The server as the compose test runs it: a process of its own, on a free port."""
    script = ROOT / "tests" / "servers" / "hub" / "server.py"
    repo_dir = tmp_path / "repo"
    subprocess.run(
        [sys.executable, str(script), "--write-repo", str(repo_dir), "--weight-mb", "1"],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--repo-dir", str(repo_dir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        result = env.run(HF_ENDPOINT=url)
        assert result.returncode == 0, result.stderr
        assert pinned_commit(env) == article_sha
    finally:
        server.terminate()
        server.wait(10)


# --- where the pin is recorded, and where it is not ----------------------------------------------


def test_a_pin_from_another_endpoint_stays_out_of_the_tracked_pins(
    env: Env, hub: HubServer, article_sha: str
) -> None:
    """The checkout's overlay/pins.env is tracked by git: a commit learned from HF_ENDPOINT (a
    mirror, a test server) is named in a warning, not written there."""
    subprocess.run(["git", "init", "-q", str(env.home)], check=True)
    subprocess.run(["git", "-C", str(env.home), "add", "overlay/pins.env"], check=True)
    before = env.pins.read_text()
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert env.pins.read_text() == before
    assert f"DRAFTER_COMMIT={article_sha} is not recorded" in result.stderr
    assert f"it came from {hub.url} (HF_ENDPOINT)" in result.stderr
    assert "all 5 draft layers causal" in result.stdout


def test_a_pin_is_not_written_into_an_images_copy(env: Env, article_sha: str) -> None:
    """In the image (compose's drafter service) the pins are a copy beside the build step's
    manifest, in a layer that is thrown away: a warning says so instead of a silent write."""
    (env.home / "manifest.json").write_text("{}\n")
    before = env.pins.read_text()
    result = env.run()
    assert result.returncode == 0, result.stderr
    assert env.pins.read_text() == before
    assert f"DRAFTER_COMMIT={article_sha} is not recorded" in result.stderr
    assert "the image's copy of the pins" in result.stderr


def test_an_empty_hf_endpoint_means_the_hub() -> None:
    """`HF_ENDPOINT=` uncommented in .env: huggingface_hub must still talk to the Hub."""
    code = (
        "import os; from j0.drafter import hub; hub.drop_empty_endpoint(); "
        "from huggingface_hub import constants; print(constants.ENDPOINT)"
    )
    env = {**os.environ, "HF_ENDPOINT": "", "PYTHONPATH": str(ROOT / "scripts")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "https://huggingface.co"
