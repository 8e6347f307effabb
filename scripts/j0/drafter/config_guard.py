"""Before `j0 drafter fetch` downloads into a folder that already holds a config.json: what is
there must be the Hub's file or what patch-config writes from it, byte for byte, and
config.json.orig, once it exists, must be the Hub's bytes. Anything else is refused, naming the
file, before anything is downloaded or written, so that nothing the user edited is overwritten:

* config.json.orig that is not the Hub's config.json of the commit (size and git blob id): exit 1,
  it is never overwritten (an original of another commit or copied from elsewhere);
* config.json that is neither the Hub's bytes nor the Hub's bytes patched (a hand edit): exit 2.

The Hub's bytes are config.json.orig's when it verifies, config.json's own when they verify, and
otherwise fetched into a temporary folder (a folder whose .orig was deleted: a config.json that
equals the Hub's patched gets its .orig back).

Standard library only; the fetch passes the function that downloads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from j0.drafter import config as drafter_config
from j0.drafter.files import RepoEntry, verify_file
from j0.edge.atomic import write_bytes_atomic
from j0.errors import CHECK_FAILED, INPUT_LACKS, InputLimit, J0Error, read_input_bytes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12] + "…"


def patched_bytes(original: bytes) -> bytes | None:
    """What patch-config writes from `original` (None where it cannot patch it)."""
    try:
        patch = drafter_config.load_patch(drafter_config.default_patch_path())
        text = drafter_config.apply_merge_patch_text(original.decode("utf-8"), patch)
    except (ValueError, UnicodeDecodeError, J0Error):
        return None
    return text.encode("utf-8")


def _read(path: Path) -> bytes:
    """A JSON file of the drafter's folder: a regular file of at most InputLimit.SMALL bytes (a
    FIFO or a huge file refused unread)."""
    return read_input_bytes(path, "", limit=InputLimit.SMALL)


def _hub_original(directory: Path, entry: RepoEntry, sha: str) -> bytes | None:
    """config.json.orig's bytes when it is the Hub's file, None when absent; refused otherwise."""
    orig = directory / (drafter_config.CONFIG_NAME + drafter_config.ORIG_SUFFIX)
    if not (orig.exists() or orig.is_symlink()):
        return None
    if orig.is_dir():
        raise J0Error(f"{orig}: a directory, expected the Hub's config.json", INPUT_LACKS)
    problem = verify_file(orig, entry)
    if problem is not None:
        raise J0Error(
            f"{orig} holds other bytes than the Hub's config.json of commit {sha[:8]} ({problem}); "
            "it is never overwritten: if it is yours, move it away and fetch again",
            CHECK_FAILED,
        )
    return _read(orig)


def guard_config(
    directory: Path, entry: RepoEntry, sha: str, hub_bytes: Callable[[], bytes]
) -> bool:
    """Check what DIR holds of config.json (see the module's docstring). True when config.json
    is already the Hub's file patched (with its .orig in place), so it is not downloaded again."""
    original = _hub_original(directory, entry, sha)
    config = directory / drafter_config.CONFIG_NAME
    if not (config.exists() or config.is_symlink()):
        return False
    current = _read(config)
    if original is None:
        if verify_file(config, entry) is None:
            return False  # the Hub's own bytes: patched after the download
        original = hub_bytes()
    if current == original:
        return False
    if current == patched_bytes(original):
        orig = directory / (drafter_config.CONFIG_NAME + drafter_config.ORIG_SUFFIX)
        if not orig.exists():
            write_bytes_atomic(orig, original, replace_existing=False)
        return True
    raise J0Error(
        f"{config} was edited: it is neither the Hub's config.json of commit {sha[:8]} (sha256 "
        f"{_sha(original)}) nor what j0 drafter patch-config writes from it (sha256 "
        f"{_sha(patched_bytes(original) or b'')}), but sha256 {_sha(current)}; refusing to "
        "overwrite it: move it away (or keep it elsewhere) and fetch again",
        INPUT_LACKS,
    )
