"""What `j0 bench run` and `j0 bench report` check before they write: that no output is one of
their own inputs (the same path, or the same file by another name: a symlink, a hard link), so
that a run never replaces its dataset or a report the result files it reads.

Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from j0.errors import USAGE, J0Error


def same_file(a: Path, b: Path) -> bool:
    """Whether writing `a` would replace `b`: the same file where both exist (os.path.samefile
    follows symlinks and sees hard links), else the same resolved path."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def refuse_own_inputs(
    outputs: Iterable[tuple[str, Path]], inputs: Iterable[tuple[str, Path]]
) -> None:
    """A usage error (exit 64) where an output (what names it, its path) is one of the inputs."""
    given = [(name, path) for name, path in inputs if path is not None]
    for out_name, out in outputs:
        for in_name, path in given:
            if same_file(out, path):
                raise J0Error(
                    f"{out_name} {out} is the same file as {in_name} {path}: a command never "
                    "writes into its own input; choose another output",
                    USAGE,
                )
