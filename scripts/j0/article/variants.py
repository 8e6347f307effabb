"""The speculator.py variants j0 builds: `article` (the article's file, the default) and
`prefix-safe` (the article's file with overlay/jetspec-j0-prefix-safe.patch on top).

The prefix-safe patch fills a request's J0 history row at the positions its prefix-cache hit never
schedules, from vLLM's own copy of the request's committed tokens; without a hit its J0 draws are
the article's. Its pins (PREFIX_SAFE_PATCH_FILE, PREFIX_SAFE_PATCH_SHA256, PREFIX_SAFE_SHA256)
live in overlay/pins.env beside the article's; a later release's (j0.article.releases) carry its
key prefix (V0340_PREFIX_SAFE_PATCH_FILE, ...). Standard library only (the image build reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from j0.article.identity import ARTICLE, PREFIX_SAFE
from j0.article.releases import release_of
from j0.errors import USAGE, J0Error
from j0.pins import Pins

# A variant is named by the identity of the file it gives (j0.article.identity).
ARTICLE_VARIANT = ARTICLE
VARIANTS = (ARTICLE_VARIANT, PREFIX_SAFE)

# The pins of the one patch applied on top of the article's file, by variant.
_PIN_KEYS = {
    PREFIX_SAFE: ("PREFIX_SAFE_PATCH_FILE", "PREFIX_SAFE_PATCH_SHA256", "PREFIX_SAFE_SHA256"),
}


@dataclass(frozen=True)
class VariantPatch:
    """A patch applied on top of the article's file, and the sha256 of what it gives."""

    name: str
    patch_file: Path
    patch_sha256: str
    sha256: str


def check_variant_name(name: str, where: str = "variant") -> str:
    """`name` when it is a known variant; else a usage error naming the choices."""
    if name not in VARIANTS:
        raise J0Error(
            f"{where} {name!r}: expected one of {', '.join(VARIANTS)} (article: the article's "
            "file, the default; prefix-safe: the article's file made safe under prefix caching)",
            USAGE,
        )
    return name


def variant_patch(pins: Pins, name: str, release: str | None = None) -> VariantPatch:
    """The pins of variant `name` (not `article`, which is the base patch itself) for `release`
    (None: the article's own)."""
    check_variant_name(name)
    if name == ARTICLE_VARIANT:
        raise J0Error("the article's file has no patch on top of itself", USAGE)
    pinned = release_of(pins, release)
    keys = [pinned.key(key) for key in _PIN_KEYS[name]]
    missing = [key for key in keys if not pins.values.get(key)]
    if missing:
        raise J0Error(
            f"{pins.pins_path}: missing {', '.join(missing)} (the {name} variant's pins)",
            exit_code=2,
        )
    file_key, patch_key, result_key = keys
    return VariantPatch(
        name=name,
        patch_file=pins.root / pins.values[file_key],
        patch_sha256=pins.values[patch_key],
        sha256=pins.values[result_key],
    )


def variant_sha256s(pins: Pins, release: str | None = None) -> dict[str, str]:
    """The pinned result sha256 of every variant whose pins are present, article first."""
    pinned = release_of(pins, release)
    found = {ARTICLE_VARIANT: pinned.patched_sha256}
    for name, (_, _, result_key) in _PIN_KEYS.items():
        value = pinned.value(result_key)
        if value:
            found[name] = value
    return found


def default_output(pins: Pins, name: str, release: str | None = None) -> Path:
    """Where `j0 overlay build` writes a variant without -o: the article's file at
    overlay/<relpath> (the reference `verify` diffs against), another at overlay/<name>/<relpath>;
    a later release's at overlay/vllm-<release>/<name>/<relpath>, beside its patches (all ignored
    by git)."""
    pinned = release_of(pins, release)
    if name == ARTICLE_VARIANT and pinned.is_default:
        return pins.default_overlay_path
    return pinned.output_root() / name / pins.speculator_relpath


def default_audit_output(pins: Pins, name: str, release: str | None = None) -> Path:
    """Where `j0 overlay build --audit` writes without -o: overlay/audit/<variant>/<relpath>, or
    overlay/vllm-<release>/audit/<variant>/<relpath> for a later release."""
    return release_of(pins, release).output_root() / "audit" / name / pins.speculator_relpath
