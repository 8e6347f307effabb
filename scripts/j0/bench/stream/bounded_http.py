"""`j0 bench run`'s HTTP reads through aiohttp, bounded as j0.engine.server.endpoints bounds
urllib's: redirects are followed only to the same scheme, host and port (endpoints.same_origin: a
redirect must not make bench measure another server than --url), and every body is read up to its
kind's cap (endpoints.MAX_JSON_BYTES for JSON answers and each streamed event, MAX_ERROR_BYTES for
an error body, cut there, MAX_METRICS_BYTES for /metrics).

aiohttp is never imported here: the callers hand in their session and responses.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

from j0.engine.server.endpoints import BodyTooLarge, same_origin

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
READ_CHUNK = 64 << 10


class RedirectRefused(Exception):
    """A redirect to another origin (or too many, or one without a Location): not followed."""


async def open_same_origin(session: Any, method: str, url: str, **kwargs: Any) -> Any:
    """The response of `method url` (session: an aiohttp.ClientSession), following at most
    MAX_REDIRECTS redirects, each to the same origin as `url`; RedirectRefused otherwise. The
    caller closes the response (`async with`). A 301/302/303 of a POST becomes a GET, as in
    browsers and aiohttp; 307/308 keep the method and the body."""
    for _ in range(MAX_REDIRECTS + 1):
        response = await session.request(method, url, allow_redirects=False, **kwargs)
        if response.status not in REDIRECTS:
            return response
        location = response.headers.get("Location")
        response.release()
        if not location:
            raise RedirectRefused(f"{url}: HTTP {response.status} without a Location")
        target = urllib.parse.urljoin(url, location)
        if not same_origin(url, target):
            parts = urllib.parse.urlsplit(target)
            raise RedirectRefused(
                f"{url}: HTTP {response.status} redirect to another origin refused "
                f"({parts.scheme}://{parts.hostname}:{parts.port or ''}): bench measures "
                "only the server it was given"
            )
        if response.status == 303 or (response.status in (301, 302) and method == "POST"):
            method = "GET"
            kwargs.pop("json", None)
            kwargs.pop("data", None)
        url = target
    raise RedirectRefused(f"{url}: more than {MAX_REDIRECTS} redirects")


async def read_capped(response: Any, limit: int, what: str, *, cut: bool = False) -> bytes:
    """The body of `response` (an aiohttp.ClientResponse), at most `limit` bytes: a longer one
    raises BodyTooLarge, or with `cut` is cut there (an error body, only shown)."""
    declared = response.content_length
    if declared is not None and declared > limit and not cut:
        raise BodyTooLarge(f"{what}: {declared} bytes announced, more than {limit}")
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        part = await response.content.read(min(READ_CHUNK, limit + 1 - size))
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
    if cut:
        return b"".join(parts)[:limit]
    raise BodyTooLarge(f"{what}: more than {limit} bytes")


async def lines(response: Any, limit: int, what: str) -> AsyncIterator[bytes]:
    """The lines of a streamed body (server-sent events), each without its line break; a line
    longer than `limit` bytes raises BodyTooLarge. Lines are split here from what has arrived
    (not with aiohttp's readline, whose limit differs between versions)."""
    held: list[bytes] = []  # the start of a line not yet complete
    size = 0
    async for part in response.content.iter_any():
        start = 0
        while (end := part.find(b"\n", start)) != -1:
            line = b"".join([*held, part[start:end]]) if held else part[start:end]
            held, size = [], 0
            if len(line) > limit:
                raise BodyTooLarge(f"{what}: a line of more than {limit} bytes")
            yield line
            start = end + 1
        if start < len(part):
            held.append(part[start:])
            size += len(part) - start
            if size > limit:
                raise BodyTooLarge(f"{what}: a line of more than {limit} bytes")
    if held:
        yield b"".join(held)
