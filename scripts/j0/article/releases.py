"""The vLLM releases j0 has J0 files for, each with its pins: the article's own (c50aca14, whose
speculator.py is vLLM 0.33.0's: the unprefixed keys of overlay/pins.env, the default of every
command) and later releases whose file changed, with patches cut by hand against it (keys
prefixed `V<digits>_`, e.g. V0340_ for 0.34.0, and patches under overlay/vllm-<release>/).

A release's identities carry its name (`article-0.34.0`, `prefix-safe-0.34.0`, `base-0.34.0`);
the article's own keep theirs (`article`, `prefix-safe`, `base`). Standard library only (the image
build and the entrypoint read it on the base image's Python).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from j0.errors import USAGE, J0Error
from j0.pins import Pins

_PREFIXED_RELEASE = re.compile(r"^(V[0-9]+_)RELEASE$")
# The article's own release reads these from the Pins fields (load_pins checked them; a caller may
# hand in Pins with fields of its own).
_DEFAULT_FIELDS = {
    "BASE_SHA256": "base_sha256",
    "PATCHED_SHA256": "patched_sha256",
    "PATCH_SHA256": "patch_sha256",
}


@dataclass(frozen=True)
class Release:
    """One release's pins, read from overlay/pins.env by their keys (`prefix` + the name)."""

    pins: Pins
    release: str
    prefix: str  # "" for the article's own release, "V0340_" for 0.34.0

    @property
    def is_default(self) -> bool:
        return self.prefix == ""

    def key(self, name: str) -> str:
        """The pins key of `name` for this release (PATCH_SHA256 -> V0340_PATCH_SHA256)."""
        return self.prefix + name

    def value(self, name: str) -> str:
        """The pin `name` of this release; "" where the file lacks it."""
        if self.is_default and name in _DEFAULT_FIELDS:
            return str(getattr(self.pins, _DEFAULT_FIELDS[name]))
        return self.pins.values.get(self.key(name), "")

    def required(self, name: str) -> str:
        value = self.value(name)
        if not value:
            raise J0Error(
                f"{self.pins.pins_path}: missing {self.key(name)} (vLLM {self.release}'s pins)", 2
            )
        return value

    @property
    def commit(self) -> str:
        return self.pins.vllm_commit if self.is_default else self.required("COMMIT")

    @property
    def image(self) -> str:
        return self.pins.vllm_image if self.is_default else self.required("IMAGE")

    @property
    def base_sha256(self) -> str:
        return self.required("BASE_SHA256")

    @property
    def patched_sha256(self) -> str:
        return self.required("PATCHED_SHA256")

    @property
    def patch_file(self) -> Path:
        return (
            self.pins.patch_file
            if self.is_default
            else self.pins.root / self.required("PATCH_FILE")
        )

    @property
    def patch_sha256(self) -> str:
        return self.required("PATCH_SHA256")

    @property
    def label(self) -> str:
        """How messages name it: `vLLM c50aca14 / 0.33.0`, `vLLM 0.34.0 (62d4bc3c7)`."""
        if self.is_default:
            return f"vLLM {self.commit[:8]} / {self.release}"
        return f"vLLM {self.release} ({self.commit[:9]})"

    def kind(self, role: str) -> str:
        """The identity of this release's file of `role` (article, prefix-safe, base)."""
        return role if self.is_default else f"{role}-{self.release}"

    def output_root(self) -> Path:
        """The folder `j0 overlay build` writes this release's files below by default (git
        ignores what is built there): overlay/ for the article's, overlay/vllm-<release>/<variant>
        for another's (beside its committed patches)."""
        if self.is_default:
            return self.pins.root / "overlay"
        return self.pins.root / "overlay" / f"vllm-{self.release}"


def release_prefix(release: str) -> str:
    """The key prefix of a release: 0.34.0 -> V0340_."""
    return "V" + "".join(release.split(".")) + "_"


def releases(pins: Pins) -> list[Release]:
    """Every release the pins hold J0 files for, the article's own first."""
    found = [Release(pins, pins.vllm_release, "")]
    for key, value in pins.values.items():
        match = _PREFIXED_RELEASE.match(key)
        if match and value:
            found.append(Release(pins, value, match.group(1)))
    return found


def release_names(pins: Pins) -> list[str]:
    return [r.release for r in releases(pins)]


def release_of(pins: Pins, release: str | None = None) -> Release:
    """The pins of `release` (None: the article's own, the default); a usage error naming the
    releases the pins know for any other."""
    if release is None or release == pins.vllm_release:
        return Release(pins, pins.vllm_release, "")
    for found in releases(pins):
        if found.release == release:
            if found.prefix != release_prefix(release):
                raise J0Error(
                    f"{pins.pins_path}: {found.key('RELEASE')}={release}, expected the key "
                    f"{release_prefix(release)}RELEASE for that release",
                    2,
                )
            return found
    raise J0Error(
        f"--vllm {release}: j0 has no J0 files pinned for vLLM {release}; expected one of "
        f"{', '.join(release_names(pins))} ({pins.vllm_release}, the article's c50aca14 file, "
        "is the default)",
        USAGE,
    )
