"""`j0 bench run|report|matrix`: argument parsing only, one cli.py per subcommand (run/cli.py,
report/cli.py, matrix/cli.py; the work: run/, report/, matrix/)."""

from __future__ import annotations

import argparse

from j0.bench.matrix.cli import register_matrix
from j0.bench.report.cli import register_report
from j0.bench.run.cli import register_run
from j0.commands import epilog, group_examples


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    bench = subparsers.add_parser(
        "bench",
        help="measure acceptance and speed of a running server (run, matrix, report)",
        description="Measure a running server: `run` one setting, `matrix` all settings, "
        "`report` the results.",
        epilog=epilog(group_examples("bench")),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = bench.add_subparsers(
        dest="bench_command", metavar="COMMAND", parser_class=type(bench)
    )
    commands.required = True
    register_run(commands)
    register_matrix(commands)
    register_report(commands)
