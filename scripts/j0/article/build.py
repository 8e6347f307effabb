"""`j0 overlay build` and `verify`: make the article's speculator.py (or its prefix-safe variant),
and say what one is.

Standard library only (the image build runs patch_base on the base image's Python).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from j0 import errors
from j0.article.identity import (
    ARTICLE,
    AUDIT,
    AUDIT_PINS,
    BASE,
    OTHER,
    PREFIX_SAFE,
    Identity,
    diff_summary,
    identify,
    j0_pieces,
)
from j0.article.patching import apply_patch
from j0.article.releases import Release, release_of, releases
from j0.article.variants import ARTICLE_VARIANT, VariantPatch, check_variant_name, variant_patch
from j0.edge.atomic import sha256_bytes, sha256_file, write_bytes_atomic
from j0.errors import J0Error
from j0.pins import Pins, load_pins
from j0.terminal import sink


def check_patch_file(pins: Pins, release: str | None = None) -> None:
    pinned = release_of(pins, release)
    actual = sha256_file(pinned.patch_file)
    if actual != pinned.patch_sha256:
        raise J0Error(
            f"{pinned.patch_file}: sha256 {actual}, expected {pinned.patch_sha256} "
            f"({pinned.key('PATCH_SHA256')} in {pins.pins_path}); the committed patch was changed"
        )


def patch_base(
    base: bytes,
    origin: str,
    pins: Pins,
    allow_base_drift: bool = False,
    tool: str | None = None,
    release: str | None = None,
) -> bytes:
    """Check the base's hash, apply the patch, check the result's hash; return the result. For
    `release` (None: the article's c50aca14 = vLLM 0.33.0), that release's pins and patch."""
    pinned = release_of(pins, release)
    check_patch_file(pins, release)
    base_sha = sha256_bytes(base)
    drifted = base_sha != pinned.base_sha256
    if drifted and not allow_base_drift:
        raise J0Error(
            f"{origin}: base speculator.py has sha256 {base_sha}, expected {pinned.base_sha256} "
            f"({pinned.label}). The base changed; "
            "refusing to patch. Use the pinned base, or pass --allow-base-drift to try anyway "
            "(the patch must still apply cleanly)." + _other_release_hint(base_sha, pins, pinned)
        )
    patched = apply_patch(base, pinned.patch_file, tool)
    patched_sha = sha256_bytes(patched)
    if drifted:
        sink.warn(
            f"warning: {origin}: base sha256 {base_sha} is not the pinned {pinned.base_sha256}; "
            f"the patch applied cleanly, result sha256 {patched_sha} (not the article's file)"
        )
    elif patched_sha != pinned.patched_sha256:
        raise J0Error(
            f"{origin}: patched file has sha256 {patched_sha}, expected {pinned.patched_sha256}"
        )
    return patched


def _other_release_hint(base_sha: str, pins: Pins, pinned: Release) -> str:
    """Where the base is another pinned release's, the option that builds for it."""
    for other in releases(pins):
        if other.release != pinned.release and other.value("BASE_SHA256") == base_sha:
            option = "" if other.is_default else f" --vllm {other.release}"
            return f" This is vLLM {other.release}'s file: `j0 overlay build{option}` patches it."
    return ""


def check_variant_patch_file(variant: VariantPatch, pins: Pins) -> None:
    actual = sha256_file(variant.patch_file)
    if actual != variant.patch_sha256:
        raise J0Error(
            f"{variant.patch_file}: sha256 {actual}, expected {variant.patch_sha256} (the "
            f"{variant.name} variant's patch sha256 in {pins.pins_path}); the committed patch was "
            "changed"
        )


def patch_article(
    article: bytes,
    origin: str,
    pins: Pins,
    variant: VariantPatch,
    tool: str | None = None,
    release: str | None = None,
) -> bytes:
    """Apply a variant's patch on top of the article's file (the same no-fuzz rules) and check
    the result's pinned sha256. `article` must be the article's file: its hash is checked first."""
    pinned = release_of(pins, release)
    check_variant_patch_file(variant, pins)
    if sha256_bytes(article) != pinned.patched_sha256:
        raise J0Error(
            f"{origin}: the {variant.name} patch goes on top of the article's file (sha256 "
            f"{pinned.patched_sha256}); this file has sha256 {sha256_bytes(article)}"
        )
    result = apply_patch(article, variant.patch_file, tool)
    result_sha = sha256_bytes(result)
    if result_sha != variant.sha256:
        raise J0Error(
            f"{origin}: the {variant.name} file has sha256 {result_sha}, expected {variant.sha256}"
        )
    return result


def build_variant(
    base: bytes,
    origin: str,
    pins: Pins,
    variant: str = ARTICLE_VARIANT,
    allow_base_drift: bool = False,
    tool: str | None = None,
    release: str | None = None,
) -> bytes:
    """The file of `variant` from vLLM's base file: the article's (patch_base), then for another
    variant its patch on top. A drifted base (allowed) gives an unpinned article's file, and the
    variant's patch is then applied without a hash to check (said on stderr)."""
    article = patch_base(base, origin, pins, allow_base_drift, tool, release)
    if variant == ARTICLE_VARIANT:
        return article
    patch = variant_patch(pins, variant, release)
    if sha256_bytes(article) == release_of(pins, release).patched_sha256:
        return patch_article(article, origin, pins, patch, tool, release)
    check_variant_patch_file(patch, pins)
    result = apply_patch(article, patch.patch_file, tool)
    sink.warn(
        f"warning: {origin}: drifted base: the {variant} patch applied cleanly on top, result "
        f"sha256 {sha256_bytes(result)} (not the pinned {patch.sha256})"
    )
    return result


def audit_patch_file(pins: Pins, release: str | None = None) -> Path:
    """overlay/jetspec-j0-audit.patch (a later release's own), checked against its sha256 pin."""
    pinned = release_of(pins, release)
    name, pinned_sha = pinned.value("AUDIT_PATCH_FILE"), pinned.value("AUDIT_PATCH_SHA256")
    if not name or not pinned_sha:
        raise J0Error(
            f"{pins.pins_path}: missing {pinned.key('AUDIT_PATCH_FILE')} or "
            f"{pinned.key('AUDIT_PATCH_SHA256')}",
            2,
        )
    path = pins.root / name
    actual = sha256_file(path)
    if actual != pinned_sha:
        raise J0Error(
            f"{path}: sha256 {actual}, expected {pinned_sha} ({pinned.key('AUDIT_PATCH_SHA256')} "
            f"in {pins.pins_path}); the committed audit patch was changed"
        )
    return path


def audit_file(
    data: bytes,
    origin: str,
    pins: Pins,
    variant: str,
    tool: str | None = None,
    release: str | None = None,
) -> bytes:
    """The audited file: `data` (the pinned file of `variant`, checked) with the audit patch on
    top, its result checked against the variant's AUDIT_*_SHA256. Never the served file itself."""
    pinned = release_of(pins, release)
    kind = identify(data, pins).kind
    if kind != pinned.kind(variant):
        raise J0Error(
            f"{origin}: the audit patch goes on the {pinned.kind(variant)} file (its pinned "
            f"sha256); this file is identity={kind} (sha256 {sha256_bytes(data)})"
        )
    result = apply_patch(data, audit_patch_file(pins, release), tool)
    key = pinned.key(AUDIT_PINS[variant])
    expected = pins.values.get(key, "")
    if sha256_bytes(result) != expected:
        raise J0Error(
            f"{origin}: the audited {variant} file has sha256 {sha256_bytes(result)}, expected "
            f"{expected} ({key} in {pins.pins_path})"
        )
    return result


def j0_file(
    base: bytes,
    release: str | None = None,
    variant: str = ARTICLE_VARIANT,
    audit: bool = False,
    *,
    pins: Pins | None = None,
    origin: str = "the base speculator.py",
    tool: str = "python",
) -> bytes:
    """The J0 file's bytes for (release, variant, audit), made in memory from vLLM's unpatched
    `base` of that release: the base's sha256, each patch's and each result's checked against
    overlay/pins.env (a J0Error naming the file, the value and the pin otherwise). release None is
    the article's (c50aca14 = vLLM 0.33.0); variant `article` or `prefix-safe`; audit puts the
    audit patch on top. No file is written and, with the default tool `python`
    (j0.article.unidiff), no program is run."""
    pins = load_pins() if pins is None else pins
    check_variant_name(variant)
    made = build_variant(base, origin, pins, variant, tool=tool, release=release)
    return audit_file(made, origin, pins, variant, tool, release) if audit else made


def _keep_original(out: Path, old: bytes) -> Path:
    """Keep `old` as OUT.orig (or OUT.orig.N when that name holds other bytes); never overwrite."""
    for number in range(1000):
        backup = out.with_name(out.name + ".orig" + (f".{number}" if number else ""))
        if backup.is_file() and backup.read_bytes() == old:
            return backup
        try:
            write_bytes_atomic(backup, old, replace_existing=False)
            return backup
        except FileExistsError:
            continue
    raise J0Error(f"{out}: 1000 .orig copies exist already; clean them up first")


def write_overlay(data: bytes, out: Path) -> str:
    """Write atomically; an existing different file is kept as OUT.orig first. Returns a note."""
    if out.is_file():
        old = out.read_bytes()
        if old == data:
            return f"{out} already holds this file (unchanged)"
        backup = _keep_original(out, old)
        write_bytes_atomic(out, data)
        return f"wrote {out} (the previous file, sha256 {sha256_bytes(old)}, kept as {backup})"
    write_bytes_atomic(out, data)
    return f"wrote {out}"


def speculator_in(directory: Path, pins: Pins) -> Path:
    """The speculator.py inside a directory: the file itself, or where vLLM keeps it below a
    vLLM checkout or site-packages (DIR/vllm/...) or the vllm package (DIR/v1/...)."""
    relpath = Path(pins.speculator_relpath)
    candidates = [
        directory / relpath.name,
        directory / relpath,
        directory / relpath.relative_to(relpath.parts[0]),
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c.relative_to(directory)) for c in candidates)
    raise J0Error(
        f"{directory} is a directory, and holds no speculator.py where vLLM keeps it "
        f"(looked for {looked}); expected a speculator.py file, or a vLLM checkout, "
        "site-packages or vllm package directory",
        exit_code=2,
    )


@dataclass(frozen=True)
class Verdict:
    """What `j0 overlay verify` says of a file: its identity, the lines it prints and its exit
    code (0 the article's, 5 the prefix-safe variant, 3 the base, 6 an audit instrument,
    4 other)."""

    path: Path
    identity: Identity
    lines: list[str]
    exit_code: int

    def to_json(self) -> dict[str, object]:
        return {
            "file": str(self.path),
            "sha256": self.identity.sha256,
            "identity": self.identity.kind,
            "audited": self.identity.audited or None,
            "exit_code": self.exit_code,
            "said": self.lines,
        }


def verdict_of(
    path: Path, pins: Pins, reference: bytes | None, release: str | None = None
) -> Verdict:
    """What the file is (a folder: its speculator.py), and the lines that say so. Exit codes are
    those of `release`'s files (None: the article's c50aca14); a pinned file of another release is
    named, with the option that accepts it, and exits 4."""
    if path.is_dir():
        path = speculator_in(path, pins)
    if not path.is_file():
        raise J0Error(f"{path}: no such file (expected a speculator.py)", exit_code=2)
    data = path.read_bytes()
    pinned = release_of(pins, release)
    identity = identify(data, pins)
    lines = [f"{path}: {identity.line()}"]
    if identity.kind == pinned.kind(ARTICLE):
        if not pinned.is_default:
            lines.append(
                f"this is the article's J0 cut by hand for vLLM {pinned.release} "
                f"({pinned.value('PATCH_FILE')}): the article's J0 on that release, not the "
                "file the article's numbers were made with (c50aca14's)"
            )
        return Verdict(path, identity, lines, errors.OK)
    if identity.kind == pinned.kind(PREFIX_SAFE):
        lines.append(
            "this is the prefix-safe variant: the article's file with "
            f"{pinned.value('PREFIX_SAFE_PATCH_FILE') or 'the prefix-safe patch'} on top (J0 "
            "draws the article's without a prefix-cache hit, the request's own tokens with one); "
            "not the file the article's numbers were made with"
        )
        return Verdict(path, identity, lines, errors.VERIFY_PREFIX_SAFE)
    if identity.kind == pinned.kind(BASE):
        lines.append(f"this is vLLM {pinned.release}'s unpatched file: J0 is absent")
        return Verdict(path, identity, lines, errors.VERIFY_BASE)
    if identity.kind == AUDIT:
        lines.append(
            "refused: this is a J0 audit instrument (the audit patch on "
            f"{'the ' + identity.audited + ' file' if identity.audited else 'an unpinned file'}): "
            "it checks J0's history at every draft step (VLLM_DFLASH_AUDIT), for tests only; "
            "neither the article's file nor the variant, never to be served for results"
        )
        return Verdict(path, identity, lines, errors.VERIFY_AUDIT)
    if identity.role != OTHER:  # a pinned file of another release
        option = f"--vllm {identity.release}" if identity.release else "without --vllm"
        lines.append(
            f"a pinned file of vLLM {identity.release or pins.vllm_release}, not of "
            f"{pinned.label}: `j0 overlay verify {option}` judges it"
        )
        return Verdict(path, identity, lines, errors.VERIFY_OTHER)
    lines.append(
        f"neither the article's file ({pinned.patched_sha256}) nor the base "
        f"({pinned.base_sha256})" + ("" if pinned.is_default else f" of vLLM {pinned.release}")
    )
    lines += [
        f"  {'present' if present else 'MISSING'}: {name}"
        for name, present in j0_pieces(data).items()
    ]
    if reference is None:
        build = "j0 overlay build" + ("" if pinned.is_default else f" --vllm {pinned.release}")
        lines.append(f"diff against the article's file: unavailable (build it with `{build}`)")
    else:
        lines.append("diff against the article's file:")
        lines.append(diff_summary(reference, data).rstrip("\n"))
    return Verdict(path, identity, lines, errors.VERIFY_OTHER)


def verify_file(path: Path, pins: Pins, reference: bytes | None) -> int:
    """Print what the file is; return its exit code (Verdict)."""
    verdict = verdict_of(path, pins, reference)
    sink.say("\n".join(verdict.lines))
    return verdict.exit_code
