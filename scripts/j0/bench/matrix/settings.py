"""The settings of `j0 bench matrix`: draft tokens x J0 off/on, named like `k15-j0-off`, and with
--baseline a setting `baseline` (the same server without --speculative-config); and the
`j0 bench run` of a setting (PointBench), built here for both backends.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from j0.bench.run.options import RunOptions
from j0.compose.server import MatrixPoint
from j0.edge import urls
from j0.engine.server.j0_state import OFF, ON
from j0.errors import USAGE, J0Error

J0_WORDS = {OFF: False, ON: True}


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


def matrix_settings(
    tokens: str, j0: str, prefix_caching: bool, baseline: bool = False
) -> list[MatrixPoint]:
    """The baseline first where asked, then every (tokens, J0) pair, tokens outermost, both in
    the order given."""
    first = [MatrixPoint(0, False, prefix_caching)] if baseline else []
    return first + [
        MatrixPoint(tokens=n, j0=on, prefix_caching=prefix_caching)
        for n in parse_tokens(tokens)
        for on in parse_j0(j0)
    ]


@dataclass(frozen=True)
class PointBench:
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
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    force: bool = False  # replace an existing result (a retried Kubernetes index's own)
    log: Path | None = None  # the server's log so far: J0 on/off from the file that ran

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
            repeats=self.repeats,
            system_prompt=self.system_prompt,
            system_prompt_file=self.system_prompt_file,
            force=self.force,
            log=self.log,
        )

    def command_line(self) -> list[str]:
        """The same run as `j0 ARGS` would be written (for the logs: the URL's userinfo masked)."""
        args = ["bench", "run", "--url", urls.redact(self.url), "--out", str(self.out)]
        args += ["--label", self.label]
        if not self.progress:
            args.append("--no-progress")
        args += ["--j0", "on" if self.j0 else "off"]
        if self.dataset is not None:
            args += ["--dataset", self.dataset]
        if self.requests is not None:
            args += ["--requests", str(self.requests)]
        if self.max_tokens is not None:
            args += ["--max-tokens", str(self.max_tokens)]
        if self.repeats != 1:
            args += ["--repeats", str(self.repeats)]
        if self.force:
            args.append("--force")
        if self.log is not None:
            args += ["--log", str(self.log)]
        if self.system_prompt is not None:
            args += ["--system-prompt", f"@{self.system_prompt_file}" if self.system_prompt_file
                     else self.system_prompt]  # fmt: skip
        return args
