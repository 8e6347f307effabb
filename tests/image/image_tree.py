"""The copy of j0's package that the image step tests put under their own /opt/j0 (as the
Dockerfile's early COPY makes one): copied once per test process, into a folder of its own, and
hard-linked from there into each test's tree. A copy per test cost 0.08-0.27 s of CPU (568 files,
6 MB with the bytecode), about 80 times in a fast-subset run; the links, 0.03 s. The links are to
that process's copy, never to the checkout, so a test that wrote into its tree's package in place
could not change the checkout's files (no test does: the steps write the overlay, the manifest and
site-packages, and Python replaces a .pyc, never writes into it)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _copied_once() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="j0-package-"))
    atexit.register(shutil.rmtree, folder, True)
    shutil.copytree(ROOT / "scripts" / "j0", folder / "j0")
    return folder / "j0"


def put_j0_package(scripts: Path) -> None:
    """scripts/j0: the package's files as they are in the checkout (this process's copy)."""
    shutil.copytree(_copied_once(), scripts / "j0", copy_function=os.link)
