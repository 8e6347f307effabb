"""The user's compose project, as the matrix's compose backend drives it: `docker compose` in the
checkout with the user's environment and a setting's switches over it (NUM_SPEC_TOKENS,
VLLM_DFLASH_CTX_NOISE, ENABLE_PREFIX_CACHING), where it publishes the server, what its rendered
project's server runs (`docker compose config`), the server container's state, and the baseline's
override: a compose file of ours, added after the user's, that runs `vllm serve` with the
server's arguments less --speculative-config (`j0 serve` serves the article's drafter only).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from j0.article.server_setting import ServerSetting
from j0.article.serving import option_value, parse_speculative_config
from j0.compose.server import MatrixPoint
from j0.errors import INPUT_LACKS, J0Error, parse_json

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # `docker compose logs` erases lines even untold


@dataclass
class Compose:
    """`docker compose` in the project folder, with `environ` (the user's plus the switches)."""

    root: Path
    environ: Mapping[str, str]

    def __call__(self, args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["docker", "compose", "--ansi", "never", *args],
                cwd=self.root,
                env=dict(self.environ),
                capture_output=True,
                text=True,
                check=False,
                timeout=timeout,
            )
        except FileNotFoundError:
            raise J0Error(
                "docker: not found; the compose backend needs Docker Compose", 2
            ) from None
        except subprocess.TimeoutExpired:
            raise J0Error(
                f"docker compose {' '.join(args)}: still running after {timeout:.0f} s"
            ) from None


def url_of(environ: Mapping[str, str]) -> str:
    """Where compose.serve.yaml publishes the server: 127.0.0.1:${PORT:-8000}."""
    return f"http://127.0.0.1:{environ.get('PORT') or 8000}"


def rendered_setting(project: dict[str, Any]) -> tuple[MatrixPoint, list[str], dict[str, str]]:
    """What the rendered project's server runs: the setting, its command and its J0 switches."""
    server = project.get("services", {}).get("server")
    if not isinstance(server, dict):
        raise J0Error("docker compose config: no `server` service", INPUT_LACKS)
    command = [str(x) for x in server.get("command") or []]
    environment = {str(k): str(v or "") for k, v in (server.get("environment") or {}).items()}
    raw = option_value(command, "--speculative-config")
    entrypoint = [str(x) for x in server.get("entrypoint") or []]
    if raw is None and entrypoint != BASELINE_ENTRYPOINT:
        raise J0Error("docker compose config: the server has no --speculative-config", INPUT_LACKS)
    noise = environment.get("VLLM_DFLASH_CTX_NOISE")
    if noise not in ("0", "1"):
        raise J0Error(f"docker compose config: VLLM_DFLASH_CTX_NOISE={noise!r}", INPUT_LACKS)
    caching = prefix_caching_of(command, environment)
    tokens = 0 if raw is None else parse_speculative_config(raw).config.tokens
    setting = MatrixPoint(tokens, noise == "1" and raw is not None, caching)
    switches = {k: v for k, v in environment.items() if k.startswith("VLLM_") or "PREFIX" in k}
    return setting, command, switches


BASELINE_ENTRYPOINT = ["vllm", "serve"]
BASELINE_FILE = "compose.baseline.yaml"


def baseline_override(project: dict[str, Any], prefix_caching: bool) -> str:
    """The baseline's compose file (JSON is YAML): the rendered server (read as a ServerSetting)
    without its speculative config, so without the per-request spec-decode metrics (vLLM 0.33
    refuses those without it), and with the prefix-caching flag, run by `vllm serve` itself."""
    server = project.get("services", {}).get("server")
    if not isinstance(server, dict):
        raise J0Error("docker compose config: no `server` service", INPUT_LACKS)
    command = [str(x) for x in server.get("command") or []]
    rendered = ServerSetting.from_args(
        command, {}, "docker compose config: the server", speculative=False
    )
    args = replace(rendered, prefix_caching=prefix_caching).args()
    value = {"services": {"server": {"entrypoint": BASELINE_ENTRYPOINT, "command": args}}}
    return (
        "# j0 bench matrix --baseline: the server without --speculative-config (written by j0)\n"
        + json.dumps(value, indent=2)
        + "\n"
    )


def compose_files(root: Path, environ: Mapping[str, str]) -> str:
    """COMPOSE_FILE as `docker compose` would take it: the environment's, else compose.yaml
    (and compose.override.yaml where there is one)."""
    if environ.get("COMPOSE_FILE"):
        return environ["COMPOSE_FILE"]
    files = [str(root / "compose.yaml")]
    if (root / "compose.override.yaml").is_file():
        files.append(str(root / "compose.override.yaml"))
    return os.pathsep.join(files)


def prefix_caching_of(command: list[str], environment: Mapping[str, str]) -> bool:
    """Prefix caching as the server will run it, decided as `j0 serve` does: ENABLE_PREFIX_CACHING
    (1 or 0) where set, else the last --(no-)enable-prefix-caching flag, else vLLM's default
    (on)."""
    knob = (environment.get("ENABLE_PREFIX_CACHING") or "").strip()
    if knob in ("0", "1"):
        return knob == "1"
    state = True
    for arg in command:
        if arg == "--enable-prefix-caching":
            state = True
        elif arg == "--no-enable-prefix-caching":
            state = False
    return state


def server_state(compose: Compose) -> tuple[str, int | None]:
    ps = compose(["ps", "--all", "--format", "json", "server"], timeout=60)
    for line in ps.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows = parse_json(line, "`docker compose ps`'s line")
        except J0Error:
            continue
        for row in rows if isinstance(rows, list) else [rows]:
            if row.get("Service") == "server":
                return str(row.get("State", "")), row.get("ExitCode")
    return "absent", None


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
