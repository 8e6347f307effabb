"""The Hub stand-in's file route, HEAD and GET /{repo}/resolve/{rev}/{path}: X-Repo-Commit, ETag
(sha256 for LFS files, the git blob id otherwise), `Range: bytes=a-[b]` (206), and the faults
tests set on the server (drop_once, stall, corrupt, fail_next). Part of hub/server.py, our Hugging
Face Hub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import re
import socket
from typing import TYPE_CHECKING

from .repo import LFS_SUFFIXES, git_blob_id

if TYPE_CHECKING:
    from .handler import HubHandler


def resolve(handler: HubHandler, repo_id: str, rev: str, path: str) -> None:
    repo = handler.find_repo(repo_id)
    if repo is None:
        return
    commit = handler.find_commit(repo, rev)
    if commit is None:
        return
    server = handler.server
    data = commit.files.get(path)
    if data is not None and path in server.corrupt:
        data = server.corrupt[path]
    if data is None:
        handler.send_error_json(
            404, "EntryNotFound", f"{path} does not exist", **{"X-Repo-Commit": commit.id}
        )
        return
    etag = hashlib.sha256(data).hexdigest() if path.endswith(LFS_SUFFIXES) else git_blob_id(data)
    headers = {
        "X-Repo-Commit": commit.id,
        "ETag": f'"{etag}"',
        "Accept-Ranges": "bytes",
        "Content-Type": "application/octet-stream",
    }
    if handler.command == "HEAD":
        handler.send_body(200, b"", headers, length=len(data))
        return
    failures = server.fail_next.get(path)
    if failures:
        status = failures.pop(0)
        handler.send_error_json(status, None, f"test fault: HTTP {status} for {path}")
        return
    start, end, status = 0, len(data), 200
    wanted = handler.headers.get("Range")
    if wanted:
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
        if match is None or int(match.group(1)) >= len(data):
            handler.send_error_json(
                416,
                None,
                f"Range not satisfiable: {wanted}",
                **{"Content-Range": f"bytes */{len(data)}"},
            )
            return
        start = int(match.group(1))
        end = min(int(match.group(2)) + 1, len(data)) if match.group(2) else len(data)
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
    body = data[start:end]
    drop_after = server.drop_once.pop(path, None)
    if drop_after is not None and drop_after < len(body):
        send_then_cut(handler, status, headers, body, drop_after, wait=False)
        return
    if path in server.stall:
        send_then_cut(handler, status, headers, body, len(body) // 2, wait=True)
        return
    handler.send_body(status, body, headers)


def send_then_cut(
    handler: HubHandler, status: int, headers: dict[str, str], body: bytes, count: int, wait: bool
) -> None:
    """Promise the whole body, send `count` bytes, then drop the connection (with `wait`, first
    set server.stalled and wait for server.release)."""
    handler.send_head(status, headers, len(body))
    handler.wfile.write(body[:count])
    handler.wfile.flush()
    if wait:
        handler.server.stalled.set()
        handler.server.release.wait(timeout=120)
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
