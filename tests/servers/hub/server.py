"""A stand-in for the Hugging Face Hub (huggingface.co's HTTP API), of ours: tests run the real
huggingface_hub client against it (j0's drafter fetch and doctor, `hf` in containers), and it
listens on 127.0.0.1 only.

It implements only what huggingface_hub 2.4 uses to resolve a revision and download a snapshot:

    GET  /api/models/{repo}/revision/{rev}     model info; `sha` is the full commit. Branches,
                                               tags, full commits and unique hex prefixes
                                               (4+ chars) resolve; an ambiguous prefix gets 404
                                               (or, with ambiguous="first", the newest match)
    GET  /api/models/{repo}/tree/{rev}[/{path}]?recursive=&cursor=   file list, paginated with
                                               a `Link: <...>; rel="next"` header
    GET  /api/models/{repo}/commits/{rev}      the commits reachable from rev, newest first
    GET  /api/models/{repo}/refs               branches and tags
    HEAD /{repo}/resolve/{rev}/{path}          X-Repo-Commit, ETag (sha256 for LFS files, the
                                               git blob id otherwise), Content-Length
    GET  /{repo}/resolve/{rev}/{path}          the bytes; `Range: bytes=a-[b]` gives 206

Errors carry the Hub's X-Error-Code / X-Error-Message headers (RepoNotFound, RevisionNotFound,
EntryNotFound), which huggingface_hub turns into its own exceptions. With a token set, every
request needs `Authorization: Bearer <token>`: none gives 401 RepoNotFound (what the Hub says for
a private repo), a wrong one 401 "Invalid credentials in Authorization header". With
`gated_token` set, the repo is gated: model info says "gated": "manual", and a file asked for
without `Authorization: Bearer <gated_token>` gets 403 GatedRepo.

Faults for tests: `drop_once[path] = n` sends n bytes of that file's next GET and then drops the
connection; `stall.add(path)` sends half of the file and waits until `release` is set;
`corrupt[path] = data` serves `data` (HEAD and GET, with its own length and ETag) while the file
list keeps the real file's size and hashes, as a broken CDN or disk would; `fail_next[path] =
[503, ...]` answers that file's next GETs with those statuses (X-Error-Message set), one each;
`fail_api[kind] = [503, ...]` answers the next requests of an API route ("tree", "revision",
"commits", "refs") with those statuses; `substitute[rev] = sha` answers commit `sha` wherever
`rev` is asked (model info, tree, files with their X-Repo-Commit): an endpoint that serves
another commit than the one asked; `raw_api[kind] = (status, body, headers)` answers an API route
with those bytes, and `endless[kind] = n` with pages of n made-up files that always link a next.
Every request is recorded in `log`.

The built-in fake repo (`article_repo`, hub/article.py) holds the commits of a JetSpec++-like
drafter, one of them starting with 3147a351, and two commits sharing the prefix 5eed1234.
`--repo-dir` serves a repo written by `--write-repo` (and edited, if you like) instead. The
server's parts: hub/repo.py (repos), hub/handler.py (dispatch), hub/api.py, hub/files.py (routes).

Standalone (standard library only):
    python3 tests/servers/hub/server.py --port 8765 [--token-file FILE] [--repo-dir DIR]
then HF_ENDPOINT=http://127.0.0.1:8765.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: import this folder as the package it is
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = ".".join(Path(__file__).resolve().parts[-3:-1])

from ..base import LOCALHOST, StandInServer
from .article import (
    DEFAULT_REPO_ID,
    DRAFTER_CONFIG,
    article_repo,
    fake_commit_id,
    safetensors_bytes,
)
from .handler import HubHandler
from .repo import FakeCommit, FakeRepo, git_blob_id

__all__ = [
    "DEFAULT_REPO_ID",
    "DRAFTER_CONFIG",
    "FakeCommit",
    "FakeRepo",
    "HubServer",
    "article_repo",
    "fake_commit_id",
    "git_blob_id",
    "main",
    "safetensors_bytes",
]


class HubServer(StandInServer):
    """The server; start() runs it in a thread, stop() ends it."""

    def __init__(
        self,
        repos: list[FakeRepo],
        host: str = LOCALHOST,
        port: int = 0,
        token: str | None = None,
        page_size: int = 1000,
        ambiguous: str = "404",
        gated_token: str | None = None,
    ) -> None:
        super().__init__(HubHandler, host, port)
        self.repos = {repo.repo_id: repo for repo in repos}
        self.token = token
        self.gated_token = gated_token
        self.page_size = page_size
        self.ambiguous = ambiguous
        self.drop_once: dict[str, int] = {}
        self.stall: set[str] = set()
        self.corrupt: dict[str, bytes] = {}
        self.fail_next: dict[str, list[int]] = {}
        # an API route's kind ("revision", "tree", "commits", "refs") -> the statuses its next
        # requests get, one each (huggingface_hub retries a 5xx listing, warning each time)
        self.fail_api: dict[str, list[int]] = {}
        # an API route's kind -> (status, body, headers) answered instead, every time: a hostile
        # or broken endpoint (HTML, a list, an object without its keys)
        self.raw_api: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        # an API route's kind -> entries per page of a listing whose Link header never ends
        self.endless: dict[str, int] = {}
        # revision asked -> the commit answered instead, on every route (model info, tree,
        # commits, files): an endpoint that serves another commit than the one asked
        self.substitute: dict[str, str] = {}
        self.stalled = threading.Event()
        self.release = threading.Event()
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def stop(self) -> None:
        self.release.set()
        super().stop()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.log.append(entry)

    def requests(self, method: str | None = None, contains: str = "") -> list[dict[str, Any]]:
        with self._lock:
            return [
                e
                for e in self.log
                if (method is None or e["method"] == method) and contains in e["path"]
            ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free one)")
    parser.add_argument("--repo-dir", type=Path, help="serve the repo written by --write-repo")
    parser.add_argument("--repo-id", default=DEFAULT_REPO_ID, help="id of the built-in repo")
    parser.add_argument("--weight-mb", type=float, default=12.0, help="size of the big shard")
    parser.add_argument("--token-file", type=Path, help="require the token held in this file")
    parser.add_argument(
        "--ambiguous",
        choices=("404", "first"),
        default="404",
        help="answer to an ambiguous commit prefix",
    )
    parser.add_argument(
        "--write-repo",
        type=Path,
        metavar="DIR",
        help="write the built-in repo to DIR (for --repo-dir) and exit",
    )
    args = parser.parse_args(argv)

    repo = (
        FakeRepo.read(args.repo_dir)
        if args.repo_dir
        else article_repo(args.repo_id, args.weight_mb)
    )
    if args.write_repo:
        repo.write(args.write_repo)
        print(f"wrote {repo.repo_id} ({len(repo.commits)} commits) to {args.write_repo}")
        return 0
    token = args.token_file.read_text().strip() if args.token_file else None
    server = HubServer([repo], args.host, args.port, token=token, ambiguous=args.ambiguous)
    # The first line, "... at http://HOST:PORT ...", is what callers (local.py: HubProcess) read.
    print(
        f"hub_server: serving {repo.repo_id} at {server.url} "
        f"(token {'required' if token else 'not required'})",
        flush=True,
    )
    server.serve_until_interrupted()
    return 0


if __name__ == "__main__":
    sys.exit(main())
