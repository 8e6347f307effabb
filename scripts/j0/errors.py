"""Exit codes shared by every `j0` command, and the error that carries one."""

from __future__ import annotations

OK = 0
CHECK_FAILED = 1
INPUT_LACKS = 2
VERIFY_BASE = 3
VERIFY_OTHER = 4
USAGE = 64
UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: what the command needs is not here

EXIT_CODE_TABLE = """\
exit codes (all commands):
  0   success
  1   a check failed (hash mismatch, patch does not apply, J0 deviates, ...)
  2   the input lacks what the command checks (no J0 in the file, no dflash_config, ...)
  3   overlay verify: the file is the unpatched base
  4   overlay verify: the file is neither the article's file nor the base
  64  command-line usage error
  69  what the command needs is not installed or not here (a package, a GPU; named)
"""


class J0Error(Exception):
    """An error to report to the user as one clear message, with an exit code."""

    def __init__(self, message: str, exit_code: int = CHECK_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code
