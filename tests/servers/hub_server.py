"""A small Hugging Face Hub look-alike on 127.0.0.1, for testing the real huggingface_hub client.

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
a private repo), a wrong one 401 "Invalid credentials in Authorization header".

Faults for tests: `drop_once[path] = n` sends n bytes of that file's next GET and then drops the
connection; `stall.add(path)` sends half of the file and waits until `release` is set;
`corrupt[path] = data` serves `data` (HEAD and GET, with its own length and ETag) while the file
list keeps the real file's size and hashes, as a broken CDN or disk would; `fail_next[path] =
[503, ...]` answers that file's next GETs with those statuses (X-Error-Message set), one each.
Every request is recorded in `log`.

The built-in fake repo (`article_repo`) holds the commits of a JetSpec++-like drafter, one of
them starting with 3147a351, and two commits sharing the prefix 5eed1234. `--repo-dir` serves a
repo written by `--write-repo` (and edited, if you like) instead.

Standalone (standard library only):
    python3 tests/servers/hub_server.py --port 8765 [--token-file FILE] [--repo-dir DIR]
then HF_ENDPOINT=http://127.0.0.1:8765.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import socket
import struct
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

DEFAULT_REPO_ID = "JetSpec/jetspec-plus-plus-qwen3p8-27b"
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
MiB = 1 << 20


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeCommit:
    id: str
    title: str
    date: str
    parent: str | None
    files: dict[str, bytes]


@dataclass
class FakeRepo:
    repo_id: str
    commits: dict[str, FakeCommit]
    branches: dict[str, str]
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str, ambiguous: str = "404") -> str | None:
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if rev.startswith("refs/heads/") and rev[11:] in self.branches:
            return self.branches[rev[11:]]
        if rev.startswith("refs/tags/") and rev[10:] in self.tags:
            return self.tags[rev[10:]]
        if re.fullmatch(r"[0-9a-f]{4,40}", rev):
            matches = sorted(
                (c for c in self.commits.values() if c.id.startswith(rev)),
                key=lambda c: c.date,
                reverse=True,
            )
            if len(matches) == 1 or (matches and ambiguous == "first"):
                return matches[0].id
        return None

    def history(self, sha: str) -> list[FakeCommit]:
        out = []
        current: str | None = sha
        while current is not None:
            commit = self.commits[current]
            out.append(commit)
            current = commit.parent
        return out

    # -- on disk, for --write-repo / --repo-dir -------------------------------------------------

    def write(self, folder: Path) -> None:
        meta = {
            "repo_id": self.repo_id,
            "branches": self.branches,
            "tags": self.tags,
            "commits": [
                {"id": c.id, "title": c.title, "date": c.date, "parent": c.parent}
                for c in self.commits.values()
            ],
        }
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "repo.json").write_text(json.dumps(meta, indent=2) + "\n")
        for commit in self.commits.values():
            for name, data in commit.files.items():
                target = folder / "commits" / commit.id / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

    @classmethod
    def read(cls, folder: Path) -> FakeRepo:
        meta = json.loads((folder / "repo.json").read_text())
        commits = {}
        for item in meta["commits"]:
            root = folder / "commits" / item["id"]
            files = {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*"))
                if p.is_file()
            }
            commits[item["id"]] = FakeCommit(
                item["id"], item["title"], item["date"], item["parent"], files
            )
        return cls(meta["repo_id"], commits, meta["branches"], meta.get("tags", {}))


# ---------------------------------------------------------------------------------------------
# The built-in repo


def fake_commit_id(prefix: str, seed: str) -> str:
    return prefix + hashlib.sha1(seed.encode()).hexdigest()[: 40 - len(prefix)]


def safetensors_bytes(name: str, size: int, seed: int) -> bytes:
    """A valid safetensors file holding one uint8 tensor of `size` random bytes."""
    header = {
        "__metadata__": {"format": "pt"},
        name: {"dtype": "U8", "shape": [size], "data_offsets": [0, size]},
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + random.Random(seed).randbytes(size)


DRAFTER_CONFIG: dict[str, Any] = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "block_size": 16,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "num_hidden_layers": 5,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
    "dflash_config": {
        "mask_token_id": 151669,
        "target_layer_ids": [1, 16, 31, 46, 61],
        "causal_head": True,
    },
}


def article_repo(repo_id: str = DEFAULT_REPO_ID, weight_mb: float = 12.0) -> FakeRepo:
    """A drafter repo whose commit 3147a351… holds two weight shards (the first `weight_mb` MiB,
    big enough for huggingface_hub's 10 MiB download chunks to be resumed with a Range request)."""
    big = int(weight_mb * MiB)
    shard1 = safetensors_bytes("layers.0.weight", big, seed=1)
    shard2 = safetensors_bytes("layers.1.weight", 4096, seed=2)
    index = {
        "metadata": {"total_size": big + 4096},
        "weight_map": {
            "layers.0.weight": "model-00001-of-00002.safetensors",
            "layers.1.weight": "model-00002-of-00002.safetensors",
        },
    }
    config = (json.dumps(DRAFTER_CONFIG, indent=2) + "\n").encode()
    readme = b"# JetSpec++ drafter for Qwen3.8-27B (test fixture)\n"
    article_files = {
        ".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": readme,
        "config.json": config,
        "model-00001-of-00002.safetensors": shard1,
        "model-00002-of-00002.safetensors": shard2,
        "model.safetensors.index.json": (json.dumps(index, indent=2) + "\n").encode(),
        "tokenizer.json": b'{"version": "1.0"}\n',
        "training_args.bin": b"\x00training state\x00",
        "runs/events.txt": b"step 1 loss 2.0\n",
    }
    first = FakeCommit(
        fake_commit_id("", "initial"),
        "initial commit",
        "2026-09-01T10:00:00.000Z",
        None,
        {".gitattributes": article_files[".gitattributes"]},
    )
    article = FakeCommit(
        fake_commit_id("3147a351", "article"),
        "JetSpec++ drafter weights",
        "2026-10-01T10:00:00.000Z",
        first.id,
        article_files,
    )
    later = FakeCommit(
        fake_commit_id("", "readme"),
        "Update README.md",
        "2026-10-20T10:00:00.000Z",
        article.id,
        {**article_files, "README.md": readme + b"\nNow with a longer README.\n"},
    )
    twin_a = FakeCommit(
        fake_commit_id("5eed1234", "twin-a"),
        "experiment A",
        "2026-10-05T10:00:00.000Z",
        article.id,
        article_files,
    )
    twin_b = FakeCommit(
        fake_commit_id("5eed1234", "twin-b"),
        "experiment B",
        "2026-10-06T10:00:00.000Z",
        twin_a.id,
        article_files,
    )
    commits = {c.id: c for c in (first, article, later, twin_a, twin_b)}
    return FakeRepo(
        repo_id,
        commits,
        branches={"main": later.id, "experiments": twin_b.id},
        tags={"v1.0": article.id},
    )


# ---------------------------------------------------------------------------------------------
# The server


class HubServer(ThreadingHTTPServer):
    """The server; start() runs it in a thread, stop() ends it."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        repos: list[FakeRepo],
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        page_size: int = 1000,
        ambiguous: str = "404",
    ) -> None:
        super().__init__((host, port), _Handler)
        self.repos = {repo.repo_id: repo for repo in repos}
        self.token = token
        self.page_size = page_size
        self.ambiguous = ambiguous
        self.drop_once: dict[str, int] = {}
        self.stall: set[str] = set()
        self.corrupt: dict[str, bytes] = {}
        self.fail_next: dict[str, list[int]] = {}
        self.stalled = threading.Event()
        self.release = threading.Event()
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()

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


_API = re.compile(
    r"^/api/models/([^/]+/[^/]+)/(revision|tree|commits|refs)(?:/([^/]+)(?:/(.*))?)?$"
)
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


class _Handler(BaseHTTPRequestHandler):
    server: HubServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are in server.log; keep test output clean

    # -- plumbing ---------------------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _json(self, data: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self._send(200, body, {"Content-Type": "application/json", **(headers or {})})

    def _error(self, status: int, code: str | None, message: str, **extra: str) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": message, **extra}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, json.dumps({"error": message}).encode(), headers)

    def _authorised(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if not given:
            self._error(401, "RepoNotFound", "Repository not found")
            return False
        if given != f"Bearer {token}":
            self._error(401, None, "Invalid credentials in Authorization header")
            return False
        return True

    def _repo(self, repo_id: str) -> FakeRepo | None:
        repo = self.server.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    def _commit(self, repo: FakeRepo, rev: str) -> FakeCommit | None:
        sha = repo.resolve(rev, self.server.ambiguous)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return None
        return repo.commits[sha]

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        self.server.record(
            {
                "method": self.command,
                "path": parts.path,
                "query": parts.query,
                "range": self.headers.get("Range"),
                "auth": "Authorization" in self.headers,
            }
        )
        if not self._authorised():
            return
        match = _RESOLVE.match(parts.path)
        if match:
            repo_id, rev, path = (unquote(g) for g in match.groups())
            self._resolve(repo_id, rev, path)
            return
        match = _API.match(parts.path)
        if match and self.command == "GET":
            repo_id, kind, rev, path = match.groups()
            repo = self._repo(unquote(repo_id))
            if repo is None:
                return
            query = parse_qs(parts.query)
            if kind == "refs":
                self._refs(repo)
                return
            if rev is None:
                self._error(404, None, "Not found")
                return
            commit = self._commit(repo, unquote(rev))
            if commit is None:
                return
            if kind == "revision":
                self._model_info(repo, commit)
            elif kind == "tree":
                self._tree(repo, commit, unquote(path or ""), query, parts.path)
            else:
                self._commits(repo, commit, query, parts.path)
            return
        self._error(404, None, "Not found")

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    # -- endpoints --------------------------------------------------------------------------------

    def _model_info(self, repo: FakeRepo, commit: FakeCommit) -> None:
        self._json(
            {
                "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": commit.id,
                "lastModified": commit.date,
                "private": self.server.token is not None,
                "gated": False,
                "disabled": False,
                "tags": [],
                "siblings": [{"rfilename": name} for name in sorted(commit.files)],
            }
        )

    def _page(self, items: list[Any], query: dict[str, list[str]], path: str) -> None:
        start = int(query.get("cursor", ["0"])[0])
        end = start + self.server.page_size
        headers = {}
        if end < len(items):
            rest = {k: v[0] for k, v in query.items() if k != "cursor"}
            rest["cursor"] = str(end)
            host = self.headers.get("Host", "127.0.0.1")
            headers["Link"] = f'<http://{host}{path}?{urlencode(rest)}>; rel="next"'
        self._json(items[start:end], headers)

    def _tree(
        self,
        repo: FakeRepo,
        commit: FakeCommit,
        folder: str,
        query: dict[str, list[str]],
        path: str,
    ) -> None:
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
                    entries.setdefault(
                        sub,
                        {
                            "type": "directory",
                            "oid": hashlib.sha1(sub.encode()).hexdigest(),
                            "size": 0,
                            "path": sub,
                        },
                    )
            if len(rest) > 1 and not recursive:
                continue
            data = commit.files[name]
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
            entries[name] = entry
        self._page([entries[k] for k in sorted(entries)], query, path)

    def _commits(
        self, repo: FakeRepo, commit: FakeCommit, query: dict[str, list[str]], path: str
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
        self._page(items, query, path)

    def _refs(self, repo: FakeRepo) -> None:
        def refs(kind: str, names: dict[str, str]) -> list[dict[str, str]]:
            return [
                {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": sha}
                for name, sha in sorted(names.items())
            ]

        self._json(
            {
                "branches": refs("heads", repo.branches),
                "tags": refs("tags", repo.tags),
                "converts": [],
                "pullRequests": [],
            }
        )

    def _resolve(self, repo_id: str, rev: str, path: str) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return
        commit = self._commit(repo, rev)
        if commit is None:
            return
        data = commit.files.get(path)
        if data is not None and path in self.server.corrupt:
            data = self.server.corrupt[path]
        if data is None:
            self._error(
                404, "EntryNotFound", f"{path} does not exist", **{"X-Repo-Commit": commit.id}
            )
            return
        etag = (
            hashlib.sha256(data).hexdigest() if path.endswith(LFS_SUFFIXES) else git_blob_id(data)
        )
        headers = {
            "X-Repo-Commit": commit.id,
            "ETag": f'"{etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if self.command == "HEAD":
            self._send(200, b"", headers, length=len(data))
            return
        failures = self.server.fail_next.get(path)
        if failures:
            status = failures.pop(0)
            self._error(status, None, f"test fault: HTTP {status} for {path}")
            return
        start, end, status = 0, len(data), 200
        wanted = self.headers.get("Range")
        if wanted:
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
            if match is None or int(match.group(1)) >= len(data):
                self._error(
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
        drop_after = self.server.drop_once.pop(path, None)
        if drop_after is not None and drop_after < len(body):
            self._send_then_cut(status, headers, body, drop_after, wait=False)
            return
        if path in self.server.stall:
            self._send_then_cut(status, headers, body, len(body) // 2, wait=True)
            return
        self._send(status, body, headers)

    def _send_then_cut(
        self, status: int, headers: dict[str, str], body: bytes, count: int, wait: bool
    ) -> None:
        """Promise the whole body, send `count` bytes, then drop the connection."""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:count])
        self.wfile.flush()
        if wait:
            self.server.stalled.set()
            self.server.release.wait(timeout=120)
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
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
    # The first line, "... at http://HOST:PORT ...", is what callers (tests/test_compose.py) read.
    print(
        f"hub_server: serving {repo.repo_id} at {server.url} "
        f"(token {'required' if token else 'not required'})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
