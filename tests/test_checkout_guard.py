"""tests/checkout_guard.py, the session guard that no test writes into the checkout: each kind
of change it must see, on a tree of the test's own, and what it must let pass."""

from __future__ import annotations

import os
from pathlib import Path

from checkout_guard import changes, snapshot


def tree(tmp_path: Path) -> Path:
    top = tmp_path / "j0"
    (top / "bench").mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "bench" / "run.py").write_text("x = 1\n")
    (top / "old").mkdir()
    return top


def later(folder: Path) -> None:
    """The folder's time a second on, as a change made after the snapshot would leave it (the
    file system's clock may not have moved between two writes a test makes at once)."""
    stat = folder.stat()
    os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_a_module_planted_for_a_moment_is_seen(tmp_path: Path) -> None:
    top = tree(tmp_path)
    before = snapshot(top)
    planted = top / "bench" / "_planted.py"
    planted.write_text("import json\n")
    planted.unlink()
    later(top / "bench")
    assert changes(before, snapshot(top)) == [
        f"{top / 'bench'}: a file came and went (its names and files are unchanged)"
    ]


def test_a_file_left_or_gone_and_a_folder_made_or_gone_are_seen(tmp_path: Path) -> None:
    top = tree(tmp_path)
    before = snapshot(top)
    (top / "_left.py").write_text("")
    (top / "bench" / "run.py").unlink()
    (top / "new").mkdir()
    (top / "old").rmdir()
    later(top)
    later(top / "bench")
    assert changes(before, snapshot(top)) == [
        f"{top / 'old'}: gone",
        f"{top / 'new'}: made",
        f"{top}: added ['_left.py', 'new'], gone ['old']",
        f"{top / 'bench'}: added [], gone ['run.py']",
    ]


def test_bytecode_an_edit_and_an_untouched_tree_pass(tmp_path: Path) -> None:
    top = tree(tmp_path)
    before = snapshot(top)
    assert changes(before, snapshot(top)) == []
    (top / "bench" / "__pycache__").mkdir()  # Python's bytecode cache, made during the run
    (top / "bench" / "__pycache__" / "run.cpython-311.pyc").write_bytes(b"")
    later(top / "bench")
    (top / "bench" / "run.py").write_text("x = 2\n")  # written in place: the folder unchanged
    replaced = top / "_new_init.py"  # saved as a new file renamed over the old (an editor, git)
    replaced.write_text('"""j0."""\n')
    replaced.replace(top / "__init__.py")
    later(top)
    assert changes(before, snapshot(top)) == []
