"""Which speculator.py this Python's vLLM would run (path, sha256, identity), and which vLLM.

The image's entrypoint calls this (`j0 image identity`) at every start, so the log shows the file
that runs, a bind-mounted swap included, and the engine's vLLM version and commit (read from
`vllm/_version.py` as text). Standard library only, and vLLM is not imported.
"""

from __future__ import annotations

from pathlib import Path

from j0.article.identity import Identity, identify
from j0.engine.base_sources import installed_speculator, installed_vllm_dir
from j0.engine.identity_record import IdentityRecord
from j0.engine.vllm_version import VllmVersion, read_version
from j0.pins import Pins


def installed_identity(pins: Pins) -> tuple[Path, Identity]:
    path = installed_speculator(pins)
    return path, identify(path.read_bytes(), pins)


def installed_engine() -> VllmVersion:
    """The version and commit of this Python's vLLM (its vllm/_version.py)."""
    return read_version(installed_vllm_dir())


def engine_words(engine: VllmVersion, pins: Pins) -> str:
    """`vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14)`, or `(the pinned commit)`."""
    if not engine.commit:
        return f"{engine.describe()} (pinned {pins.vllm_commit[:8]}: cannot tell)"
    if engine.matches(pins.vllm_commit):
        return f"{engine.describe()} (the pinned commit)"
    return f"{engine.describe()} (not the pinned {pins.vllm_commit[:8]})"


def identity_line(
    path: Path, identity: Identity, engine: VllmVersion | None = None, pins: Pins | None = None
) -> str:
    """`[vLLM ... commit ..., ]PATH: speculator.py sha256=... identity=...` (the file's part last,
    so that a line still ends the same whatever the engine)."""
    head = f"{engine_words(engine, pins)}, " if engine is not None and pins is not None else ""
    return f"{head}{path}: {identity.line()}"


def identity_json(
    path: Path, identity: Identity, engine: VllmVersion | None = None, pins: Pins | None = None
) -> str:
    """`j0 image identity --json`'s line (j0.engine.identity_record, the type its readers take)."""
    return IdentityRecord.of(str(path), identity, engine, pins).text()
