"""The one rule for every command that writes: no output is one of the command's inputs.

Judged at the entry point, after the arguments are parsed and before any work, from what each
path argument says it is (j0.commands.reads / writes): an output file that is the same file as
an input (device and inode, links followed: os.path.samefile, never the path's spelling), or an
existing file inside a folder the command reads (any file there may be one it reads), is a usage
error (exit 64) naming both; so is an output folder that is an input, or is or lies inside a
folder the command reads, unless the command's docs say it writes there (`may_be_in`). The
pins file (overlay/pins.env), which every command reads, and compose's .env beside it are
inputs of every command.

An output that is no input replaces an existing file only where it is the command's own output
(--json OUT, `j0 overlay build -o`) or with --force (`j0 bench run --out`); folders are claimed
by their commands (j0.edge.atomic.claimed).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from j0.edge.atomic import same_file
from j0.errors import USAGE, J0Error


@dataclass(frozen=True)
class Named:
    """A path as the command line names it: the argument (`--log`, `DIR`) and the path."""

    label: str
    path: Path
    dest: str = ""
    own: tuple[str, ...] = ()  # files the command writes into this input folder itself
    kind: str = ""  # an output's: "file" or "folder"
    may_be_in: tuple[str, ...] = ()


def _label(action: argparse.Action) -> str:
    longs = [s for s in action.option_strings if s.startswith("--")]
    return (longs or action.option_strings or [str(action.metavar or action.dest).upper()])[0]


def _values(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def inputs_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[Named]:
    for action in parser._actions:
        if not getattr(action, "j0_reads", False):
            continue
        path_of = getattr(action, "j0_path_of", None)
        own = getattr(action, "j0_own", ())
        for value in _values(getattr(args, action.dest, None)):
            for path in path_of(value) if path_of else [Path(str(value))]:
                yield Named(_label(action), path, action.dest, own() if callable(own) else own)
    try:
        from j0.pins import PINS_RELPATH, project_root

        root = project_root()
        yield Named("the pins file", root / PINS_RELPATH)
        yield Named("compose's .env", root / ".env")  # read as compose reads it, where it is
    except J0Error:  # no checkout here: the command says so itself
        pass


def outputs_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[Named]:
    from j0.commands import JSON_ON_STDOUT

    for action in parser._actions:
        kind = getattr(action, "j0_writes", None)
        if kind is None:
            continue
        for value in _values(getattr(args, action.dest, None)):
            if value == JSON_ON_STDOUT and action.dest == "json":
                continue
            may = getattr(action, "j0_may_be_in", ())
            yield Named(_label(action), Path(str(value)), action.dest, kind=kind, may_be_in=may)


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a symlink loop: not judged here
        return False


def clash(out: Named, given: Named) -> str | None:
    """Why writing `out` would write into the input `given`, or None."""
    reads = f"is inside {given.label} {given.path}, which this command reads"
    if out.kind == "folder" and given.dest in out.may_be_in:
        return None  # the command's docs put this output there (bench report's DIR)
    if out.kind == "folder" and given.path.is_dir() and _inside(out.path, given.path):
        return reads  # the folder itself, or one inside it
    if same_file(out.path, given.path):
        return f"is the same file as {given.label} {given.path}"
    if not given.path.is_dir():
        return None
    if out.kind == "file":
        if out.path.is_file() and _inside(out.path, given.path):
            if out.path.parent.resolve() == given.path.resolve() and out.path.name in given.own:
                return None  # a file the command writes there itself (its docs say so)
            return reads
    return None


def refuse_writing_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error (exit 64), before any work, where an output of the parsed command line
    would write into one of its inputs (see the module's docstring)."""
    inputs = list(inputs_of(parser, args))
    for out in outputs_of(parser, args):
        for given in inputs:
            if (why := clash(out, given)) is not None:
                raise J0Error(
                    f"{out.label} {out.path} {why}: a command never writes into its own input "
                    "(nothing was written); choose another output",
                    USAGE,
                )
