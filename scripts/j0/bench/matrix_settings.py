"""The settings of `j0 bench matrix`: draft tokens x J0 off/on, named like `k15-j0-off`.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from j0.errors import USAGE, J0Error

J0_WORDS = {"off": False, "on": True}


@dataclass(frozen=True)
class Setting:
    """One server configuration of the matrix."""

    num_speculative_tokens: int
    j0: bool
    prefix_caching: bool = False

    @property
    def name(self) -> str:
        return f"k{self.num_speculative_tokens}-j0-{'on' if self.j0 else 'off'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_speculative_tokens": self.num_speculative_tokens,
            "j0": self.j0,
            "prefix_caching": self.prefix_caching,
        }


def _items(text: str, flag: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise J0Error(
            f"{flag} {text!r}: expected a comma-separated list without empty items", USAGE
        )
    if len(set(items)) != len(items):
        raise J0Error(f"{flag} {text!r}: a value is given twice", USAGE)
    return items


def parse_tokens(text: str) -> list[int]:
    """`--tokens 15,7` -> [15, 7]: positive integers, in the order given."""
    values: list[int] = []
    for item in _items(text, "--tokens"):
        if not item.isdigit() or int(item) < 1:
            raise J0Error(
                f"--tokens {text!r}: {item!r} is not a positive integer "
                "(draft tokens per step; the article ran 15 and 7)",
                USAGE,
            )
        values.append(int(item))
    if len(set(values)) != len(values):
        raise J0Error(f"--tokens {text!r}: a value is given twice", USAGE)
    return values


def parse_j0(text: str) -> list[bool]:
    """`--j0 off,on` -> [False, True]."""
    values: list[bool] = []
    for item in _items(text, "--j0"):
        if item not in J0_WORDS:
            raise J0Error(f"--j0 {text!r}: {item!r} is neither 'off' nor 'on'", USAGE)
        values.append(J0_WORDS[item])
    return values


def matrix_settings(tokens: str, j0: str, prefix_caching: bool) -> list[Setting]:
    """Every (tokens, J0) pair, tokens outermost, both in the order given."""
    return [
        Setting(num_speculative_tokens=n, j0=on, prefix_caching=prefix_caching)
        for n in parse_tokens(tokens)
        for on in parse_j0(j0)
    ]
