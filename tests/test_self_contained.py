"""The repository cites only itself: no file of the checkout (git ls-files: tracked, and untracked
ones not ignored) names a place outside it that a fresh clone lacks: the workplace's shared folder
beside the checkout (by its relative or its absolute path) or the notes file of facts kept there.
The names are put together from parts below, so that this file does not name them either."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = "sha" + "red"
NOTES = "FAC" + "TS.md"
OUTSIDE = re.compile(rf"\.\./{SHARED}|/work/{SHARED}|{re.escape(NOTES)}".encode(), re.IGNORECASE)
ALLOWED: set[str] = set()


def outside_names(root: Path, names: list[str]) -> list[str]:
    """`file:line: the name` for every mention of a place outside the repository."""
    found = []
    for name in names:
        path = root / name
        if name in ALLOWED or not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        for match in OUTSIDE.finditer(data):
            line = data.count(b"\n", 0, match.start()) + 1
            found.append(f"{name}:{line}: {match.group().decode()}")
    return found


def checkout_files(root: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return [name for name in listed.stdout.decode().split("\0") if name]


def test_the_finder_finds_planted_names(tmp_path: Path) -> None:
    upper = f"/WORK/{SHARED.upper()}"
    (tmp_path / "a.md").write_text(f"see ../{SHARED}/data/x\nand\n{upper}/y and {NOTES.lower()}\n")
    (tmp_path / "b.bin").write_bytes(b"\x00\xff " + NOTES.encode())
    (tmp_path / "c.py").write_text(f"{SHARED}/ and /work/wt-1/README.md are fine\n")
    found = outside_names(tmp_path, ["a.md", "b.bin", "c.py"])
    assert found == [
        f"a.md:1: ../{SHARED}",
        f"a.md:3: {upper}",
        f"a.md:3: {NOTES.lower()}",
        f"b.bin:1: {NOTES}",
    ]


def test_no_file_names_a_place_outside_the_repository() -> None:
    names = checkout_files(ROOT)
    assert len(names) > 100  # the checkout's files, not an empty listing
    found = outside_names(ROOT, names)
    assert not found, "files that name a place outside the repository:\n" + "\n".join(found)
