"""What `j0 drafter fetch` prints: its progress lines (`j0 drafter: ...`, on standard output) and
its warnings (`j0: warning: ...`, on standard error), each flushed at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Log = Callable[[str], None]


def log(message: str) -> None:
    print(f"j0 drafter: {message}", flush=True)


def warn(message: str) -> None:
    print(f"j0: warning: {message}", file=sys.stderr, flush=True)
