"""Which speculator.py this Python's vLLM would run (path, sha256, identity), and which vLLM.

The image's entrypoint logs it (`j0 image identity`) at every start, so the log shows the file
that runs, a bind-mounted swap included, and the engine's vLLM version and commit (read from
`vllm/_version.py` as text). The local launcher (`--here`: engine-check, mini) logs the same line
and local_needs asks for the record by running this module in the server's Python and
environment (`python -m j0.engine.server.speculator_identity --prefix WORD | --json`), not a
command. Standard library only, and vLLM is not imported.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from j0.article.identity import Identity, identify
from j0.engine.server.identity_record import IdentityRecord
from j0.engine.source.base_sources import installed_speculator, installed_vllm_dir
from j0.engine.source.vllm_version import VllmVersion, read_version
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
    """`j0 image identity --json`'s line (j0.engine.server.identity_record, the type its readers
    take)."""
    return IdentityRecord.of(str(path), identity, engine, pins).text()


def identified(prefix: str) -> tuple[str, str]:
    """This Python's speculator.py and vLLM: the line (`PREFIX: ...`) and the JSON record."""
    from j0.pins import load_pins

    pins = load_pins()
    path, identity = installed_identity(pins)
    engine = installed_engine()
    line = identity_line(path, identity, engine, pins)
    return f"{prefix}: {line}", identity_json(path, identity, engine, pins)


USAGE_LINE = "usage: python -m j0.engine.server.speculator_identity (--prefix WORD | --json)"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the line (--prefix WORD) or the record (--json), as `j0 image identity` does; where
    there is no vLLM to ask, `j0: error: ...` on stderr and its exit code, as j0's entry point
    says it."""
    from j0.errors import USAGE, J0Error

    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["--json"],) and not (len(args) == 2 and args[0] == "--prefix"):
        print(USAGE_LINE, file=sys.stderr)
        return USAGE
    try:
        line, record = identified(args[1] if args[0] == "--prefix" else "j0")
    except J0Error as exc:
        print(f"j0: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(record if args == ["--json"] else line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
