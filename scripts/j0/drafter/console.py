"""What `j0 drafter fetch` prints: its progress lines (`j0 drafter: ...`, on standard output) and
its warnings (`j0: warning: ...`, on standard error), each one line and flushed at once.
"""

from __future__ import annotations

from collections.abc import Callable

from j0.terminal import sink
from j0.terminal.escape import shown

Log = Callable[[str], None]


def log(message: str) -> None:
    """One line, whatever Hub text it holds (file names, revisions: j0.terminal.escape)."""
    sink.say(f"j0 drafter: {shown(message)}", flush=True)


def warn(message: str) -> None:
    sink.warn(f"j0: warning: {shown(message)}", flush=True)
