"""What `j0 status` reads besides the server: the server's log (a file, or `docker compose logs
server` in the j0 checkout) and the server's API key (a file, never printed)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from j0.compose.getting import COMPOSE_V2_AND_BUILDX
from j0.compose.switches import Knobs
from j0.edge.host_tools import run as run_host_command
from j0.edge.secret_file import read_secret_file
from j0.engine.server import server_log
from j0.errors import J0Error, read_input_bytes
from j0.pins import Pins


class StatusLogRead(NamedTuple):
    """The log's facts, or None and why there are none (None: no log was asked for)."""

    facts: server_log.LogFacts | None
    why_none: str | None = None


def read_log(log: Path | None, compose: bool, pins: Pins) -> StatusLogRead:
    """The facts of the log in the file `log`, else of compose's server (`compose`), else none."""
    if log is not None:
        # Bounded: a regular file of at most InputLimit.ANY (never /dev/zero read whole).
        text = read_input_bytes(Path(log), "--log").decode("utf-8", errors="replace")
        return StatusLogRead(server_log.parse(text, str(log)))
    if compose:
        return compose_log(pins)
    return StatusLogRead(None)


def compose_log(pins: Pins) -> StatusLogRead:
    """`docker compose logs server` in the j0 checkout. It prints nothing and exits 0 where the
    project has no server container: that is asked of `docker compose ps` and said as such."""
    compose_file = pins.root / "compose.yaml"
    argv = ["docker", "compose", "-f", str(compose_file)]
    ran = run_host_command([*argv, "logs", "--no-color", "server"], timeout=60)
    if not ran.ok:
        said = " ".join((ran.stderr.strip() or ran.stdout.strip()).split())[:300] or ran.said()
        no_plugin = "compose" in said and ("not a docker command" in said or "unknown" in said)
        advice = (
            f"; this Docker has no Compose v2 plugin. {COMPOSE_V2_AND_BUILDX}" if no_plugin else ""
        )
        raise J0Error(f"`docker compose logs server` failed: {said}{advice}")
    text = ran.stdout + ran.stderr
    if not text.strip():
        listed = run_host_command([*argv, "ps", "--all", "--quiet", "server"], timeout=60)
        if listed.ok and not listed.stdout.strip():
            return StatusLogRead(
                None,
                f"no server container in compose's project ({compose_file}): "
                "`docker compose ps --all server` lists none (never started here, or removed by "
                "`docker compose down`), so there is no log to read; `docker compose up -d` "
                "starts it",
            )
    return StatusLogRead(server_log.parse(text, "docker compose logs server"))


def read_api_key(api_key_file: Path | None, settings: Knobs) -> str | None:
    """The key in `api_key_file`, else in compose's API_KEY_FILE; None for none or /dev/null."""
    if api_key_file is not None:
        return read_secret_file(Path(api_key_file), "--api-key-file")
    path = settings.path("API_KEY_FILE")
    if path is None:
        return None
    return read_secret_file(path, f"API_KEY_FILE ({settings.source('API_KEY_FILE')})")
