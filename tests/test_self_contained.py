"""The repository cites only itself: no file of the checkout (git ls-files: tracked, and untracked
ones not ignored) names a place outside it that a fresh clone lacks, the project's shared folder
(`../shared`, `/work/shared`) or its notes file (`FACTS.md`). This file, which must name them to
look for them, is the only one let off."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(rb"\.\./shared|/work/shared|FACTS\.md", re.IGNORECASE)
ALLOWED = {Path(__file__).resolve().relative_to(ROOT).as_posix()}


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
    (tmp_path / "a.md").write_text("see ../shared/data/x\nand\n/WORK/SHARED/y and facts.md\n")
    (tmp_path / "b.bin").write_bytes(b"\x00\xff FACTS.md")
    (tmp_path / "c.py").write_text("shared/ and /work/wt-1/README.md are fine\n")
    found = outside_names(tmp_path, ["a.md", "b.bin", "c.py"])
    assert found == [
        "a.md:1: ../shared",
        "a.md:3: /WORK/SHARED",
        "a.md:3: facts.md",
        "b.bin:1: FACTS.md",
    ]


def test_no_file_names_a_place_outside_the_repository() -> None:
    names = checkout_files(ROOT)
    assert len(names) > 100  # the checkout's files, not an empty listing
    found = outside_names(ROOT, names)
    assert not found, "files that name a place outside the repository:\n" + "\n".join(found)
