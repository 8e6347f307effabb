"""The Hub stand-in's repos: commits with their files, branches and tags, how a revision
resolves (a branch, a tag, a full commit or a unique prefix), and their form on disk
(--write-repo / --repo-dir). Part of hub/server.py, our Hugging Face Hub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


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
