"""The drafter's commit recorded as DRAFTER_COMMIT in overlay/pins.env, only for the pinned repo and
revision and only where the record lasts and can be trusted: not in an image's copy of the pins,
not in tracked pins for a commit from another endpoint than the Hub; otherwise a warning that
names the commit (fetch.py's docstring, step 2).
"""

from __future__ import annotations

import subprocess

from j0.drafter.console import Log, warn
from j0.drafter.hub import DEFAULT_ENDPOINT, is_default_endpoint, shown_endpoint
from j0.errors import CHECK_FAILED, J0Error
from j0.pins import PINS_RELPATH, Pins, set_pin

# Beside the pins in an image: the build step writes /opt/j0/manifest.json next to /opt/j0/overlay.
IMAGE_MANIFEST_NAME = "manifest.json"


def _image_copy(pins: Pins) -> bool:
    """Whether these pins are an image's copy (/opt/j0: the build step's manifest beside them)."""
    return (pins.root / IMAGE_MANIFEST_NAME).is_file()


def _tracked(pins: Pins) -> bool:
    """Whether the pins file is tracked by git in its checkout (the project's own pins). Where git
    cannot say, a .git folder above the pins counts as tracked: the careful answer."""
    try:
        result = subprocess.run(
            ["git", "-C", str(pins.root), "ls-files", "--error-unmatch", str(PINS_RELPATH)],
            capture_output=True,
            check=False,
        )
    except OSError:
        result = None
    if result is not None and result.returncode in (0, 1):
        return result.returncode == 0
    return any((folder / ".git").exists() for folder in (pins.root, *pins.root.parents))


def record_pin(
    pins: Pins, repo_id: str, revision: str, sha: str, log: Log, endpoint: str | None = None
) -> None:
    """Write DRAFTER_COMMIT=sha for the pinned repo and revision where that record lasts and
    can be trusted; otherwise warn, naming the commit (see the module's docstring)."""
    if repo_id != pins.drafter_repo or revision not in (pins.drafter_revision, sha):
        log(f"pins: not touched ({repo_id}@{revision} is not the pinned drafter)")
        return
    if pins.drafter_commit and pins.drafter_commit != sha:
        raise J0Error(
            f"{pins.pins_path}: DRAFTER_COMMIT={pins.drafter_commit}, but {revision} resolves to "
            f"{sha}; the pinned drafter has moved or the pin is wrong",
            CHECK_FAILED,
        )
    if pins.drafter_commit == sha:
        log(f"pins: DRAFTER_COMMIT={sha} already in {pins.pins_path}")
        return
    if _image_copy(pins):
        warn(
            f"DRAFTER_COMMIT={sha} is not recorded: {pins.pins_path} is the image's copy of the "
            "pins, in a container layer that is thrown away; `j0 drafter fetch` on the host "
            "records it in the checkout's overlay/pins.env"
        )
        return
    if not is_default_endpoint(endpoint) and _tracked(pins):
        warn(
            f"DRAFTER_COMMIT={sha} is not recorded in {pins.pins_path}: it came from "
            f"{shown_endpoint(endpoint)} (HF_ENDPOINT), not from {DEFAULT_ENDPOINT}, and the "
            "tracked pins hold the Hub's commit only"
        )
        return
    try:
        changed = set_pin("DRAFTER_COMMIT", sha, pins.root)
    except (OSError, J0Error) as exc:
        warn(
            f"cannot record DRAFTER_COMMIT={sha} in {pins.pins_path} ({exc}); set it there by hand"
        )
        return
    log(f"pins: DRAFTER_COMMIT={sha} {'written to' if changed else 'already in'} {pins.pins_path}")
