"""What every command's parser shares: help text printed as written, and the exit-code table.

Standard library only (every command's cli.py imports it; `j0 --help` must stay instant).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

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


def finite_number(minimum: float, *, above: bool) -> Callable[[str], float]:
    """An argparse type: a finite number above `minimum` (above=True) or at least `minimum`. NaN,
    infinities and numbers out of range are usage errors (exit 64) naming the value."""
    bound = f"above {minimum:g}" if above else f"{minimum:g} or more"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number {bound}")
        return value

    parse.__name__ = "number"  # argparse names the type in its message: "invalid number value"
    return parse
