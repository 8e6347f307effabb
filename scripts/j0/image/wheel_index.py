"""vLLM's per-commit wheel index as a PEP 503 "simple" index: list its vllm wheels, pick the one
for this Python and platform, download it and hash it; and the one message, with the choices,
for an index that cannot give the wheel.

Standard library only (urllib, html.parser): the wheel route's build step runs this on the base
image's python3, and its errors must name the index and the ways out rather than show a raw
traceback. The same code answers `j0 doctor`'s question whether the index has the wheel.
"""

from __future__ import annotations

import hashlib
import platform
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from j0.engine import urls
from j0.errors import J0Error
from j0.pins import Pins

PROJECT = "vllm"
TIMEOUT_S = 30.0
# A wheel's file name (PEP 427): name-version(-build)?-python-abi-platform.whl
_WHEEL = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)"
    r"-(?P<plat>[^-]+)\.whl$"
)


@dataclass(frozen=True)
class WheelLink:
    """One file of the project page: its name, absolute URL and the sha256 of its #fragment."""

    name: str
    url: str
    sha256: str

    @property
    def version(self) -> str:
        match = _WHEEL.match(self.name)
        return match["version"] if match else ""


class WheelIndexError(J0Error):
    """The index cannot give the wheel: unreachable, no page, no wheel for this platform."""


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def project_url(index: str, project: str = PROJECT) -> str:
    """PEP 503: the project page is <index>/<normalised name>/."""
    return index.rstrip("/") + f"/{project}/"


def _get(url: str, timeout: float) -> bytes:
    request = urls.request_of(url, headers={"Accept": "text/html"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return bytes(answer.read())


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot connect: {exc.reason}"
    return urls.redact_text(f"{type(exc).__name__}: {exc}")


def list_wheels(index: str, project: str = PROJECT, timeout: float = TIMEOUT_S) -> list[WheelLink]:
    """The .whl files the project page of `index` links to. Raises WheelIndexError (exit 69) when
    the page cannot be read, naming the page and why."""
    page = project_url(index, project)
    if urllib.parse.urlsplit(page).scheme not in ("http", "https"):
        raise WheelIndexError(
            f"wheel index {urls.redact(index)!r}: expected an http:// or https:// URL", 64
        )
    try:
        body = _get(page, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise WheelIndexError(f"{urls.redact(page)}: {_reason(exc)}", 69) from None
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    links = []
    for href in parser.hrefs:
        url, _, fragment = urllib.parse.urljoin(page, href).partition("#")
        name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        if not name.endswith(".whl"):
            continue
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
        links.append(WheelLink(name, url, digest.lower()))
    return links


def _python_tags() -> set[str]:
    major, minor = sys.version_info[:2]
    tags = {f"py{major}", f"py{major}{minor}", f"cp{major}{minor}"}
    return tags


def fits_here(name: str, machine: str | None = None) -> bool:
    """Whether a wheel's tags suit this Python (CPython 3.x; abi3 wheels of an older minor) and
    this machine (pure `any`, or a Linux platform tag of this architecture)."""
    match = _WHEEL.match(name)
    if match is None:
        return False
    arch = machine or platform.machine()
    minor = sys.version_info[1]
    pythons = match["py"].split(".")
    abi3 = "abi3" in match["abi"].split(".")
    fits_python = any(tag in _python_tags() for tag in pythons) or (
        abi3 and any(re.fullmatch(r"cp3(\d+)", t) and int(t[3:]) <= minor for t in pythons)
    )
    platforms = match["plat"].split(".")
    fits_platform = any(p == "any" or (p.endswith(f"_{arch}") and "linux" in p) for p in platforms)
    return fits_python and fits_platform


def choose(links: list[WheelLink], pinned_name: str, page: str) -> WheelLink:
    """The wheel to install: the pinned file name, else the one vllm wheel that fits here."""
    page = urls.redact(page)
    wheels = [link for link in links if link.name.lower().startswith(f"{PROJECT}-")]
    if pinned_name:
        named = [link for link in wheels if link.name == pinned_name]
        if named:
            return named[0]
        listed = ", ".join(link.name for link in wheels) or "no vllm wheel"
        raise WheelIndexError(
            f"{page}: no file {pinned_name} (VLLM_WHEEL_NAME); it lists {listed}", exit_code=69
        )
    fitting = [link for link in wheels if fits_here(link.name)]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        listed = ", ".join(link.name for link in wheels) or "no vllm wheel at all"
        raise WheelIndexError(
            f"{page}: no vllm wheel for Python {platform.python_version()} on "
            f"{platform.machine()} (it lists {listed})",
            exit_code=69,
        )
    raise WheelIndexError(
        f"{page}: several vllm wheels fit here ({', '.join(link.name for link in fitting)}); "
        "pin one as VLLM_WHEEL_NAME in overlay/pins.env (or --build-arg VLLM_WHEEL_NAME=...)",
        exit_code=2,
    )


def download(link: WheelLink, folder: Path, timeout: float = TIMEOUT_S) -> tuple[Path, str]:
    """Fetch the wheel into `folder`; return its path and the sha256 of the bytes received."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / link.name
    digest = hashlib.sha256()
    try:
        with (
            urllib.request.urlopen(urls.request_of(link.url), timeout=timeout) as answer,
            target.open("wb") as out,
        ):
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        target.unlink(missing_ok=True)
        raise WheelIndexError(f"{urls.redact(link.url)}: {_reason(exc)}", 69) from None
    return target, digest.hexdigest()


def choices(pins: Pins, index: str, reason: str) -> str:
    """One message: why the wheel route cannot build, and the three routes with what each runs."""
    commit = pins.vllm_commit
    return (
        f"the wheel route cannot get vLLM commit {commit[:8]}'s wheel from {urls.redact(index)}: "
        f"{reason}.\n"
        "The choices:\n"
        f"  1. another index that holds it: WHEEL_INDEX=<url> (compose), `j0 image build "
        f"--wheel-index URL`, `--build-arg WHEEL_INDEX=URL`; the page is <url>/{PROJECT}/ "
        f"(vLLM keeps a wheel of every main-branch commit since v0.5.3 under "
        f"https://wheels.vllm.ai/<commit>/).\n"
        f"  2. VLLM_ENGINE=image: vLLM's nightly image {pins.vllm_image}, the article's engine "
        "as a whole, while Docker Hub still keeps the tag (vLLM keeps the 14 newest nightly "
        "tags; a digest you pulled works as VLLM_IMAGE=<tag>@sha256:<digest>).\n"
        f"  3. VLLM_ENGINE=image VLLM_IMAGE={pins.vllm_image_fallback}: the {pins.vllm_release} "
        f"release as it is, vLLM commit {pins.values.get('VLLM_RELEASE_COMMIT', '?')}: the "
        "article's speculator.py byte for byte, but not the article's engine."
    )
