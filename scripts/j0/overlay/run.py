"""`j0 overlay`'s work, apart from its parsing (cli.py): run_build(BuildOptions) -> Built and
run_verify(VerifyOptions) -> Verdict (j0.article.build's type). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from j0.article import build as overlay
from j0.article.build import Verdict
from j0.article.identity import Identity, identify
from j0.article.releases import Release, release_of
from j0.article.variants import ARTICLE_VARIANT, default_audit_output, default_output
from j0.edge.atomic import sha256_bytes
from j0.engine.source import base_sources
from j0.errors import J0Error
from j0.pins import Pins, load_pins


@dataclass(frozen=True)
class BuildOptions:
    """Where vLLM's unpatched file comes from (at most one of base, site_packages, installed,
    from_image; none: the pinned wheel), what to make of it, and where it goes (None: the
    variant's default place)."""

    base: Path | None = None
    site_packages: Path | None = None
    installed: bool = False
    from_image: str | None = None
    variant: str = ARTICLE_VARIANT
    allow_base_drift: bool = False
    tool: str | None = None
    audit: bool = False
    output: Path | None = None
    vllm: str | None = None  # the release (None: the article's c50aca14 = VLLM_RELEASE)


@dataclass(frozen=True)
class Built:
    """What a build wrote: the file, its identity, the base it was made from, and the note the
    write left (written, unchanged, or the previous file kept as OUT.orig)."""

    file: Path
    identity: Identity
    variant: str
    audit: bool
    base: str
    base_sha256: str
    said: str

    def text(self) -> str:
        return f"{self.said}\n{self.identity.line()}"

    def to_json(self) -> dict[str, object]:
        return {
            "file": str(self.file),
            "sha256": self.identity.sha256,
            "identity": self.identity.kind,
            "variant": self.variant,
            "audit": self.audit,
            "base": self.base,
            "base_sha256": self.base_sha256,
            "said": self.said,
        }


@dataclass(frozen=True)
class VerifyOptions:
    file: Path
    vllm: str | None = None  # whose exit codes (None: the article's release)


def _base(options: BuildOptions, pins: Pins, release: Release) -> base_sources.BaseFile:
    if options.base is not None:
        return base_sources.from_file(options.base)
    if options.site_packages is not None:
        return base_sources.from_site_packages(options.site_packages, pins)
    if options.installed:
        return base_sources.from_installed(pins)
    if options.from_image:
        return base_sources.from_image(options.from_image, pins)
    return base_sources.from_wheel(pins, release=release.release)


def run_build(options: BuildOptions) -> Built:
    """Patch the base into the variant's file (and the audit on top where asked), checked at
    every step against the pins, and write it atomically."""
    pins = load_pins()
    release = release_of(pins, options.vllm)
    base = _base(options, pins, release)
    patched = overlay.build_variant(
        base.data,
        base.origin,
        pins,
        options.variant,
        options.allow_base_drift,
        options.tool,
        release.release,
    )
    default = default_output(pins, options.variant, release.release)
    if options.audit:
        patched = overlay.audit_file(
            patched, base.origin, pins, options.variant, options.tool, release.release
        )
        default = default_audit_output(pins, options.variant, release.release)
    out = options.output or default
    said = overlay.write_overlay(patched, out)
    return Built(
        file=out,
        identity=identify(patched, pins),
        variant=options.variant,
        audit=options.audit,
        base=base.origin,
        base_sha256=sha256_bytes(base.data),
        said=said,
    )


def reference(pins: Pins, release: Release | None = None) -> bytes | None:
    """The article's file (of `release`, default the article's own), if it can be had without
    a download: the default overlay, else the cached wheel plus the patch."""
    release = release or release_of(pins)
    default = default_output(pins, ARTICLE_VARIANT, release.release)
    if default.is_file() and identify(default.read_bytes(), pins).kind == release.kind("article"):
        return default.read_bytes()
    wheels = sorted(base_sources.wheel_cache_dir().glob(f"vllm-{release.release}-*.whl"))
    if not wheels:
        return None
    try:
        base = base_sources.from_wheel(pins, release=release.release)
        return overlay.patch_base(base.data, base.origin, pins, release=release.release)
    except J0Error:
        return None


def run_verify(options: VerifyOptions) -> Verdict:
    """What the file is, against the pins and (for a diff) the article's file where one is at
    hand."""
    pins = load_pins()
    release = release_of(pins, options.vllm)
    return overlay.verdict_of(options.file, pins, reference(pins, release), release.release)
