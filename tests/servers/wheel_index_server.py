"""A stand-in for vLLM's per-commit wheel index (https://wheels.vllm.ai/<commit>/), of ours: a
PEP 503 "simple" index on 127.0.0.1 that serves the wheels a test adds, each under an index
prefix of its own (a commit, say). The real index cannot be reached from the machines the tests
run on; the clients under test (j0's stdlib index reader, pip, a docker build with host
networking) meet this server as they would meet that one:

  GET /<prefix>/                the root page: one link per project
  GET /<prefix>/<project>/      the project page: one <a href="FILE#sha256=HEX"> per file
  GET /<prefix>/<project>/FILE  the file's bytes
  anything else                 404

A link's #sha256 is the file's own unless the test gives another (a damaged-download case).
Every request is recorded in `log`.
"""

from __future__ import annotations

import hashlib
import html
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from .base import LOCALHOST, StandInHandler, StandInServer


@dataclass(frozen=True)
class ServedFile:
    project: str
    name: str
    data: bytes
    link_sha256: str  # what the project page's #sha256= says


class WheelIndexServer(StandInServer):
    def __init__(self, host: str = LOCALHOST, port: int = 0) -> None:
        super().__init__(_Handler, host, port)
        self.files: dict[str, list[ServedFile]] = {}
        self.log: list[tuple[str, str]] = []

    def add(
        self, prefix: str, wheel: Path, project: str = "vllm", link_sha256: str | None = None
    ) -> str:
        """Serve `wheel` on the project page of index `prefix`; return that index's URL."""
        data = wheel.read_bytes()
        digest = hashlib.sha256(data).hexdigest() if link_sha256 is None else link_sha256
        self.files.setdefault(prefix.strip("/"), []).append(
            ServedFile(project, wheel.name, data, digest)
        )
        return self.index_url(prefix)

    def index_url(self, prefix: str) -> str:
        return f"{self.url}/{prefix.strip('/')}/"


class _Handler(StandInHandler):
    server: WheelIndexServer

    def _page(self, links: list[tuple[str, str]]) -> None:
        anchors = "".join(
            f'<a href="{html.escape(href)}">{html.escape(text)}</a><br/>\n' for href, text in links
        )
        body = f"<!DOCTYPE html>\n<html><body>\n{anchors}</body></html>\n".encode()
        self.send_body(200, body, {self.content_type_header: "text/html"})

    def _answer(self) -> None:
        self.server.log.append((self.command, self.path))
        path = urllib.parse.unquote(self.split_path()[0])
        parts = [part for part in path.split("/") if part]
        files = self.server.files.get(parts[0], []) if parts else []
        if not files:
            self.send_body(404, b"not found\n")
            return
        if len(parts) == 1 and path.endswith("/"):
            projects = sorted({f.project for f in files})
            self._page([(f"{project}/", project) for project in projects])
            return
        project_files = [f for f in files if len(parts) > 1 and f.project == parts[1]]
        if len(parts) == 2 and path.endswith("/") and project_files:
            self._page(
                [
                    (f"{urllib.parse.quote(f.name)}#sha256={f.link_sha256}", f.name)
                    for f in project_files
                ]
            )
            return
        named = [f for f in project_files if len(parts) == 3 and f.name == parts[2]]
        if named:
            self.send_body(200, named[0].data, {self.content_type_header: "application/zip"})
            return
        self.send_body(404, b"not found\n")

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()
