"""The version guard: the vLLM releases the plugin was proven on, and whether the installed vLLM
is one of them (its version and its speculator.py's sha256 both), found without importing vLLM's
engine. Standard library only: this runs in every vLLM process, at plugin load.

A release is proven when overlay/pins.env holds its J0 pins under one key prefix, V<digits>
(V0340 for 0.34.0): `<KEY>_RELEASE`, `<KEY>_COMMIT`, `<KEY>_BASE_SHA256` and the patches'.
The pins and the patches travel inside the installed package (`data/`, put there when the
wheel is built, setup.py) or, in a checkout, are the checkout's own (j0.pins.project_root).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from j0.article.releases import Release, releases
from j0.pins import PINS_RELPATH, Pins, load_pins

# Where a built wheel keeps the pins and patches: j0/plugin/data/overlay/...
DATA_ROOT = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Installed:
    version: str | None
    speculator: Path | None
    sha256: str | None


@dataclass(frozen=True)
class ReleaseVerdict:
    release: Release | None  # None: refused
    installed: Installed
    reason: str  # why refused; "" when proven


def plugin_pins() -> Pins:
    """The pins the plugin reads: the package's own copy when the wheel carries one, else the
    checkout's (an editable install)."""
    if (DATA_ROOT / PINS_RELPATH).is_file():
        return load_pins(DATA_ROOT)
    return load_pins()


def proven_releases(pins: Pins) -> list[Release]:
    """The releases with J0 files pinned under a key prefix (the article's own, 0.33.0, has no
    plugin interface: it is not one)."""
    return [r for r in releases(pins) if not r.is_default]


def words(release: Release) -> str:
    return (
        f"vLLM {release.release} (commit {release.commit}, speculator.py sha256 "
        f"{release.base_sha256})"
    )


def installed(relpath: str) -> Installed:
    """This Python's vLLM: its version (its distribution's metadata) and speculator.py."""
    try:
        version: str | None = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        version = None
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return Installed(version, None, None)
    path = Path(next(iter(spec.submodule_search_locations))).parent / relpath
    if not path.is_file():
        return Installed(version, path, None)
    return Installed(version, path, hashlib.sha256(path.read_bytes()).hexdigest())


def supported(releases: list[Release]) -> str:
    return "; ".join(words(r) for r in releases) or "none (no V<release>_* pins)"


def check(pins: Pins, found: Installed) -> ReleaseVerdict:
    """The proven release the installed vLLM is, or why it is refused."""
    releases = proven_releases(pins)
    for release in releases:
        if found.version == release.release and found.sha256 == release.base_sha256:
            return ReleaseVerdict(release, found, "")
    if found.speculator is None:
        what = "no vLLM is importable"
    elif found.sha256 is None:
        what = f"vLLM {found.version} has no {found.speculator}"
    else:
        what = f"vLLM {found.version} with {found.speculator} sha256 {found.sha256}"
    return ReleaseVerdict(
        None, found, f"{what}: not a vLLM it was proven on (supported: {supported(releases)})"
    )
