"""Free disk where the downloads go: vLLM's image (Docker's data root), the Hub cache (the target's
weights) and the drafter's folder.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from j0.checks import FAIL, OK, WARN, Check
from j0.doctor.needs import gib

MARGIN_BYTES = 10 << 30  # room left after the downloads, below which a warning is given


@dataclass(frozen=True)
class Download:
    what: str
    folder: Path
    needed: int  # bytes still to download into `folder`
    estimate: bool  # the size is an estimate, not the Hub's


def existing_parent(path: Path) -> Path:
    """The nearest folder that exists (a download's folder may not yet)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check(downloads: list[Download]) -> Check:
    """One check over all downloads; those on the same filesystem add up."""
    by_device: dict[int, list[Download]] = {}
    where: dict[int, Path] = {}
    for item in downloads:
        parent = existing_parent(item.folder)
        device = os.stat(parent).st_dev
        by_device.setdefault(device, []).append(item)
        where.setdefault(device, parent)
    status, parts, fixes = OK, [], []
    for device, items in by_device.items():
        free = shutil.disk_usage(where[device]).free
        needed = sum(i.needed for i in items)
        names = " + ".join(
            f"{i.what} {gib(i.needed)}{' (estimate)' if i.estimate else ''} into {i.folder}"
            for i in items
        )
        total = f"{gib(needed)} = {needed / 1e9:.1f} GB in all" if len(items) > 1 else ""
        parts.append(f"{names}: {total}{', ' if total else ''}{gib(free)} free there")
        if free < needed:
            status = FAIL
            fixes.append(f"free {gib(needed - free)} on the filesystem of {where[device]}")
        elif free < needed + MARGIN_BYTES and status == OK:
            status = WARN
            fixes.append(f"less than {gib(MARGIN_BYTES)} would be left on {where[device]}")
    fix = "; ".join(fixes)
    if fix:
        fix += " (or point HF_HUB_CACHE / DRAFTER_DIR in .env at a larger disk)"
    return Check("disk", status, "; ".join(parts), fix)
