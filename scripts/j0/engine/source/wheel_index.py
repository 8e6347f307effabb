"""vLLM's per-commit wheel index as a PEP 503 "simple" index: choose the folder to take the wheel
from, list its vllm wheels, pick the one for this Python and platform, download it and hash it;
and the one message, with the choices, for an index that cannot give the wheel.

The index's layout is vLLM's (.buildkite/scripts/generate-nightly-index.py, and its installation
docs): `<commit>/` is a project list that links `vllm/` (vLLM's default CUDA variant,
VLLM_MAIN_CUDA_VERSION) and one folder per variant, `cu129/`, `cu130/`, `cpu/`, ..., each an index
of its own whose `vllm/` page links the wheel files, which lie under `<commit>/` itself. The
default variant has a folder too, as an alias, but under the name of vLLM's index scripts'
DEFAULT_VARIANT_ALIAS, `cu129`, also while vLLM builds CUDA 13.0 by default (0.33, 0.34); other
variants are built on demand. So a commit may have a `cu130/` folder, or only its root (holding
the CUDA 13.0 wheel) with a `cu129/` alias beside it. The wheel route takes the variant folder of
the base image's torch (`torch.version.cuda` 13.0: `cu130/`) where there is one, else the root
(wheel_source); the engine step then reads the wheel's own CUDA (j0.engine.source.wheel_cuda) and
refuses a wheel of another CUDA than that torch's: it fails to load its kernels.

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

from j0.edge import urls
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
    """The index cannot give the wheel: unreachable, no page, no wheel for this platform.
    `status`: the HTTP status of a page that answered with an error, else None."""

    def __init__(self, message: str, exit_code: int = 1, status: int | None = None) -> None:
        super().__init__(message, exit_code)
        self.status = status


class VariantError(WheelIndexError):
    """The index answers, but has no folder of the CUDA variant wanted."""


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


# A variant folder's name as vLLM's index generator writes them (cu129, cu130, cpu, rocm721, ...).
_VARIANT = re.compile(r"^(?:cu\d{3,}|cpu|rocm\d+|xpu)$")


def variant_of_cuda(cuda: str | None) -> str:
    """The variant folder for a torch built for `cuda` (torch.version.cuda): `13.0` -> `cu130`,
    `12.9` -> `cu129`; None (torch's CPU build) -> `cpu`."""
    if cuda is None:
        return "cpu"
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", cuda.strip())
    if match is None:
        raise WheelIndexError(f"torch.version.cuda is {cuda!r}, not a CUDA version", exit_code=1)
    return f"cu{match[1]}{match[2]}"


def wheel_variant(name: str) -> str:
    """The variant a wheel's file name carries in its local version (`+cu129`, `+g<sha>.cu130`),
    or "" (the default variant's files carry none)."""
    match = _WHEEL.match(name)
    local = match["version"].partition("+")[2] if match else ""
    found = [part for part in re.split(r"[._]", local) if _VARIANT.match(part)]
    return found[-1] if found else ""


def _folder_name(url: str) -> str:
    return urllib.parse.urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]


def variant_url(index: str, variant: str) -> str:
    """`<index>/<variant>/`; an index URL that names a variant folder itself is taken as it is
    (the caller checks that it is the variant wanted)."""
    if _VARIANT.match(_folder_name(index)):
        return index.rstrip("/") + "/"
    return index.rstrip("/") + f"/{variant}/"


def _page_links(url: str, timeout: float) -> list[str]:
    """The absolute hrefs of one index page; WheelIndexError (69) when it cannot be read."""
    try:
        body = _get(url, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        status = exc.code if isinstance(exc, urllib.error.HTTPError) else None
        raise WheelIndexError(f"{urls.redact(url)}: {_reason(exc)}", 69, status) from None
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    return [urllib.parse.urljoin(url, href) for href in parser.hrefs]


def list_variants(index: str, timeout: float = TIMEOUT_S) -> list[str]:
    """The variant folders the index's root page links to (sorted), as vLLM's index lists them
    beside its projects."""
    found = {_folder_name(link) for link in _page_links(index, timeout) if link.endswith("/")}
    return sorted(name for name in found if _VARIANT.match(name))


@dataclass(frozen=True)
class Source:
    """The folder of the index the wheel is taken from: `folder` (a variant folder's name, or
    ROOT), its index URL, the wheels its vllm page links to, and why that folder, in words."""

    folder: str
    index: str
    links: list[WheelLink]
    why: str


ROOT = "root"


def wheel_source(index: str, variant: str, why: str, timeout: float = TIMEOUT_S) -> Source:
    """Where to take the wheel for `variant` (`cu130`, for `why`: the base's torch): the index's
    folder of that variant where it has one; else its root, vLLM's default variant, whose wheel's
    own CUDA the caller must then check (vLLM's index scripts alias the root as `cu129/` while
    vLLM builds CUDA 13.0 by default, and build other variants only on demand, so a commit may
    have no `cu130/` folder although its root holds the CUDA 13.0 wheel). An index URL that names
    a variant folder is taken for that variant only. Refused (69), naming the folders the index
    has, when neither the folder nor the root lists a wheel."""
    named = _folder_name(index)
    if _VARIANT.match(named):
        if named != variant:
            raise VariantError(
                f"{urls.redact(index)} is the index's {named}/ folder, but {why} needs {variant}/:"
                " a vllm wheel built for another CUDA than the image's torch fails to load its "
                "kernels",
                exit_code=69,
            )
        links = list_wheels(index, timeout=timeout)
        said = f"WHEEL_INDEX names the {named}/ folder, the variant of {why}"
        return Source(named, index, links, said)
    wanted = variant_url(index, variant)
    try:
        links = list_wheels(wanted, timeout=timeout)
        said = f"the index's {variant}/ folder, the variant of {why}"
        return Source(variant, wanted, links, said)
    except WheelIndexError as exc:
        if exc.status not in (403, 404):
            raise
    existing = list_variants(index, timeout)  # the root's own error: a 404 is no such commit
    listed = ", ".join(f"{name}/" for name in existing) or "no variant folder at all"
    try:
        links = list_wheels(index, timeout=timeout)
    except WheelIndexError as exc:
        if exc.status not in (403, 404):
            raise
        links = []
    if not any(link.name.lower().startswith(f"{PROJECT}-") for link in links):
        raise VariantError(
            f"{urls.redact(index)}: no {variant}/ folder, which {why} needs, and no vllm wheel "
            f"at its root (vLLM's default CUDA variant); the index has {listed}",
            exit_code=69,
        )
    return Source(
        ROOT,
        index,
        links,
        f"the index has no {variant}/ folder (it has {listed}), so the root's wheel (vLLM's "
        "default CUDA variant) is judged by its own CUDA",
    )


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
    links = []
    for href in _page_links(page, timeout):
        url, _, fragment = href.partition("#")
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
        f"--wheel-index URL`, `--build-arg WHEEL_INDEX=URL`; the page is "
        f"<url>/<variant>/{PROJECT}/, the variant folder of the base's torch CUDA (cu130/ for "
        f"13.0), or <url>/{PROJECT}/ where the root's wheel is of that CUDA (vLLM keeps a wheel "
        "of every main-branch commit since v0.5.3 under https://wheels.vllm.ai/<commit>/: its "
        "default CUDA variant at the root, other variants in folders).\n"
        f"  2. VLLM_ENGINE=image: vLLM's nightly image {pins.vllm_image}, the article's engine "
        "as a whole, while Docker Hub still keeps the tag (vLLM keeps the 14 newest nightly "
        "tags; a digest you pulled works as VLLM_IMAGE=<tag>@sha256:<digest>).\n"
        f"  3. VLLM_ENGINE=image VLLM_IMAGE={pins.vllm_image_fallback}: the {pins.vllm_release} "
        f"release as it is, vLLM commit {pins.values.get('VLLM_RELEASE_COMMIT', '?')}: the "
        "article's speculator.py byte for byte, but not the article's engine."
    )
