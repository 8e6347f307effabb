"""A running vLLM server's HTTP endpoints, asked the same way by every command: one request helper
(optional bearer key, JSON body), /health, /v1/models, plain-text GETs (/metrics), and one
wait-for-/health loop with a bound that gives up at once when the server has exited.

vLLM 0.33.0's routes: /health (200 once the engine is up; vllm/entrypoints/serve/instrumentator/
health.py), /version and /metrics (no API key needed), the OpenAI-compatible /v1 routes (the key,
when the server has one). Standard library only.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from j0.errors import CHECK_FAILED, J0Error

TIMEOUT_S = 10.0
HEALTH_TIMEOUT_S = 5.0


def request(
    url: str,
    api_key: str | None = None,
    body: dict[str, Any] | None = None,
    timeout: float = TIMEOUT_S,
) -> tuple[int, bytes]:
    """(status, body) of GET `url` (POST with `body` as JSON); an HTTP error status is returned,
    not raised; no answer at all raises urllib.error.URLError or OSError."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


def get_text(url: str, timeout: float = 30.0) -> str:
    """The body of GET `url` as text (for /metrics); an HTTP error status raises."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def first_model(url: str, timeout: float = 30.0) -> dict[str, Any]:
    """The first entry of the server's /v1/models."""
    with urllib.request.urlopen(f"{url}/v1/models", timeout=timeout) as response:
        return dict(json.loads(response.read())["data"][0])


def health(url: str, timeout: float = HEALTH_TIMEOUT_S) -> tuple[bool, str]:
    """Whether GET `url`/health answered 200, and what it answered otherwise (a status or the
    reason there was no answer)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            if response.status == 200:
                return True, "HTTP 200"
            return False, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return False, str(exc)


def healthy(url: str) -> bool:
    return health(url)[0]


def wait_for_health(
    url: str,
    timeout: float,
    *,
    exited: Callable[[], str | None] = lambda: None,
    timed_out: Callable[[str], str] | None = None,
    poll: float = 1.0,
    exit_code: int = CHECK_FAILED,
) -> float:
    """Seconds until `url`/health answered 200. Between polls, `exited()` says why the server can
    no longer answer (it has exited: a J0Error with that text at once) or None. After `timeout`
    seconds, a J0Error with `timed_out(last answer)`, or a plain sentence naming the bound."""
    started = time.monotonic()
    while True:
        ok, last = health(url)
        if ok:
            return time.monotonic() - started
        if (why := exited()) is not None:
            raise J0Error(why, exit_code)
        if time.monotonic() - started > timeout:
            message = (
                timed_out(last)
                if timed_out
                else f"{url}/health: no answer within {timeout:.0f} s ({last})"
            )
            raise J0Error(message, exit_code)
        time.sleep(poll)
