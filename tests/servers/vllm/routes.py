"""The vLLM stand-in's request handler and its routes, a dispatch table per method:

    GET  /health /version /v1/models /metrics /_standin/record
    POST /v1/completions /v1/chat/completions (vllm/generate.py)

As vLLM's API server (uvicorn) answers: lower-case content-type / content-length, compact JSON,
`{"detail": "Not Found"}` for an unknown route, OpenAI-style errors, and with --api-key a 401
`{"error": "Unauthorized"}` on every /v1 route without the bearer token (vllm/entrypoints/serve/
middleware/authenticate.py). Part of vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..base import StandInHandler
from . import hostile_routes
from .generate import generate

if TYPE_CHECKING:
    from .server import VllmStandIn


class VllmHandler(StandInHandler):
    server: VllmStandIn
    server_version = "uvicorn"
    sys_version = ""
    # As uvicorn does: without it, Nagle's algorithm holds small chunks back (40 ms stalls).
    disable_nagle_algorithm = True
    content_type_header = "content-type"
    content_length_header = "content-length"
    json_separators = (",", ":")

    def send_text(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_body(status, body, {"content-type": content_type})

    def send_openai_error(self, status: int, message: str, kind: str) -> None:
        error = {"message": message, "type": kind, "param": None, "code": status}
        self.send_json(status, {"error": error})

    def _unauthorized(self, path: str) -> bool:
        """vLLM's API-key middleware: a /v1 route without the right bearer token gets 401."""
        key = self.server.api_key
        if key is None or not path.startswith("/v1") or self.bears_token(key):
            return False
        self.send_json(401, {"error": "Unauthorized"})
        return True

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """uvicorn's access-log line, into the server's log where it keeps one (vllm/log.py)."""
        if self.server.log is None or not isinstance(code, int):
            return
        # uvicorn writes scope["path"] (percent-decoded: %0A is a line break) and the raw query.
        path, query = self.split_path()
        target = unquote(path) + (f"?{query}" if query else "")
        client = f"{self.client_address[0]}:{self.client_address[1]}"
        self.server.log.access(client, f"{self.command} {target} {self.request_version}", code)

    def _hostile(self, path: str) -> bool:
        """A route the test made hostile (tests/servers/hostile_routes.py) is answered there."""
        behaviour = self.server.hostile.get(path)
        if behaviour is None:
            return False
        hostile_routes.answer(self, path, behaviour)
        return True

    def do_GET(self) -> None:
        path = self.split_path()[0]
        if self._unauthorized(path) or self._hostile(path):
            return
        GET_ROUTES.get(path, not_found)(self)

    def do_POST(self) -> None:
        path = self.split_path()[0]
        raw = self.read_body()
        if raw is None or self._unauthorized(path) or self._hostile(path):
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self.send_openai_error(400, f"invalid JSON body: {exc}", "BadRequestError")
            return
        route = POST_ROUTES.get(path)
        if route is None:
            not_found(self)
            return
        route(self, body)


def not_found(handler: VllmHandler) -> None:
    handler.send_json(404, {"detail": "Not Found"})


def health(handler: VllmHandler) -> None:
    """200, empty (vllm/entrypoints/serve/instrumentator/health.py); 503 with a dead engine."""
    handler.send_text(503 if handler.server.engine_dead else 200, b"")


def version(handler: VllmHandler) -> None:
    handler.send_json(200, {"version": handler.server.version})


def models(handler: VllmHandler) -> None:
    """A ModelList with max_model_len, root and permission (vllm/entrypoints/serve/engine/
    protocol.py, openai/models/serving.py)."""
    server = handler.server
    now = int(time.time())
    permission = {
        "id": f"modelperm-{uuid.uuid4().hex}",
        "object": "model_permission",
        "created": now,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }
    model = {
        "id": server.model,
        "object": "model",
        "created": now,
        "owned_by": "vllm",
        "root": server.root,
        "parent": None,
        "max_model_len": server.max_model_len,
        "permission": [permission],
    }
    handler.send_json(200, {"object": "list", "data": [model]})


def metrics(handler: VllmHandler) -> None:
    text = handler.server.metrics_text()
    handler.send_text(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def standin_record(handler: VllmHandler) -> None:
    """What the server did for every request (for tests and programs that run it)."""
    handler.send_json(200, handler.server.record_json())


def completions(handler: VllmHandler, body: dict[str, Any]) -> None:
    generate(handler, body, chat=False)


def chat_completions(handler: VllmHandler, body: dict[str, Any]) -> None:
    if not handler.server.chat:  # a server without the chat route
        not_found(handler)
        return
    generate(handler, body, chat=True)


GET_ROUTES: dict[str, Callable[[VllmHandler], None]] = {
    "/health": health,
    "/version": version,
    "/v1/models": models,
    "/metrics": metrics,
    "/_standin/record": standin_record,
}
POST_ROUTES: dict[str, Callable[[VllmHandler, dict[str, Any]], None]] = {
    "/v1/completions": completions,
    "/v1/chat/completions": chat_completions,
}
