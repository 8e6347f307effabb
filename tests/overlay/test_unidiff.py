"""j0.article.unidiff: j0's own exact applier of one-file unified diffs, held to `git apply` (the
reference) on the real J0 patches and on diffs made by Python's difflib, and refusing what git
refuses: a context line that differs (no fuzz), a hunk that moved past the previous one, a
malformed hunk.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from j0.article import unidiff
from j0.errors import J0Error
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]


def git_apply(base: bytes, patch: bytes, tmp: Path) -> bytes | None:
    """What `git apply` makes of `patch` on `base` (at the patch's own +++ path), or None where it
    refuses."""
    target = next(x for x in patch.decode().splitlines() if x.startswith("+++ "))[6:]
    work = tmp / "git"
    (work / target).parent.mkdir(parents=True, exist_ok=True)
    (work / target).write_bytes(base)
    (tmp / "p.diff").write_bytes(patch)
    done = subprocess.run(
        ["git", "apply", "-p1", str(tmp / "p.diff")],
        cwd=work,
        capture_output=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp)},
    )
    return (work / target).read_bytes() if done.returncode == 0 else None


def diff(old: str, new: str, n: int = 3) -> bytes:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), "a/f", "b/f", n=n
    )
    return "".join(lines).encode()


def test_the_j0_patches_give_what_git_apply_gives(
    pins: Pins, base_bytes: bytes, tmp_path: Path
) -> None:
    overlay = ROOT / "overlay"
    article = unidiff.apply(base_bytes, (overlay / "jetspec-j0.patch").read_bytes(), "p")
    assert article == git_apply(base_bytes, (overlay / "jetspec-j0.patch").read_bytes(), tmp_path)
    for name in ("jetspec-j0-prefix-safe.patch", "jetspec-j0-audit.patch"):
        patch = (overlay / name).read_bytes()
        assert unidiff.apply(article, patch, name) == git_apply(article, patch, tmp_path / name)


lines_st = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "x = 1\n", "    y\n", "\n"]), max_size=30)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(old=lines_st, edits=st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["", "N\n"]))))
def test_difflibs_diffs_apply_as_git_applies_them(
    old: list[str], edits: list[tuple[int, str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    new = list(old)
    for at, text in edits:  # "" removes the line at `at`, "N\n" inserts one there
        at = min(at, len(new))
        if text:
            new.insert(at, text)
        elif at < len(new):
            del new[at]
    base, target = "".join(old), "".join(new)
    patch = diff(base, target)
    if not patch:
        return
    assert unidiff.apply(base.encode(), patch, "p") == target.encode()
    # Lines added above every hunk: git finds the hunks moved, or refuses a hunk of line 1 (it
    # must stay at the start); j0 does the same.
    moved = ("moved\n" * 3 + base).encode()
    try:
        ours: bytes | None = unidiff.apply(moved, patch, "p")
    except J0Error:
        ours = None
    assert ours == git_apply(moved, patch, tmp_path_factory.mktemp("g"))


def test_a_changed_context_line_is_refused_naming_hunk_and_line(tmp_path: Path) -> None:
    base = "".join(f"line {i}\n" for i in range(40))
    patch = diff(base, base.replace("line 20\n", "LINE 20\n"))
    drifted = base.replace("line 18\n", "line 18 changed\n")
    assert git_apply(drifted.encode(), patch, tmp_path) is None  # git refuses it too (no fuzz)
    with pytest.raises(J0Error) as info:
        unidiff.apply(drifted.encode(), patch, "some.patch")
    said = str(info.value)
    assert "some.patch: hunk 1 (@@ -18,7 +18,7 @@) does not apply" in said
    assert "line 19 is b'line 18 changed\\n', the hunk expects b'line 18\\n'" in said


def test_a_hunk_is_never_taken_before_the_previous_one() -> None:
    """Stricter than `git apply`, which looks for each hunk in the whole file: a hunk whose lines
    stand only above the previous hunk's is refused (the file is not the one the patch was cut
    for; the J0 patches' results are pinned anyway)."""
    base = "".join(f"line {i}\n" for i in range(60))
    patch = diff(base, base.replace("line 10\n", "TEN\n").replace("line 50\n", "FIFTY\n"))
    block = "".join(f"line {i}\n" for i in range(47, 54))
    text = base.replace(block, "").replace("line 0\n", block)
    with pytest.raises(J0Error, match=r"hunk 2 .* stand nowhere in the file after hunk 1"):
        unidiff.apply(text.encode(), patch, "p")


def test_no_newline_at_end_of_file_on_either_side(tmp_path: Path) -> None:
    pairs = [("a\nb\nc", "a\nB\nc"), ("a\nb\nc\n", "a\nb\nc"), ("a\nb\nc", "a\nb\nc\nd\n")]
    for n, (old, new) in enumerate(pairs):
        (tmp_path / f"o{n}").write_text(old)
        (tmp_path / f"n{n}").write_text(new)
        done = subprocess.run(
            ["git", "diff", "--no-index", f"o{n}", f"n{n}"], cwd=tmp_path, capture_output=True
        )
        patch = done.stdout.replace(f"a/o{n}".encode(), b"a/f").replace(f"b/n{n}".encode(), b"b/f")
        assert b"\\ No newline at end of file" in patch
        assert unidiff.apply(old.encode(), patch, "p") == new.encode()
        assert git_apply(old.encode(), patch, tmp_path / f"g{n}") == new.encode()


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        (b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n", "holds 2 old and 1 new lines"),
        (b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n+B\n", "starts with none of"),
        (b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n--- a/g\n+++ b/g\n", "a second file's header"),
        (b"@@ -1 +1 @@\n-a\n+A\n", "a hunk before the file's ---/+++ header"),
        (b"--- a/f\n+++ b/f\n", "no hunk"),
        (b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\ntrailing words\n", "outside a hunk"),
    ],
)
def test_a_malformed_diff_is_refused_naming_the_line(patch: bytes, why: str) -> None:
    with pytest.raises(J0Error) as info:
        unidiff.apply(b"a\nb\n", patch, "x.patch")
    assert str(info.value).startswith("x.patch:") and why in str(info.value)
    assert "expected a unified diff of one file" in str(info.value)
