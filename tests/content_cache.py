"""Folders the tests make slowly and the same way each time, cached by content.

    key(files, options, packages)     a sha256 of the files' paths and bytes, `options` (JSON),
                                      the Python, and the versions of `packages`
    cached_folder(kind, key, workdir, make)
                                      workdir/<name>: a copy of $J0_CACHE/<kind>/<key> (default
                                      ~/.cache/j0), made first by `make(tmp) -> folder` where
                                      missing

Used for the dump sets that tests/dumps/simulate.py makes with the real kernels under Triton's
interpreter (tests/dumps/dumpsets.py) and the smoke miniature that tests/mini/conftest.py trains.
A key takes in every file the making reads, so any change makes the folder again; each test
session gets its own copy, so no test can alter the cache. Delete the cache freely
(scripts/clean-test-caches).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def key(files: Iterable[Path], options: object, packages: Iterable[str]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(options).encode())
    digest.update(sys.version.encode())
    for package in packages:
        try:
            digest.update(f"{package}=={version(package)}".encode())
        except PackageNotFoundError:
            digest.update(f"{package} absent".encode())
    for path in files:
        digest.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else "").encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:24]


def cache_root() -> Path:
    base = os.environ.get("J0_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "j0"
    )
    return Path(base)


def cached_folder(
    kind: str, key: str, workdir: Path, make: Callable[[Path], Path], name: str = "sets"
) -> Path:
    """workdir/name: a copy of the cached output of `make(tmp) -> folder` under this key, made
    (into a temporary folder beside the cache, then moved in place) where missing. One process
    makes it while the others wait on a lock (pytest-xdist's workers start together); a complete
    cache is never replaced, so a copy from it cannot lose files halfway. Before the lock, two
    workers both made the dump sets and the second one's replace removed the first one's cache
    while the first was copying it (12 errors in one fresh `.ci/run`)."""
    import fcntl

    cached = cache_root() / kind / key
    if not (cached / ".complete").is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        with (cached.parent / f".{cached.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (cached / ".complete").is_file():  # another process may have made it
                with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".making-") as tmp:
                    made = make(Path(tmp))
                    (made / ".complete").write_text(key + "\n")
                    shutil.rmtree(cached, ignore_errors=True)  # an incomplete leftover only
                    os.replace(made, cached)
    out = workdir / name
    shutil.copytree(cached, out, ignore=shutil.ignore_patterns(".complete"))
    return out
