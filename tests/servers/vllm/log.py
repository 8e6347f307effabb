"""The server log of our vLLM stand-in, written as vLLM 0.33's API server writes its own, for the
tests that read a log (`j0 status --log`): the start-up lines a test gives (our entrypoint's,
`j0 serve`'s, the patch's), then vLLM's and uvicorn's lines as the server comes up, then what a
request puts there, as vLLM and uvicorn write it (their texts as in tests/status/data/
server-j0-on.log and vLLM 0.33.0's vllm/entrypoints/serve/engine/serving.py):

    (APIServer pid=N) ERROR MM-DD HH:MM:SS [serving.py:N] The model `NAME` does not exist. ...
        a request for a model not served, NAME as the client sent it (line breaks and all)
    INFO:     127.0.0.1:PORT - "GET /PATH?QUERY HTTP/1.1" 200 OK
        uvicorn's access log: every request, its path percent-decoded (as uvicorn's scope has
        it: `%0A` is a line break) and its raw query

So a client of the stand-in can write into its log what a client of vLLM can write into vLLM's.
Standard library only; part of vllm/server.py, on 127.0.0.1.
"""

from __future__ import annotations

import threading
from http import HTTPStatus
from pathlib import Path

PID = 60
SERVER_UP = (
    f"(APIServer pid={PID}) INFO 11-30 12:01:00 [entry.py:139] Starting vLLM server on "
    "http://0.0.0.0:8000\n"
    f"INFO:     Started server process [{PID}]\n"
    "INFO:     Waiting for application startup.\n"
    "INFO:     Application startup complete.\n"
)


class StandInLog:
    """A log file: `startup` and the server coming up at once, then one entry per request."""

    def __init__(self, path: Path, startup: str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.path.write_text(startup + ("" if startup.endswith("\n") else "\n") + SERVER_UP)

    def write(self, text: str) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as log:
            log.write(text + "\n")

    def access(self, client: str, request_line: str, status: int) -> None:
        """uvicorn's access-log line (uvicorn/logging.py AccessFormatter, without colour)."""
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        self.write(f'INFO:     {client} - "{request_line}" {status} {phrase}'.rstrip())

    def unknown_model(self, model: str, served: str) -> None:
        """vLLM's error for a request naming a model it does not serve, the name as sent."""
        self.write(
            f"(APIServer pid={PID}) ERROR 11-30 12:02:00 [serving.py:213] The model `{model}` "
            f"does not exist. Valid aliases: {served}."
        )
