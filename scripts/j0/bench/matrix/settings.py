"""The settings of `j0 bench matrix`: draft tokens x J0 off/on, named like `k15-j0-off`; and
the `j0 bench run` of a setting (SettingBench), built here for both backends.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.run.options import RunOptions
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


@dataclass(frozen=True)
class SettingBench:
    """The `j0 bench run` of one setting (or one shard of it), for both backends: what is None
    is left to `j0 bench run`'s defaults."""

    url: str
    out: Path
    label: str
    j0: bool
    dataset: str | None = None
    requests: int | None = None
    max_tokens: int | None = None
    progress: bool = True

    def options(self) -> RunOptions:
        return RunOptions(
            url=self.url,
            out=self.out,
            label=self.label,
            j0=self.j0,
            dataset=RunOptions.dataset if self.dataset is None else self.dataset,
            requests=self.requests,
            max_tokens=RunOptions.max_tokens if self.max_tokens is None else self.max_tokens,
            progress=self.progress,
        )

    def command_line(self) -> list[str]:
        """The same run as `j0 ARGS` would be written (for the logs)."""
        args = ["bench", "run", "--url", self.url, "--out", str(self.out), "--label", self.label]
        if not self.progress:
            args.append("--no-progress")
        args += ["--j0", "on" if self.j0 else "off"]
        if self.dataset is not None:
            args += ["--dataset", self.dataset]
        if self.requests is not None:
            args += ["--requests", str(self.requests)]
        if self.max_tokens is not None:
            args += ["--max-tokens", str(self.max_tokens)]
        return args
