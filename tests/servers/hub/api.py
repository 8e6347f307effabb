"""The Hub stand-in's /api/models/{repo}/... routes, as huggingface_hub 2.4 reads them: model info
at a revision, the file tree and the commit list (paginated with a `Link: <...>; rel="next"`
header), and the refs. Part of hub/server.py, our Hugging Face Hub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from .repo import LFS_SUFFIXES, FakeCommit, FakeRepo, git_blob_id

if TYPE_CHECKING:
    from .handler import HubHandler

Query = dict[str, list[str]]


def model_info(handler: HubHandler, repo: FakeRepo, commit: FakeCommit) -> None:
    handler.send_ok_json(
        {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": commit.id,
            "lastModified": commit.date,
            "private": handler.server.token is not None,
            "gated": "manual" if handler.server.gated_token is not None else False,
            "disabled": False,
            "tags": [],
            "siblings": [{"rfilename": name} for name in sorted(commit.files)],
        }
    )


def send_page(handler: HubHandler, items: list[Any], query: Query, path: str) -> None:
    """items[cursor:cursor + page_size], with a Link to the next page where there is one."""
    start = int(query.get("cursor", ["0"])[0])
    end = start + handler.server.page_size
    headers = {}
    if end < len(items):
        rest = {k: v[0] for k, v in query.items() if k != "cursor"}
        rest["cursor"] = str(end)
        host = handler.headers.get("Host", "127.0.0.1")
        headers["Link"] = f'<http://{host}{path}?{urlencode(rest)}>; rel="next"'
    handler.send_ok_json(items[start:end], headers)


def _directory_entry(path: str) -> dict[str, Any]:
    return {
        "type": "directory",
        "oid": hashlib.sha1(path.encode()).hexdigest(),
        "size": 0,
        "path": path,
    }


def _file_entry(name: str, data: bytes) -> dict[str, Any]:
    """A file of the tree; an LFS file's oid is its pointer's blob id, with its `lfs` part."""
    entry: dict[str, Any] = {
        "type": "file",
        "oid": git_blob_id(data),
        "size": len(data),
        "path": name,
    }
    if name.endswith(LFS_SUFFIXES):
        pointer = (
            "version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n"
        ).encode()
        entry["oid"] = git_blob_id(pointer)
        entry["lfs"] = {
            "oid": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "pointerSize": len(pointer),
        }
    return entry


def tree(handler: HubHandler, commit: FakeCommit, folder: str, query: Query, path: str) -> None:
    """The entries under `folder` (all depths with ?recursive=true), sorted by path."""
    recursive = query.get("recursive", ["False"])[0].lower() in ("1", "true")
    prefix = folder.strip("/") + "/" if folder.strip("/") else ""
    entries: dict[str, dict[str, Any]] = {}
    for name in sorted(commit.files):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :].split("/")
        for depth in range(1, len(rest)):
            sub = prefix + "/".join(rest[:depth])
            if recursive or depth == 1:
                entries.setdefault(sub, _directory_entry(sub))
        if len(rest) > 1 and not recursive:
            continue
        entries[name] = _file_entry(name, commit.files[name])
    send_page(handler, [entries[k] for k in sorted(entries)], query, path)


def commits(
    handler: HubHandler, repo: FakeRepo, commit: FakeCommit, query: Query, path: str
) -> None:
    items = [
        {
            "id": c.id,
            "title": c.title,
            "message": "",
            "date": c.date,
            "authors": [{"user": "jetspec", "avatar": ""}],
        }
        for c in repo.history(commit.id)
    ]
    send_page(handler, items, query, path)


def refs(handler: HubHandler, repo: FakeRepo) -> None:
    def listed(kind: str, names: dict[str, str]) -> list[dict[str, str]]:
        return [
            {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": sha}
            for name, sha in sorted(names.items())
        ]

    handler.send_ok_json(
        {
            "branches": listed("heads", repo.branches),
            "tags": listed("tags", repo.tags),
            "converts": [],
            "pullRequests": [],
        }
    )


def endless_page(handler: HubHandler, size: int, query: Query, path: str) -> None:
    """A page of `size` made-up files after the cursor, and a Link to the next, always: a
    listing that never ends (what a hostile endpoint can send)."""
    start = int(query.get("cursor", ["0"])[0])
    items = [
        {"type": "file", "oid": "0" * 40, "size": 1, "path": f"file-{n:09d}.bin"}
        for n in range(start, start + size)
    ]
    rest = {k: v[0] for k, v in query.items() if k != "cursor"}
    rest["cursor"] = str(start + max(size, 1))
    host = handler.headers.get("Host", "127.0.0.1")
    handler.send_ok_json(items, {"Link": f'<http://{host}{path}?{urlencode(rest)}>; rel="next"'})
