"""A stand-in for vLLM's per-commit wheel index (https://wheels.vllm.ai/<commit>/), of ours: a
PEP 503 "simple" index on 127.0.0.1 that serves the wheels a test adds, each under an index
prefix of its own (a commit, say). The real index cannot be reached from the machines the tests
run on; the clients under test (j0's stdlib index reader, pip, a docker build with host
networking) meet this server as they would meet that one.

Its layout is vLLM's (.buildkite/scripts/generate-nightly-index.py): the wheel files lie under
the prefix itself, the root page lists the projects of the default variant and one folder per
CUDA variant, and each variant folder is an index of its own whose project page links the files
by relative paths:

  GET /<prefix>/                      the root page: `vllm/` (if the default variant has files)
                                      and `cu129/`, `cu130/`, ... (the variants that have files)
  GET /<prefix>/<project>/            the default variant's project page: <a href="../FILE#...">
  GET /<prefix>/<variant>/            a variant's root page: its projects
  GET /<prefix>/<variant>/<project>/  its project page: <a href="../../FILE#sha256=HEX">
  GET /<prefix>/FILE                  the file's bytes
  anything else                       404

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
    variant: str  # "" for the root (vLLM's default variant), else the folder: cu129, cu130, ...


class WheelIndexServer(StandInServer):
    def __init__(self, host: str = LOCALHOST, port: int = 0) -> None:
        super().__init__(_Handler, host, port)
        self.files: dict[str, list[ServedFile]] = {}
        self.log: list[tuple[str, str]] = []

    def add(
        self,
        prefix: str,
        wheel: Path,
        project: str = "vllm",
        link_sha256: str | None = None,
        variant: str = "",
    ) -> str:
        """Serve `wheel` on the project page of index `prefix`, in its `variant` folder ("" for
        the root); return that index's URL (the prefix's, whatever the variant)."""
        data = wheel.read_bytes()
        digest = hashlib.sha256(data).hexdigest() if link_sha256 is None else link_sha256
        self.files.setdefault(prefix.strip("/"), []).append(
            ServedFile(project, wheel.name, data, digest, variant)
        )
        return self.index_url(prefix)

    def index_url(self, prefix: str) -> str:
        return f"{self.url}/{prefix.strip('/')}/"

    def requested(self) -> set[str]:
        """The paths asked for with GET."""
        return {path for method, path in self.log if method == "GET"}


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
        rest = parts[1:]
        variants = sorted({f.variant for f in files if f.variant})
        variant = rest[0] if rest and rest[0] in variants and path.endswith("/") else ""
        if variant:
            rest = rest[1:]
        listed = [f for f in files if f.variant == variant]
        is_page = path.endswith("/")
        if files and is_page and not rest:
            projects = [(f"{p}/", p) for p in sorted({f.project for f in listed})]
            folders = [(f"{v}/", f"{v}/") for v in variants] if not variant else []
            self._page(projects + folders)
            return
        chosen = [f for f in listed if rest and f.project == rest[0]]
        if is_page and len(rest) == 1 and chosen:
            up = "../../" if variant else "../"
            self._page(
                [
                    (f"{up}{urllib.parse.quote(f.name)}#sha256={f.link_sha256}", f.name)
                    for f in chosen
                ]
            )
            return
        named = [f for f in files if not is_page and len(rest) == 1 and f.name == rest[0]]
        if named:
            self.send_body(200, named[0].data, {self.content_type_header: "application/zip"})
            return
        self.send_body(404, b"not found\n")

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()
