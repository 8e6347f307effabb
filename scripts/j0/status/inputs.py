"""What `j0 status` reads besides the server: the server's log (a file, or `docker compose logs
server` in the j0 checkout) and the server's API key (a file, never printed)."""

from __future__ import annotations

from pathlib import Path

from j0.compose.switches import Settings
from j0.edge.host_tools import run as run_host_command
from j0.edge.secret_file import read_secret_file
from j0.engine import server_log
from j0.errors import J0Error, read_input_bytes
from j0.pins import Pins


def read_log(log: Path | None, compose: bool, pins: Pins) -> server_log.LogFacts | None:
    """The facts of the log in the file `log`, else of compose's server (`compose`), else None."""
    if log is not None:
        # Bounded: a regular file of at most InputLimit.ANY (never /dev/zero read whole).
        text = read_input_bytes(Path(log), "--log").decode("utf-8", errors="replace")
        return server_log.parse(text, str(log))
    if compose:
        compose_file = pins.root / "compose.yaml"
        ran = run_host_command(
            ["docker", "compose", "-f", str(compose_file), "logs", "--no-color", "server"],
            timeout=60,
        )
        if not ran.ok:
            raise J0Error(f"`docker compose logs server` failed: {ran.said()}")
        return server_log.parse(ran.stdout + ran.stderr, "docker compose logs server")
    return None


def read_api_key(api_key_file: Path | None, settings: Settings) -> str | None:
    """The key in `api_key_file`, else in compose's API_KEY_FILE; None for none or /dev/null."""
    if api_key_file is not None:
        return read_secret_file(Path(api_key_file), "--api-key-file")
    path = settings.path("API_KEY_FILE")
    if path is None:
        return None
    return read_secret_file(path, f"API_KEY_FILE ({settings.source('API_KEY_FILE')})")
