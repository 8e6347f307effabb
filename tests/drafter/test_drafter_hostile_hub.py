"""Hostile or broken Hub answers to `j0 drafter fetch`: a 200 with HTML, a list or an object
without its keys where model info goes, a tree entry whose path is a number, a file listing that
never ends (pages of files, or empty pages, always linking a next), and a --repo-id that
huggingface_hub refuses. Each is a clear refusal naming the endpoint and what was expected: exit
69 for an endpoint whose answers are not a Hub's, 64 for a repo id that is not one; the listing is
bounded in entries and in requests, so memory and time stay bounded.

Before (issue 53, item 4): exit 70 for the shapes, and the endless listing never ended (memory
growing about 50 MB/s). Real processes: `j0 drafter fetch` against our Hub stand-in on 127.0.0.1
(tests/servers/hub/), its answers replaced per route (raw_api, endless).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from drafter.fetch_env import Env, make_env, serving
from j0.errors import UNAVAILABLE, USAGE
from servers.hub.server import HubServer, article_repo


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with serving(article_repo()) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: HubServer) -> Env:
    return make_env(tmp_path, hub.url)


JSON = {"Content-Type": "application/json"}
HOSTILE = {
    "html": ("revision", (200, b"<!doctype html><html><body>login</body></html>", {})),
    "a list": ("revision", (200, b"[1, 2, 3]", JSON)),
    "no id": ("revision", (200, json.dumps({"sha": "3147a351" + "0" * 32}).encode(), JSON)),
    "path a number": (
        "tree",
        (200, json.dumps([{"type": "file", "oid": "0" * 40, "size": 3, "path": 7}]).encode(), JSON),
    ),
    "tree not a list": ("tree", (200, b'{"files": []}', JSON)),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_an_answer_that_is_not_a_hubs_is_refused(env: Env, hub: HubServer, case: str) -> None:
    kind, answer = HOSTILE[case]
    hub.raw_api[kind] = answer
    result = env.run("--out", str(env.work / "d"), timeout=120)
    assert result.returncode == UNAVAILABLE, result.stderr
    assert hub.url in result.stderr and "expected" in result.stderr, result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("per_page", [1000, 0])
def test_a_listing_that_never_ends_is_cut(env: Env, hub: HubServer, per_page: int) -> None:
    hub.endless["tree"] = per_page
    result = env.run("--out", str(env.work / "d"), timeout=240)
    assert result.returncode == UNAVAILABLE, result.stderr
    assert hub.url in result.stderr and "never ends" in result.stderr, result.stderr
    assert len(hub.requests("GET", "/tree/")) <= 1000


@pytest.mark.parametrize("repo_id", ["../x", "a/b/c", "org/name with space", "$(HF_TOKEN)"])
def test_a_repo_id_huggingface_hub_refuses_is_a_usage_error(
    env: Env, hub: HubServer, repo_id: str
) -> None:
    result = env.run("--repo-id", repo_id, "--out", str(env.work / "d"))
    assert result.returncode == USAGE, result.stderr
    assert f"--repo-id {repo_id!r}" in result.stderr and "expected" in result.stderr
    assert hub.log == []  # nothing was asked
