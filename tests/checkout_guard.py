"""The tests only read the checkout's package and tests: a test that plants a module for a moment
plants it in a tree of its own (tmp_path). Several pytest-xdist workers scan and copy scripts/j0
and tests/ at once, and a file planted there for a moment failed other workers' tests (the print
finder's planted module, fast-subset runs of 2026-12-07: the rule's scan saw it, an image test's
copy of the package lost it halfway).

The guard (conftest.py's `checkout_unchanged`) reads each folder of the two trees at the start
of a test process's session and again at its end: a name added or gone, or a folder whose time
changed while its names and files stayed the same (a file came and went), fails the session. Each
worker checks its own session, in which any of its tests' writes fall; no test writes there, so
the workers' checks do not race one another. Python's bytecode caches are not the tests' doing:
__pycache__ folders are not read, and a folder that gained or lost one during the run may have
changed its time for it alone. A file replaced under its own name (an editor's save, a git checkout)
is not counted: only names are.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE = "__pycache__"

# folder -> (its mtime_ns, {name: inode} of its entries)
Snapshot = dict[str, tuple[int, dict[str, int]]]


def snapshot(*tops: Path) -> Snapshot:
    """Every folder under `tops` (but __pycache__ folders) with its time and entries."""
    found: Snapshot = {}
    stack = list(tops)
    while stack:
        folder = stack.pop()
        try:
            mtime = folder.stat().st_mtime_ns
            names = {}
            with os.scandir(folder) as entries:
                for entry in entries:
                    names[entry.name] = entry.inode()
                    if entry.name != CACHE and entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
        except FileNotFoundError:
            continue
        found[str(folder)] = (mtime, names)
    return found


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """What came or went in the folders between the two snapshots."""
    found = [f"{folder}: gone" for folder in sorted(before.keys() - after.keys())]
    found += [f"{folder}: made" for folder in sorted(after.keys() - before.keys())]
    for folder in sorted(before.keys() & after.keys()):
        (old_time, old), (new_time, new) = before[folder], after[folder]
        if new_time == old_time:
            continue
        added = sorted(new.keys() - old.keys() - {CACHE})
        gone = sorted(old.keys() - new.keys() - {CACHE})
        if added or gone:
            found.append(f"{folder}: added {added}, gone {gone}")
        # Neither its bytecode cache made (by Python) or removed, nor a file replaced under its
        # own name: a file came and went.
        elif (CACHE in old) == (CACHE in new) and all(
            new[name] == inode for name, inode in old.items() if name != CACHE
        ):
            found.append(f"{folder}: a file came and went (its names and files are unchanged)")
    return found
