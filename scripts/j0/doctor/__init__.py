"""`j0 doctor`: whether this host can run the article's `docker compose up` (Docker, GPU, memory,
the Hub, disk), before anything is pulled or downloaded."""

from typing import Any

# The face other commands use (issue 32), resolved on first use: run_host_command (a host
# command with its output and a deadline, doctor.host.run).
FACE = ("run_host_command",)


def __getattr__(name: str) -> Any:
    if name == "run_host_command":
        from j0.doctor.host import run

        return run
    raise AttributeError(f"module 'j0.doctor' has no attribute {name!r}")
