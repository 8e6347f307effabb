"""The J0 audit patch (overlay/jetspec-j0-audit.patch): applied with git apply and GNU patch on
the article's file (made from the real wheel with GNU patch, conftest.py) and on the prefix-safe
variant, each result's pinned sha256 (written here, not read from the pins), `j0 overlay build
--audit`, and `verify` refusing the result as identity=audit (exit 6)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from j0.cli import main
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
AUDIT_PATCH = ROOT / "overlay" / "jetspec-j0-audit.patch"
VARIANT_PATCH = ROOT / "overlay" / "jetspec-j0-prefix-safe.patch"
AUDIT_ARTICLE = "28419b0c387d44aae2218716a79f05b996f82099fa4ae502f451fafef49440cd"
AUDIT_PREFIX_SAFE = "995f1c9a72c3117d4d5d3ae351a5d39aa0b6e704dd2bf253fa121a9943008d41"


def _apply(data: bytes, patch: Path, work: Path, relpath: str, tool: str) -> bytes:
    target = work / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    if tool == "git":
        cmd = ["git", "apply", "-p1", str(patch)]
    else:
        cmd = ["patch", "-p1", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "-i", str(patch)]
    subprocess.run(cmd, cwd=work, check=True, capture_output=True)
    return target.read_bytes()


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_the_audit_patch_goes_on_both_files(
    article_file: Path, pins: Pins, tmp_path: Path, tool: str
) -> None:
    rel = pins.speculator_relpath
    article = article_file.read_bytes()
    audited = _apply(article, AUDIT_PATCH, tmp_path / "a", rel, tool)
    assert hashlib.sha256(audited).hexdigest() == AUDIT_ARTICLE
    variant = _apply(article, VARIANT_PATCH, tmp_path / "v", rel, "git")
    audited_variant = _apply(variant, AUDIT_PATCH, tmp_path / "av", rel, tool)
    assert hashlib.sha256(audited_variant).hexdigest() == AUDIT_PREFIX_SAFE
    text = audited_variant.decode()
    # The variant's fill and the audit are both there; the article's lines are untouched.
    assert "def fill_ctx_pool_cached_prefix(" in text and "def j0_audit_rows(" in text
    assert "self.j0_audit.check_step(self, input_batch, num_rejected, num_reqs)" in text
    removed = [
        line
        for line in subprocess.run(
            ["diff", str(tmp_path / "a" / rel), str(article_file)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.splitlines()
        if line.startswith(">")
    ]
    assert removed == []  # the audit only adds lines


@pytest.mark.parametrize("variant", ["article", "prefix-safe"])
def test_build_audit_and_verify_refuses_it(
    article_file: Path,
    base_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    variant: str,
) -> None:
    out = tmp_path / "speculator.py"
    args = ["overlay", "build", "--base", str(base_file), "--audit", "-o", str(out)]
    assert main([*args, "--variant", variant]) == 0
    expected = AUDIT_ARTICLE if variant == "article" else AUDIT_PREFIX_SAFE
    assert hashlib.sha256(out.read_bytes()).hexdigest() == expected
    capsys.readouterr()
    assert main(["overlay", "verify", str(out)]) == 6
    text = capsys.readouterr().out
    assert f"identity=audit (a J0 audit instrument of the {variant} file)" in text
    assert "refused" in text and "never to be served" in text
    # An audited file edited afterwards (no pinned sha256) is still named an audit.
    edited = tmp_path / "edited.py"
    edited.write_bytes(out.read_bytes() + b"# edited\n")
    assert main(["overlay", "verify", str(edited)]) == 6
    assert "identity=audit (a J0 audit instrument, on an unpinned file)" in capsys.readouterr().out
    # The article's file itself is still the article's (exit 0).
    assert main(["overlay", "verify", str(article_file)]) == 0


def test_an_edited_audit_patch_is_refused(
    base_file: Path, pins: Pins, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "overlay", root / "overlay", ignore=shutil.ignore_patterns("vllm"))
    patch = root / "overlay" / "jetspec-j0-audit.patch"
    patch.write_text(patch.read_text().replace("J0_AUDIT_FIRST = 4", "J0_AUDIT_FIRST = 5"))
    from j0.article.build import audit_patch_file
    from j0.errors import J0Error
    from j0.pins import load_pins

    with pytest.raises(J0Error, match=r"sha256 .* expected .*AUDIT_PATCH_SHA256.*changed"):
        audit_patch_file(load_pins(root))


def test_the_audit_goes_only_on_a_pinned_file(
    base_file: Path, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    from j0.article.build import audit_file
    from j0.errors import J0Error

    with pytest.raises(J0Error, match=r"goes on the article file .* identity=base"):
        audit_file(base_file.read_bytes(), str(base_file), pins, "article")
