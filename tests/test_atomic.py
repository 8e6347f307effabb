"""j0.edge.atomic: a written file follows the umask as `open()` would (mkstemp alone would leave
0600, and a fixed 0644 would ignore a umask of 077); an explicit mode is kept; link mode never
replaces."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from j0.edge.atomic import write_bytes_atomic, write_text_atomic


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path: Path, umask: None, mask: int) -> None:
    os.umask(mask)
    atomic, plain = tmp_path / "atomic.txt", tmp_path / "plain.txt"
    write_text_atomic(atomic, "x")
    plain.write_text("x")
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    assert stat.S_IMODE(atomic.stat().st_mode) == 0o666 & ~mask


def test_an_explicit_mode_is_kept(tmp_path: Path, umask: None) -> None:
    os.umask(0o077)
    path = tmp_path / "f"
    write_bytes_atomic(path, b"x", mode=0o755)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_link_mode_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "orig"
    write_bytes_atomic(path, b"first", replace_existing=False)
    with pytest.raises(FileExistsError):
        write_bytes_atomic(path, b"second", replace_existing=False)
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["orig"]
