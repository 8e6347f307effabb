"""The `j0` command: parse arguments and hand over to the module that does the job."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from j0 import __version__, errors
from j0.commands import epilog, group_examples
from j0.errors import J0Error

# One module per command group; each has register(subparsers) and sets `func` on its parsers.
COMMAND_MODULES = (
    "j0.overlay.cli",
    "j0.selfcheck.cli",
    "j0.image.cli",
    "j0.drafter.cli",
    "j0.serve.cli",
    "j0.dumps.cli",
    "j0.bench.cli",
    "j0.deploy.cli",
    "j0.doctor.cli",
    "j0.status.cli",
    "j0.engine_check.cli",
    "j0.mini.cli",
)
# The command each module registers, by its name on the command line: a run of one command builds
# the parser of that command alone (importing one command's modules, not all twelve: about 0.1 s
# of CPU less at every start); `j0 --help`, `j0` alone and a name that is no command build them
# all, so that what argparse prints there is unchanged (tests/test_cli.py holds this table equal
# to what the modules register).
MODULE_OF = {
    "overlay": "j0.overlay.cli",
    "selfcheck": "j0.selfcheck.cli",
    "image": "j0.image.cli",
    "drafter": "j0.drafter.cli",
    "serve": "j0.serve.cli",
    "dumps": "j0.dumps.cli",
    "bench": "j0.bench.cli",
    "deploy": "j0.deploy.cli",
    "doctor": "j0.doctor.cli",
    "status": "j0.status.cli",
    "engine-check": "j0.engine_check.cli",
    "mini": "j0.mini.cli",
}

DESCRIPTION = """\
Build, check and run vLLM's DFlash speculator with JetSpec++'s J0 first-pass context
initialisation, as in "A Short-Context Drafter on Long-Context Reasoning" (artus.ai, 2026-10-31).
Every pinned value (vLLM commit, image, hashes, drafter revision) comes from overlay/pins.env.
"""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on exit code 64, so that 2 keeps its j0 meaning."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(errors.USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole parser: every command."""
    return _parser_of(COMMAND_MODULES)


def command_parser(argv: Sequence[str] | None) -> argparse.ArgumentParser:
    """The parser for `argv`: where its first word is a command, the parser with that command
    alone (the same subparser, so the same parse, help and errors); else the whole parser."""
    words = sys.argv[1:] if argv is None else list(argv)
    module = MODULE_OF.get(words[0]) if words else None
    return build_parser() if module is None else _parser_of((module,))


def _parser_of(modules: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="j0",
        description=DESCRIPTION,
        epilog=epilog(group_examples("")),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"j0 {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command, its standard output and error escaped (j0.terminal.escape): no control
    character but the line break and the tab reaches the terminal, whoever prints; and a stream
    whose reader has gone (`| head`) dropped quietly, never a change of the exit code
    (j0.terminal.closed_pipe)."""
    from j0.edge import redaction
    from j0.terminal.closed_pipe import ClosedPipeGuard
    from j0.terminal.escape import EscapingStream

    redaction.install()  # what the libraries log or warn passes through the redaction
    out, err = sys.stdout, sys.stderr
    guarded = ClosedPipeGuard(out), ClosedPipeGuard(err)
    sys.stdout, sys.stderr = EscapingStream(guarded[0]), EscapingStream(guarded[1])  # type: ignore[assignment]
    try:
        return _run(argv)
    finally:
        for stream in guarded:  # what is still buffered, while a closed pipe is still caught
            stream.flush()
        sys.stdout, sys.stderr = out, err


def _run(argv: Sequence[str] | None) -> int:
    from j0.terminal import sink

    parser = command_parser(argv)
    args = parser.parse_args(argv)
    try:
        if hasattr(args, "j0_parser"):  # no output onto an input: one rule, every command
            from j0.edge.own_inputs import refuse_writing_inputs

            refuse_writing_inputs(args.j0_parser, args)
        with sink.installed(getattr(args, "json", None)):  # the run's output, as --json says
            return int(args.func(args))
    except J0Error as exc:
        sink.warn(f"j0: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        sink.warn("j0: interrupted")
        return 130
    except Exception as exc:  # a bug of ours: one line, exit 70, never read as "a check failed"
        if os.environ.get("J0_DEBUG") == "1":
            raise
        sink.warn(internal_error_line(args.command, argv, exc))
        return errors.INTERNAL


def internal_error_line(command: str, argv: Sequence[str] | None, exc: BaseException) -> str:
    """`j0 COMMAND: internal error: ...`, naming the input (the arguments, cut to 300 characters)
    and the exception, and how to see the traceback."""
    given = " ".join(sys.argv[1:] if argv is None else argv)
    if len(given) > 300:
        given = given[:300] + "…"
    what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
    return (
        f"j0 {command}: internal error (a bug in j0, not a verdict) on `j0 {given}`: {what}; "
        "run again with J0_DEBUG=1 for the traceback"
    )


if __name__ == "__main__":
    sys.exit(main())
