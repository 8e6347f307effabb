"""A Docker registry look-alike on 127.0.0.1 that has no images: every manifest is unknown.

The Docker engine pulls from 127.0.0.0/8 over plain HTTP without configuration, so a pull of
`127.0.0.1:PORT/some/image:tag` meets this server exactly as it would meet a registry whose tag
was deleted (vLLM's per-commit nightly tags are): `GET /v2/` answers 200 (API version 2), and
`GET|HEAD /v2/<name>/manifests/<reference>` answers 404 with the distribution API's
MANIFEST_UNKNOWN error. Every request is recorded in `log`.

Standalone: python3 tests/servers/registry_server.py --port 5000
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")


class RegistryServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.log: list[tuple[str, str]] = []
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> RegistryServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: RegistryServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _answer(self) -> None:
        self.server.log.append((self.command, self.path))
        if self.path.rstrip("/") == "/v2":
            self._send(200, {})
            return
        match = _MANIFEST.match(self.path.split("?", 1)[0])
        if match:
            name, reference = match.groups()
            error = {"code": "MANIFEST_UNKNOWN", "message": "manifest unknown", "detail": {}}
            error["detail"] = {"Name": name, "Revision": reference}
            self._send(404, {"errors": [error]})
            return
        self._send(
            404,
            {
                "errors": [
                    {"code": "NAME_UNKNOWN", "message": "repository name not known to registry"}
                ]
            },
        )

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
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
