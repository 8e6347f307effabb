"""The J0 file the plugin runs, as text: the installed vLLM's speculator.py (its sha256 one that
a release was proven on), the release's J0 patches applied in memory, every result checked
against its pinned sha256; with another seed than the pinned one, its one literal changed.
Standard library only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from j0.edge.atomic import sha256_bytes
from j0.pins import Pins
from j0.plugin.options import ARTICLE, J0Options
from j0.plugin.proven import Release, ReleaseVerdict, check, installed, plugin_pins


@dataclass(frozen=True)
class J0Source:
    """The J0 file's text, the sha256 of the proven file it was made as (before a seed change)
    and of the text itself, and what it is called."""

    text: str
    proven_sha256: str
    sha256: str
    identity: str  # article, prefix-safe or audit (an audited article or prefix-safe file)
    patches: tuple[str, ...]  # the patch files applied, in order (relative to the pins' root)


def seed_literal(seed: int) -> str:
    return f"tl.randint({seed},"


def with_seed(text: str, pinned: int, seed: int) -> str:
    """The J0 file with its seed changed: the literal `tl.randint(PINNED,` exactly once, else
    refused (another file than the one proven, or a patch that draws elsewhere too)."""
    if seed == pinned:
        return text
    found = text.count(seed_literal(pinned))
    if found != 1:
        raise ValueError(
            f"the J0 file holds `{seed_literal(pinned)}` {found} times; expected once (J0's "
            f"seed): cannot run seed {seed}"
        )
    return text.replace(seed_literal(pinned), seed_literal(seed))


def j0_source(
    base: bytes, release: Release, options: J0Options, pins: Pins, origin: str
) -> J0Source:
    """The J0 file for `options` from vLLM's `base` file, each step's sha256 checked."""
    from j0.article.build import j0_file
    from j0.article.identity import identify
    from j0.errors import J0Error

    try:
        content = j0_file(
            base, release.release, options.variant, options.audit, pins=pins, origin=origin
        )
    except J0Error as error:
        raise ValueError(str(error)) from None
    text = with_seed(content.decode("utf-8"), pins.j0_seed, options.seed)
    return J0Source(
        text=text,
        proven_sha256=sha256_bytes(content),
        sha256=sha256_bytes(text.encode("utf-8")),
        identity=identify(content, pins).kind,
        patches=_patches(release, options),
    )


def _patches(release: Release, options: J0Options) -> tuple[str, ...]:
    """The patch files applied, as the pins name them (relative to the pins' folder)."""
    keys = ["PATCH_FILE"]
    if options.variant != ARTICLE:
        keys.append("PREFIX_SAFE_PATCH_FILE")
    if options.audit:
        keys.append("AUDIT_PATCH_FILE")
    return tuple(release.value(key) or "?" for key in keys)


@functools.cache
def source_for(options: J0Options) -> tuple[ReleaseVerdict, J0Source]:
    """This Python's vLLM, proven, and the J0 file of `options` made from its speculator.py;
    ValueError when that vLLM is not a proven one or the file cannot be made."""
    pins = plugin_pins()
    verdict = check(pins, installed(pins.speculator_relpath))
    if verdict.release is None or verdict.installed.speculator is None:
        raise ValueError(f"j0-plugin: {verdict.reason}")
    base = verdict.installed.speculator.read_bytes()
    return verdict, j0_source(
        base, verdict.release, options, pins, str(verdict.installed.speculator)
    )
