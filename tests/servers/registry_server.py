"""A stand-in for a Docker registry (the distribution API v2), of ours, that has no images: every
manifest is unknown. The tests run the real Docker engine's `docker pull` against it (and j0's
image commands through it); it listens on 127.0.0.1 only.

The Docker engine pulls from 127.0.0.0/8 over plain HTTP without configuration, so a pull of
`127.0.0.1:PORT/some/image:tag` meets this server exactly as it would meet a registry whose tag
was deleted (vLLM's per-commit nightly tags are): `GET /v2/` answers 200 (API version 2), and
`GET|HEAD /v2/<name>/manifests/<reference>` answers 404 with the distribution API's
MANIFEST_UNKNOWN error. Every request is recorded in `log`.

Standalone: python3 tests/servers/registry_server.py --port 5000
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: import this folder as the package it is
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    __package__ = Path(__file__).resolve().parent.name

from .base import LOCALHOST, StandInHandler, StandInServer

_MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")
_NAME_UNKNOWN = {"code": "NAME_UNKNOWN", "message": "repository name not known to registry"}


class RegistryServer(StandInServer):
    def __init__(self, host: str = LOCALHOST, port: int = 0) -> None:
        super().__init__(_Handler, host, port)
        self.log: list[tuple[str, str]] = []


class _Handler(StandInHandler):
    server: RegistryServer

    def _send(self, status: int, body: dict[str, Any]) -> None:
        self.send_json(status, body, {"Docker-Distribution-API-Version": "registry/2.0"})

    def _answer(self) -> None:
        self.server.log.append((self.command, self.path))
        if self.path.rstrip("/") == "/v2":
            self._send(200, {})
            return
        match = _MANIFEST.match(self.split_path()[0])
        if match:
            name, reference = match.groups()
            error = {"code": "MANIFEST_UNKNOWN", "message": "manifest unknown", "detail": {}}
            error["detail"] = {"Name": name, "Revision": reference}
            self._send(404, {"errors": [error]})
            return
        self._send(404, {"errors": [_NAME_UNKNOWN]})

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    server = RegistryServer(port=args.port)
    print(f"registry_server: serving at {server.address}", flush=True)
    server.serve_until_interrupted()
    return 0


if __name__ == "__main__":
    sys.exit(main())
