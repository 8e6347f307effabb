"""The Hub stand-in's request handler: the token check (and a gated repo's), the request log, and
dispatch of each path to its route (hub/api.py for /api/models/..., hub/files.py for
/{repo}/resolve/...). Errors carry the Hub's X-Error-Code / X-Error-Message headers. Part of
hub/server.py, our Hugging Face Hub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..base import StandInHandler
from . import api as hub_api
from . import files as hub_files
from .repo import FakeCommit, FakeRepo

if TYPE_CHECKING:
    from .server import HubServer

_API = re.compile(
    r"^/api/models/([^/]+/[^/]+)/(revision|tree|commits|refs)(?:/([^/]+)(?:/(.*))?)?$"
)
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


class HubHandler(StandInHandler):
    server: HubServer
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    # -- plumbing ---------------------------------------------------------------------------------

    def send_ok_json(self, data: Any, headers: dict[str, str] | None = None) -> None:
        self.send_json(200, data, headers)

    def send_error_json(self, status: int, code: str | None, message: str, **extra: str) -> None:
        headers = {"X-Error-Message": message, **extra}
        if code:
            headers["X-Error-Code"] = code
        self.send_json(status, {"error": message}, headers)

    def _authorised(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        if not self.headers.get("Authorization", ""):
            self.send_error_json(401, "RepoNotFound", "Repository not found")
            return False
        if not self.bears_token(token):
            self.send_error_json(401, None, "Invalid credentials in Authorization header")
            return False
        return True

    def _let_through_gate(self) -> bool:
        """A gated repo's files need its token: without it, 403 GatedRepo (as the Hub says)."""
        gate = self.server.gated_token
        if gate is None or "/resolve/" not in self.path or self.bears_token(gate):
            return True
        self.server.record({"method": self.command, "path": self.path, "gated": True})
        self.send_error_json(403, "GatedRepo", "Access to this model is restricted; please log in.")
        return False

    def find_repo(self, repo_id: str) -> FakeRepo | None:
        repo = self.server.repos.get(repo_id)
        if repo is None:
            self.send_error_json(404, "RepoNotFound", "Repository not found")
        return repo

    def find_commit(self, repo: FakeRepo, rev: str) -> FakeCommit | None:
        # A lying endpoint (server.substitute): another commit answered for the one asked.
        sha = self.server.substitute.get(rev) or repo.resolve(rev, self.server.ambiguous)
        if sha is None:
            self.send_error_json(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return None
        return repo.commits[sha]

    # -- dispatch ---------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        if not self._let_through_gate():
            return
        path, query = self.split_path()
        self.server.record(
            {
                "method": self.command,
                "path": path,
                "query": query,
                "range": self.headers.get("Range"),
                "auth": "Authorization" in self.headers,
            }
        )
        if not self._authorised():
            return
        match = _RESOLVE.match(path)
        if match:
            repo_id, rev, file = (unquote(g) for g in match.groups())
            hub_files.resolve(self, repo_id, rev, file)
            return
        match = _API.match(path)
        if match and self.command == "GET":
            self._api(path, *match.groups())
            return
        self.send_error_json(404, None, "Not found")

    def _api(self, path: str, repo_id: str, kind: str, rev: str | None, sub: str | None) -> None:
        """/api/models/{repo}/{kind}[/{rev}[/{sub}]]."""
        failures = self.server.fail_api.get(kind)
        if failures:
            self.send_error_json(failures.pop(0), None, f"the {kind} route is failing (a test)")
            return
        if kind in self.server.raw_api:
            status, body, headers = self.server.raw_api[kind]
            self.send_body(status, body, headers)
            return
        if kind in self.server.endless:
            hub_api.endless_page(self, self.server.endless[kind], self.query_lists(), path)
            return
        repo = self.find_repo(unquote(repo_id))
        if repo is None:
            return
        if kind == "refs":
            hub_api.refs(self, repo)
            return
        if rev is None:
            self.send_error_json(404, None, "Not found")
            return
        commit = self.find_commit(repo, unquote(rev))
        if commit is None:
            return
        query = self.query_lists()
        if kind == "revision":
            hub_api.model_info(self, repo, commit)
        elif kind == "tree":
            hub_api.tree(self, commit, unquote(sub or ""), query, path)
        else:
            hub_api.commits(self, repo, commit, query, path)

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()
