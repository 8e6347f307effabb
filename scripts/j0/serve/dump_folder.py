"""The dump folder of `j0 serve` (VLLM_DFLASH_DUMP), claimed before the server starts: new or
empty, never one that holds an earlier run's dumps, which the patch would overwrite step by step
(step0000.pt first) and leave mixed with the new ones, a folder that `j0 dumps check` fails
although both runs were right.

With `j0 serve --force` the earlier run's entries are moved, each by rename(2) on the same
file system (nothing is copied, nothing deleted), into a subfolder `previous-STAMP/` of the dump
folder, which the output names; `j0 dumps check DIR/previous-STAMP` still checks them. The
folder itself is not renamed: in compose it is a bind mount (/dumps), which cannot be. Earlier
`previous-*` subfolders do not count as an earlier run. A dry run says what it would do and
touches nothing.

Standard library only: this runs inside the image.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from j0.errors import USAGE, J0Error

PREVIOUS = "previous-"
SHOWN = 3  # entries named in the refusal


def earlier_entries(folder: Path) -> list[str]:
    """The names in `folder` that an earlier run left (all but previous-* subfolders), sorted."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise J0Error(f"VLLM_DFLASH_DUMP={folder}: cannot be read: {exc}", USAGE) from exc
    return [n for n in names if not (n.startswith(PREVIOUS) and (folder / n).is_dir())]


def previous_name(folder: Path, stamp: str) -> Path:
    """A `previous-STAMP` subfolder of `folder` that does not exist yet."""
    candidate = folder / f"{PREVIOUS}{stamp}"
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = folder / f"{PREVIOUS}{stamp}-{number}"
    return candidate


def claim_dump_folder(folder: Path, force: bool, dry_run: bool) -> list[str]:
    """Check (and without dry_run, make ready) the dump folder; the facts to log."""
    if os.path.lexists(folder) and not folder.is_dir():
        raise J0Error(f"VLLM_DFLASH_DUMP={folder}: not a folder; expected a dump folder", USAGE)
    old = earlier_entries(folder)
    if not old:
        return [f"dump folder {folder}: {'empty' if folder.is_dir() else 'new'}"]
    shown = ", ".join(old[:SHOWN]) + (f" and {len(old) - SHOWN} more" if len(old) > SHOWN else "")
    if not force:
        raise J0Error(
            f"VLLM_DFLASH_DUMP={folder}: holds {len(old)} entries of an earlier run ({shown}); "
            "the patch would write stepNNNN.pt over them and mix two runs: empty it, choose "
            f"another folder, or give `j0 serve --force` to keep them in {folder}/"
            f"{PREVIOUS}STAMP/",
            USAGE,
        )
    target = previous_name(folder, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    if dry_run:
        return [f"dump folder {folder}: --force would keep its {len(old)} entries in {target}"]
    try:
        target.mkdir()
        for name in old:
            os.rename(folder / name, target / name)
    except OSError as exc:
        raise J0Error(
            f"VLLM_DFLASH_DUMP={folder}: cannot move the earlier run's entries to {target}: "
            f"{exc}; the server was not started",
            USAGE,
        ) from exc
    return [
        f"dump folder {folder}: the earlier run's {len(old)} entries kept in {target} (--force)"
    ]
