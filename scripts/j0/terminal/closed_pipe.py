"""A standard stream whose reader has gone (`j0 dumps check D | head -1`): the first write that
fails with EPIPE points the stream's file descriptor at /dev/null (Python's own advice for
SIGPIPE, docs.python.org's signal module, "Note on SIGPIPE") and every later write and flush is
dropped quietly. The command goes on to its verdict, whose exit code is the one it gives: a
closed pipe is never a FAIL (rich's console exits 1 on a BrokenPipeError it sees), an internal
error (70) or a traceback. Standard library only.
"""

from __future__ import annotations

import os
from typing import Any, TextIO


class ClosedPipeGuard:
    """A text stream over `stream` that drops what it cannot deliver once its reader has gone;
    the rest (fileno, isatty, encoding...) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self.wrapped.write(text)
            except BrokenPipeError:
                self._to_devnull()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.wrapped.flush()
            except BrokenPipeError:
                self._to_devnull()

    def _to_devnull(self) -> None:
        """The stream's descriptor onto /dev/null: what the wrapped stream still holds in its
        buffer is then written there when it is flushed (at the latest at the interpreter's
        exit, where a flush into the closed pipe would print "Exception ignored" and exit
        120)."""
        self.reader_gone = True
        try:
            fd = self.wrapped.fileno()
        except (OSError, ValueError):  # not a file (a test's StringIO): nothing to point away
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
