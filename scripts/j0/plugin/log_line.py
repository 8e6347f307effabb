"""The plugin's identity line, written when vLLM builds the speculator (in the process that runs
it) through vLLM's logger, and its grammar, which `j0 status` and `j0 dumps check --log` read
(j0.engine.server.server_log). Standard library only.

    (EngineCore pid=N) INFO MM-DD HH:MM:SS [dflash_j0.py:N] j0-plugin: vLLM 0.34.0 commit
        62d4bc3c7 (method dflash_j0), /.../dflash/speculator.py: speculator.py sha256=<the J0
        file's> identity=article variant=article j0=on seed=20261031 running=<sha256 of what
        runs> patches=overlay/vllm-0.34.0/jetspec-j0.patch

`sha256` and `identity` are the proven J0 file's, as `j0 overlay verify` names it; `running` is
the text the kernel runs: the same, unless `seed` is not the pinned one (the one literal changed).
"""

from __future__ import annotations

import re

PREFIX = "j0-plugin: "
# The file whose records carry the line (vLLM's format prints the file's base name).
FILE = "dflash_j0.py"
LINE = re.compile(
    r"^j0-plugin: vLLM (?P<version>\S+) commit (?P<commit>\S+) \(method (?P<method>[\w-]+)\), "
    r"(?P<path>\S+): speculator\.py sha256=(?P<sha>[0-9a-f]{64}) identity=(?P<kind>[\w.-]+) "
    r"variant=(?P<variant>[\w-]+) j0=(?P<j0>on|off) seed=(?P<seed>\d+) "
    r"running=(?P<running>[0-9a-f]{64}) patches=(?P<patches>\S+)$"
)


def identity_line(
    *,
    version: str,
    commit: str,
    method: str,
    path: str,
    sha256: str,
    identity: str,
    variant: str,
    j0: bool,
    seed: int,
    running: str,
    patches: tuple[str, ...],
) -> str:
    return (
        f"{PREFIX}vLLM {version} commit {commit} (method {method}), {path}: speculator.py "
        f"sha256={sha256} identity={identity} variant={variant} j0={'on' if j0 else 'off'} "
        f"seed={seed} running={running} patches={','.join(patches)}"
    )
