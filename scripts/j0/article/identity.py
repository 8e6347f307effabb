"""Say what a speculator.py is: the article's file, the prefix-safe variant of it, the unpatched
base, or something else; for a later vLLM release j0 has J0 files for (j0.article.releases), the
same with the release in the name (`article-0.34.0`, `prefix-safe-0.34.0`, `base-0.34.0`).

Standard library only: the image entrypoint runs this at every start.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from j0.article.releases import releases
from j0.edge.atomic import sha256_bytes
from j0.pins import Pins

ARTICLE = "article"
PREFIX_SAFE = "prefix-safe"  # the article's file + overlay/jetspec-j0-prefix-safe.patch
BASE = "base"
AUDIT = (
    "audit"  # the article's file or the variant + overlay/jetspec-j0-audit.patch: a test instrument
)
OTHER = "other"
# Text only the audited file holds (an audited file whose sha256 is not pinned is still "audit").
AUDIT_MARKER = "def j0_audit_rows("
# The audited files' pins, by the file the audit patch went on (a later release's keys carry its
# prefix: V0340_AUDIT_ARTICLE_SHA256).
AUDIT_PINS = {ARTICLE: "AUDIT_ARTICLE_SHA256", PREFIX_SAFE: "AUDIT_PREFIX_SAFE_SHA256"}
# The identities that run J0 (the article's draws; the variant's equal them without a prefix hit).
J0_KINDS = (ARTICLE, PREFIX_SAFE)

# Each J0 piece, and text that only the patched file holds for it.
J0_PIECES: dict[str, tuple[str, ...]] = {
    "history buffer": ("def _ctx_pool_write_kernel(", "self.ctx_pool = torch.zeros("),
    "noise draw": ("tl.randint(", "CTX_NOISE: tl.constexpr", "ctx_pool=self.ctx_pool"),
    "dump instrumentation": ("VLLM_DFLASH_DUMP", "torch.save(dump"),
    "KV dtype log": ("DFLASH_DRAFT_KV_DTYPES",),
}


@dataclass(frozen=True)
class Identity:
    kind: str
    sha256: str
    audited: str = ""  # for AUDIT: the file the audit patch went on (article, prefix-safe-0.34.0)
    release: str = ""  # a later release's files: its name (kind is then e.g. article-0.34.0)

    @property
    def role(self) -> str:
        """The kind without the release: article, prefix-safe, base, audit or other."""
        return self.kind.removesuffix(f"-{self.release}") if self.release else self.kind

    def line(self) -> str:
        names = {
            ARTICLE: "the article's J0 file",
            PREFIX_SAFE: "the article's J0 file with the prefix-safe patch",
            BASE: "the unpatched vLLM base",
            AUDIT: "a J0 audit instrument"
            + (f" of the {self.audited} file" if self.audited else ", on an unpinned file"),
            OTHER: "other",
        }
        name = names[self.role]
        if self.release and self.role == BASE:
            name = f"vLLM {self.release}'s unpatched file"
        elif self.release and self.role != AUDIT:
            name += f", cut for vLLM {self.release}"
        return f"speculator.py sha256={self.sha256} identity={self.kind} ({name})"


def identify(data: bytes, pins: Pins) -> Identity:
    digest = sha256_bytes(data)
    for release in releases(pins):
        named = "" if release.is_default else release.release
        if digest == release.value("PATCHED_SHA256"):
            return Identity(release.kind(ARTICLE), digest, release=named)
        if digest == release.value("PREFIX_SAFE_SHA256"):
            return Identity(release.kind(PREFIX_SAFE), digest, release=named)
        if digest == release.value("BASE_SHA256"):
            return Identity(release.kind(BASE), digest, release=named)
        for audited, key in AUDIT_PINS.items():
            if digest == release.value(key):
                return Identity(AUDIT, digest, release.kind(audited), release=named)
    if AUDIT_MARKER.encode() in data:
        return Identity(AUDIT, digest)
    return Identity(OTHER, digest)


def j0_pieces(data: bytes) -> dict[str, bool]:
    """Which J0 pieces the file holds (every marker of the piece present)."""
    text = data.decode("utf-8", errors="replace")
    return {name: all(marker in text for marker in markers) for name, markers in J0_PIECES.items()}


def diff_summary(reference: bytes, other: bytes, max_lines: int = 40) -> str:
    """A short unified diff of `other` against `reference`, with line counts."""
    ref_lines = reference.decode("utf-8", errors="replace").splitlines(keepends=True)
    other_lines = other.decode("utf-8", errors="replace").splitlines(keepends=True)
    diff = list(difflib.unified_diff(ref_lines, other_lines, "article", "this file", n=1))
    added = sum(1 for x in diff if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in diff if x.startswith("-") and not x.startswith("---"))
    hunks = sum(1 for x in diff if x.startswith("@@"))
    head = f"{hunks} hunk(s): {removed} line(s) of the article's file missing, {added} added"
    shown = [x if x.endswith("\n") else x + "\n" for x in diff[:max_lines]]
    more = f"... ({len(diff) - max_lines} more diff lines)\n" if len(diff) > max_lines else ""
    return head + "\n" + "".join(shown) + more
