"""A running vLLM server's HTTP endpoints, asked the same way by every command: one request helper
(optional bearer key, JSON body), /health, /v1/models, plain-text GETs (/metrics), and one
wait-for-/health loop with a bound that gives up at once when the server has exited.

vLLM 0.33.0's routes: /health (200 once the engine is up; vllm/entrypoints/serve/instrumentator/
health.py), /version and /metrics (no API key needed), the OpenAI-compatible /v1 routes (the key,
when the server has one). Standard library only.

Every read is bounded: a body larger than its kind's cap (JSON answers, /metrics text, error
bodies) is refused, and a whole request has a deadline besides the socket's idle timeout, so a
server that trickles bytes cannot hold a command forever. Redirects are followed only to the
same scheme, host and port, and never carry the Authorization header: a bearer key is not sent
to another host. A URL's own credentials (`http://user:password@host`) go as a Basic
`Authorization` header (where no bearer key is given) on the URL without them, under the same
rule; every message names the URL with its userinfo masked (j0.edge.urls).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from j0.edge import http_deadline, urls
from j0.errors import CHECK_FAILED, USAGE, J0Error, parse_json

TIMEOUT_S = 10.0
HEALTH_TIMEOUT_S = 5.0
# Caps per kind of body. vLLM's answers are far smaller: /metrics is tens of kB, /v1/models and
# a completion a few kB.
MAX_JSON_BYTES = 16 << 20
MAX_METRICS_BYTES = 32 << 20
MAX_ERROR_BYTES = 64 << 10
CHUNK = 64 << 10


def check_server_url(url: str, what: str = "--url") -> str:
    """`url` if it can name a server (http or https, a host, a port in 1..65535, no spaces or
    control characters), without a trailing "/"; else a J0Error (exit 64) naming `what`."""
    problem = None
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        problem = "spaces or control characters"
    else:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            parts, port, problem = None, None, str(exc)
        if parts is not None:
            if parts.scheme not in ("http", "https"):
                problem = f"scheme {parts.scheme or 'none'}, expected http or https"
            elif not parts.hostname:
                problem = "no host"
            elif port == 0:
                problem = "port 0"
    if problem is not None:
        raise J0Error(
            f"{what} {url!r}: not a server URL ({problem}); expected e.g. http://127.0.0.1:8000",
            USAGE,
        )
    return url.rstrip("/")


class BodyTooLarge(OSError):
    """An answer's body is over its cap: refused, not read (an OSError, like no answer)."""


# The whole request took longer than its deadline (an OSError, like no answer): one class for a
# deadline passed in the head (j0.edge.http_deadline) and in the body (read_bounded).
DeadlineExceeded = http_deadline.DeadlineExceeded


def same_origin(url: str, other: str) -> bool:
    """Whether `other` has the scheme, host and port of `url` (a redirect that may be followed:
    `j0 bench run` asks the same of aiohttp's redirects)."""
    old, new = urllib.parse.urlsplit(url), urllib.parse.urlsplit(other)
    try:
        return (old.scheme, old.hostname, old.port) == (new.scheme, new.hostname, new.port)
    except ValueError:  # a port that is not a number
        return False


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the same scheme, host and port, and drops Authorization."""

    def redirect_request(  # type: ignore[override]
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if not same_origin(req.full_url, newurl):
            raise urllib.error.HTTPError(
                req.full_url,
                code,
                f"redirect to another host refused ({urls.redact(newurl)})",
                headers,
                fp,
            )
        made = super().redirect_request(req, fp, code, msg, headers, newurl)
        if made is not None:
            made.remove_header("Authorization")
        return made


# Every exchange has a deadline over all of it, status line and headers included
# (j0.edge.http_deadline); the body's reads keep to it too (read_bounded).
_OPENER = urllib.request.build_opener(
    _SameOriginRedirects(), http_deadline.HTTPHandler(), http_deadline.HTTPSHandler()
)


def read_bounded(response: Any, limit: int, deadline: float, what: str) -> bytes:
    """At most `limit` bytes of `response`, read before time.monotonic() passes `deadline`."""
    declared = response.headers.get("Content-Length") if response.headers else None
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"{what}: {int(declared)} bytes announced, more than {limit}")
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise DeadlineExceeded(f"{what}: no complete answer in time ({size} bytes so far)")
        # read1: what has arrived (up to the size), not a wait for the whole size
        reader = getattr(response, "read1", response.read)
        part = reader(min(CHUNK, limit + 1 - size))
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > limit:
            raise BodyTooLarge(f"{what}: more than {limit} bytes")


def _open(req: urllib.request.Request | str, timeout: float) -> Any:
    """The response to `req`, the whole exchange (headers and body) within 2 x `timeout`."""
    if isinstance(req, str):
        req = urls.request_of(req)
    with http_deadline.exchange_deadline(time.monotonic() + 2 * timeout):
        return _OPENER.open(req, timeout=timeout)


def request(
    url: str,
    api_key: str | None = None,
    body: dict[str, Any] | None = None,
    timeout: float = TIMEOUT_S,
    limit: int = MAX_JSON_BYTES,
) -> tuple[int, bytes]:
    """(status, body) of GET `url` (POST with `body` as JSON); an HTTP error status is returned,
    not raised (its body cut to MAX_ERROR_BYTES); no answer at all, an answer over `limit` bytes
    or one not complete within 2 x `timeout` raises urllib.error.URLError or OSError."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urls.request_of(url, headers, data)
    deadline = time.monotonic() + 2 * timeout
    try:
        with _open(req, timeout) as response:
            return int(response.status), read_bounded(response, limit, deadline, req.full_url)
    except urllib.error.HTTPError as exc:
        if exc.fp is None:
            return int(exc.code), str(exc.reason).encode()
        return int(exc.code), exc.read(MAX_ERROR_BYTES)


def post(url: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> bytes:
    """The body of POST `url` with `body` as JSON, bounded as `request` bounds it; an HTTP error
    status raises OSError naming the status and the start of the server's answer."""
    status, raw = request(url, body=body, timeout=timeout)
    if status != 200:
        excerpt = raw[:300].decode("utf-8", "replace")
        raise OSError(f"{urls.redact(url)}: HTTP {status}: {excerpt}")
    return raw


def post_json(url: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """`post`'s answer as a JSON object (ValueError where it is not one)."""
    try:
        value = parse_json(post(url, body, timeout), urls.redact(url))
    except J0Error as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(value, dict):
        raise ValueError(f"{urls.redact(url)}: the answer is not a JSON object")
    return value


def get_text(url: str, timeout: float = 30.0, limit: int = MAX_METRICS_BYTES) -> str:
    """The body of GET `url` as text (for /metrics), at most `limit` bytes within 2 x `timeout`;
    an HTTP error status raises."""
    deadline = time.monotonic() + 2 * timeout
    with _open(url, timeout) as response:
        return read_bounded(response, limit, deadline, urls.redact(url)).decode()


def first_model(url: str, timeout: float = 30.0) -> dict[str, Any]:
    """The first entry of the server's /v1/models."""
    deadline = time.monotonic() + 2 * timeout
    with _open(f"{url}/v1/models", timeout) as response:
        body = read_bounded(response, MAX_JSON_BYTES, deadline, f"{urls.redact(url)}/v1/models")
    return dict(parse_json(body, f"{urls.redact(url)}/v1/models", CHECK_FAILED)["data"][0])


def health(url: str, timeout: float = HEALTH_TIMEOUT_S) -> tuple[bool, str]:
    """Whether GET `url`/health answered 200, and what it answered otherwise (a status or the
    reason there was no answer)."""
    try:
        with _open(f"{url}/health", timeout) as response:
            if response.status == 200:
                return True, "HTTP 200"
            return False, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return False, urls.redact_text(str(exc))


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
                else f"{urls.redact(url)}/health: no answer within {timeout:.0f} s ({last})"
            )
            raise J0Error(message, exit_code)
        time.sleep(poll)
