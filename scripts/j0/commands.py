"""What every command's parser shares: help text printed as written, and the exit-code table.

Standard library only (every command's cli.py imports it; `j0 --help` must stay instant).
"""

from __future__ import annotations

import argparse

from j0.errors import EXIT_CODE_TABLE


def add_command(
    subparsers: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    summary: str,
    text: str,
    *,
    exit_codes: bool = True,
) -> argparse.ArgumentParser:
    """`subparsers.add_parser(name)` with `summary` in the list of commands, `text` as its
    description (line breaks kept) and, unless told otherwise, the exit-code table at the end."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=text,
        epilog=EXIT_CODE_TABLE if exit_codes else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser
