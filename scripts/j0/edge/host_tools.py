"""Running the host's own tools (docker, nvidia-smi) with a time limit, and reading their output
(doctor's checks, and status's look at the compose project).

Standard library only: doctor asks the tools themselves, as a user would type them, so that what
it reports is what `docker compose up` will meet.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Ran:
    """One command's outcome. `missing`: the program is not on PATH; `timed_out`: killed."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    missing: bool = False
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.missing and not self.timed_out

    def said(self) -> str:
        """The tool's own last words, on one line (for a check's detail)."""
        if self.missing:
            return f"{self.argv[0]} is not on PATH"
        if self.timed_out:
            return f"`{' '.join(self.argv)}` did not answer within {TIMEOUT_S:.0f} s"
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        last = text[-1].strip() if text else f"exit {self.returncode}"
        return last[:300]


def run(argv: list[str], timeout: float = TIMEOUT_S) -> Ran:
    program = shutil.which(argv[0])
    if program is None:
        return Ran(tuple(argv), 127, "", "", missing=True)
    try:
        done = subprocess.run(
            [program, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Ran(tuple(argv), 124, out, "", timed_out=True)
    except OSError as exc:
        return Ran(tuple(argv), 126, "", str(exc))
    return Ran(tuple(argv), done.returncode, done.stdout, done.stderr)
