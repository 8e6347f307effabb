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


# Upper bounds for what no run needs more of: a count beyond MAX_COUNT (requests, tokens, steps,
# cases) or a number beyond MAX_NUMBER (seconds, a temperature, a learning rate) is a typo, and
# would overflow a deadline's arithmetic or a list's size rather than run.
MAX_COUNT = 10**9
MAX_NUMBER = 1e9
MAX_SEED = 2**63 - 1  # torch.manual_seed and numpy take seeds below 2**64; Philox below 2**64
MAX_PORT = 65535


class NumberType:
    """An argparse type for a number in a range: every numeric option of every command has one
    (tests/test_number_arguments.py walks the parsers and refuses a plain int or float type).
    NaN, infinities, values out of range and text that is not a number are usage errors (exit 64)
    naming the value and the range."""

    def __init__(self, minimum: float, maximum: float, *, whole: bool, above: bool) -> None:
        self.minimum, self.maximum, self.whole, self.above = minimum, maximum, whole, above
        self.__name__ = "whole number" if whole else "number"  # argparse's "invalid ... value"

    def expected(self) -> str:
        def shown(x: float) -> str:
            return str(int(x)) if self.whole else f"{x:g}"

        kind = "a whole number" if self.whole else "a finite number"
        low = f"above {shown(self.minimum)}" if self.above else f"from {shown(self.minimum)}"
        return f"{kind} {low} to {shown(self.maximum)}"

    def __call__(self, text: str) -> int | float:
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
        value: int | float
        try:
            value = int(text) if self.whole else float(text)
        except ValueError:  # also int()'s refusal of more than 4,300 digits
            raise argparse.ArgumentTypeError(f"{shown!r}: expected {self.expected()}") from None
        if (
            not math.isfinite(value)
            or value < self.minimum
            or value > self.maximum
            or (self.above and value == self.minimum)
        ):
            raise argparse.ArgumentTypeError(f"{shown!r}: expected {self.expected()}")
        return value


def finite_number(
    minimum: float, *, above: bool, maximum: float = MAX_NUMBER
) -> Callable[[str], float]:
    """An argparse type: a finite number above `minimum` (above=True) or at least `minimum`, at
    most `maximum`."""
    return NumberType(minimum, maximum, whole=False, above=above)  # type: ignore[return-value]


def whole_number(minimum: int, maximum: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`."""
    return NumberType(minimum, maximum, whole=True, above=False)  # type: ignore[return-value]


class WholeNumbers:
    """An argparse type: whole numbers separated by commas ("7,15"), each in a range."""

    def __init__(self, minimum: int, maximum: int = MAX_COUNT) -> None:
        self.item = NumberType(minimum, maximum, whole=True, above=False)
        self.__name__ = "list of whole numbers"

    def __call__(self, text: str) -> list[int]:
        values = [int(self.item(x.strip())) for x in text.split(",") if x.strip()]
        if not values:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected {self.item.expected()}, e.g. 7,15"
            )
        return values
