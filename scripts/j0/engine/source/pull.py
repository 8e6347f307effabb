"""Get a Docker image that is not present: pull it, one line per layer status change, and when the
pull fails say why in words that fit the cause (shared by `j0 image build` and `j0 overlay build
--from-image`).

The Docker engine reports a failed pull as text. Three causes call for different advice:
  unreachable  no answer from the registry (DNS, refused connection, timeout, proxy, TLS): every
               image of that registry fails alike, another tag included;
  not-found    the registry answered that this repository or tag does not exist (a per-commit
               nightly tag deleted, a typo);
  denied       the registry wants a login, or refuses it.
Anything else is reported as it came.

docker-py is imported inside the functions; the client is the caller's.
"""

from __future__ import annotations

import re
from typing import Any

from j0.errors import UNAVAILABLE, J0Error

UNREACHABLE, NOT_FOUND, DENIED, OTHER = "unreachable", "not-found", "denied", "other"

# Phrases of the Docker engine's (Go's net/http, the distribution API's) pull errors.
_CAUSES = (
    (
        UNREACHABLE,
        re.compile(
            r"no such host|server misbehaving|temporary failure in name resolution|"
            r"dial tcp|connection refused|connection reset|network is unreachable|"
            r"no route to host|i/o timeout|tls handshake timeout|context deadline exceeded|"
            r"request canceled while waiting for connection|proxyconnect|"
            r"client\.timeout exceeded",
            re.IGNORECASE,
        ),
    ),
    (
        NOT_FOUND,
        re.compile(
            r"manifest unknown|not found|name unknown|repository does not exist|no such image",
            re.IGNORECASE,
        ),
    ),
    (
        DENIED,
        re.compile(r"unauthorized|authentication required|denied|forbidden", re.IGNORECASE),
    ),
)


def pull_failure(message: str) -> str:
    """UNREACHABLE, NOT_FOUND, DENIED or OTHER for the text of a failed pull."""
    for cause, pattern in _CAUSES:
        if pattern.search(message):
            return cause
    return OTHER


def registry_of(image: str) -> str:
    """The registry host of an image reference (Docker Hub when the first part is no host)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "registry-1.docker.io (Docker Hub)"


class PullError(J0Error):
    """A failed pull; `cause` is one of UNREACHABLE, NOT_FOUND, DENIED, OTHER."""

    def __init__(self, image: str, detail: str) -> None:
        self.image = image
        self.detail = detail
        self.cause = pull_failure(detail)
        words = {
            UNREACHABLE: f"cannot reach the registry {registry_of(image)}",
            NOT_FOUND: "the registry has no such repository or tag",
            DENIED: "the registry refused access (private image? `docker login`)",
            OTHER: "the pull failed",
        }[self.cause]
        # the image is not here and cannot be had: 69, never 1 (a failed check)
        super().__init__(f"cannot pull {image}: {words} ({detail.strip()})", UNAVAILABLE)


def ensure_image(
    client: Any, image: str, pull: bool = True, log: Any = print, what: str = "image"
) -> Any:
    """The local image `image`; pulled first when absent (unless pull=False). Raises PullError
    (or a J0Error when absent and pull=False)."""
    from docker.errors import APIError, ImageNotFound

    try:
        return client.images.get(image)
    except ImageNotFound:
        if not pull:
            raise J0Error(
                f"{what} {image} is not present and --no-pull was given", UNAVAILABLE
            ) from None
    log(f"==> {image} is not present here: pulling it", flush=True)
    try:
        seen: dict[str, str] = {}  # layer id -> its last status: one line per change, not per chunk
        for event in client.api.pull(image, stream=True, decode=True):
            layer, status = str(event.get("id", "")), str(event.get("status", ""))
            if status and seen.get(layer) != status:
                seen[layer] = status
                log(f"    {layer + ': ' if layer else ''}{status}", flush=True)
            if "error" in event:
                raise PullError(image, str(event["error"]))
        return client.images.get(image)
    except APIError as exc:
        raise PullError(image, str(exc.explanation or exc)) from None
    except ImageNotFound as exc:
        raise PullError(image, str(exc)) from None
