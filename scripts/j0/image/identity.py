"""Which speculator.py this Python's vLLM would run: path, sha256 and identity.

The image's entrypoint calls this (`j0 image identity`) at every start, so the log shows the file
that runs, a bind-mounted swap included. Standard library only, and vLLM is not imported.
"""

from __future__ import annotations

import json
from pathlib import Path

from j0.base_sources import installed_speculator
from j0.identity import Identity, identify
from j0.pins import Pins


def installed_identity(pins: Pins) -> tuple[Path, Identity]:
    path = installed_speculator(pins)
    return path, identify(path.read_bytes(), pins)


def identity_line(path: Path, identity: Identity) -> str:
    return f"{path}: {identity.line()}"


def identity_json(path: Path, identity: Identity) -> str:
    return json.dumps({"path": str(path), "sha256": identity.sha256, "identity": identity.kind})
