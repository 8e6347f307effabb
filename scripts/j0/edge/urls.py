"""Credentials in a URL (`http://user:password@host:8000`), kept out of every file and message.

A URL a user gives (`--url`, `J0_SERVER_URL`, `WHEEL_INDEX`, `HF_ENDPOINT`) may carry its
userinfo. Whatever records or prints a URL writes `redact(url)`: the userinfo becomes `***`
(`http://***@host:8000`), so a reader still sees that credentials were given, never which.
Free text that may hold a URL (a library's error message) goes through `redact_text`.

Where the credentials are used at all, they are sent as an `Authorization: Basic` header
(RFC 7617) built by `split`, on a URL without them, and never across a redirect to another
origin: `request_of` makes urllib's request with the header unredirected (urllib copies a
request's other headers to the redirect's target, whatever its host), and aiohttp drops the
Authorization header on a redirect to another origin. Standard library only.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from typing import TYPE_CHECKING

# urllib.request (http.client, email, ssl) is imported where a request is made, not at every j0
# start (j0.cli imports this module through j0.edge.redaction).
if TYPE_CHECKING:
    import urllib.request

MASK = "***"
# scheme://userinfo@ : userinfo is anything up to the first @ before the host's end
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]*)@")


def has_credentials(url: str) -> bool:
    return "@" in urllib.parse.urlsplit(url).netloc


def _host_part(netloc: str) -> str:
    return netloc.rpartition("@")[2]


def redact(url: str) -> str:
    """`url` with its userinfo (user, password, token) replaced by `***`; unchanged without."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{MASK}@{_host_part(parts.netloc)}"))


def redact_text(text: str) -> str:
    """`text` with the userinfo of every URL in it replaced by `***`."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)


def split(url: str) -> tuple[str, str | None]:
    """(`url` without userinfo, the `Authorization` header value its credentials make, or None).
    The user and password are percent-decoded, as RFC 3986 writes them in a URL."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    bare = urllib.parse.urlunsplit(parts._replace(netloc=_host_part(parts.netloc)))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return bare, f"Basic {token}"


def request_of(
    url: str, headers: dict[str, str] | None = None, data: bytes | None = None
) -> urllib.request.Request:
    """urllib's request of `url` without its userinfo; the credentials, if any, as a Basic
    Authorization header that no redirect carries, unless `headers` authorise already."""
    import urllib.request

    bare, basic = split(url)
    req = urllib.request.Request(bare, data=data, headers=dict(headers or {}))
    if basic and not req.has_header("Authorization"):
        req.add_unredirected_header("Authorization", basic)
    return req
