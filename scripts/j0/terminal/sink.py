"""Where the `j0` command's output goes: one sink for its text, its warnings and its result
(issue 56 item 4). Standard library only (`j0 --help` stays instant).

The entry point (j0.cli) makes one Sink per run from the command's `--json` and installs it;
commands and the modules below them write through `say`, `warn`, `result` and `emit_json` (or a
stream of `text_stream()`, for rich's console) instead of `print`:

- text (`say`): on standard output; under `--json` alone (the JSON in its place on stdout) it
  goes nowhere, as it always did;
- warnings and errors (`warn`): on standard error, whatever `--json` says;
- the result (`result`, `emit_json`): the text on stdout and the JSON into OUT for `--json OUT`;
  the JSON alone on stdout for `--json`; the text alone without `--json`.

Under `--json` alone the sink holds standard output for the JSON, and the entry point points
`sys.stdout` at nothing for the command's run, so what a library prints there cannot break the
JSON either. Every write goes to the streams the entry point set up (j0.terminal.escape: control
characters escaped and secrets redacted; j0.terminal.closed_pipe: a reader gone never changes
the exit code); a sink that holds no stream writes to `sys.stdout`/`sys.stderr` as they are at
the time of the write (a test's capture, a caller's redirection).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# `--json` (or `--json -`): the JSON on stdout in place of the text (j0.commands.add_json_option).
JSON_ON_STDOUT = "-"


class Sink:
    """One run's output: `json_to` is the command's `--json` (None, JSON_ON_STDOUT or a file);
    `out`, where given, the stream the result goes to (else `sys.stdout` at each write)."""

    def __init__(self, json_to: str | None = None, out: TextIO | None = None) -> None:
        self.json_to = json_to
        self._out = out

    @property
    def shows_text(self) -> bool:
        """Whether the text reaches stdout: not where `--json` alone puts the JSON there."""
        return self.json_to != JSON_ON_STDOUT

    def _stdout(self) -> TextIO:
        return self._out if self._out is not None else sys.stdout

    def say(self, text: str = "", *, end: str = "\n", flush: bool = False) -> None:
        """A line of the command's text on stdout (nowhere under `--json` alone)."""
        if self.shows_text:
            stream = self._stdout()
            stream.write(text + end)
            if flush:
                stream.flush()

    def warn(self, text: str, *, flush: bool = False) -> None:
        """A line on standard error (a warning, an error, a progress note), `--json` or not."""
        sys.stderr.write(text + "\n")
        if flush:
            sys.stderr.flush()

    def text_stream(self) -> TextIO:
        """A stream for text written by others' printers (rich's console): stdout, or a stream
        that keeps nothing under `--json` alone."""
        return self._stdout() if self.shows_text else Nowhere()

    def result(self, text: str, json_text: str) -> None:
        """The command's result: `text` on stdout (nothing where it is empty), or `json_text` in
        its place for `--json` alone; and `json_text` written into OUT for `--json OUT`."""
        if self.json_to == JSON_ON_STDOUT:
            self._print_flushed(json_text)
            return
        if text:
            self._print_flushed(text)
        if self.json_to is not None:
            from pathlib import Path

            from j0.edge.atomic import write_text_atomic

            write_text_atomic(Path(self.json_to), json_text.rstrip("\n") + "\n")

    def emit_json(self, data: object) -> None:
        """The result of a command whose text went out as it ran: `data` as JSON (indented by 2,
        a value JSON has no form for by its str) where `--json` says; nothing without it."""
        if self.json_to is not None:
            import json

            self.result("", json.dumps(data, indent=2, default=str))

    def _print_flushed(self, text: str) -> None:
        stream = self._stdout()
        stream.write(text + "\n")
        stream.flush()


class Nowhere(io.TextIOBase):
    """A text stream that keeps nothing (what goes nowhere, without piling up in memory)."""

    def write(self, text: str) -> int:
        return len(text)


_current: list[Sink] = [Sink()]


def current() -> Sink:
    """The run's sink (the entry point's; a text-mode sink on the standard streams outside a
    run)."""
    return _current[-1]


@contextmanager
def installed(json_to: str | None) -> Iterator[Sink]:
    """The sink of one run of a command with `--json` `json_to`, current inside; under `--json`
    alone it holds stdout for the JSON and `sys.stdout` points at nothing meanwhile."""
    if json_to != JSON_ON_STDOUT:
        sink = Sink(json_to)
        _current.append(sink)
        try:
            yield sink
        finally:
            _current.pop()
        return
    real = sys.stdout
    sink = Sink(json_to, out=real)
    _current.append(sink)
    sys.stdout = Nowhere()
    try:
        yield sink
    finally:
        sys.stdout = real
        _current.pop()


def say(text: str = "", *, end: str = "\n", flush: bool = False) -> None:
    """`current().say`: a line of the command's text."""
    current().say(text, end=end, flush=flush)


def warn(text: str, *, flush: bool = False) -> None:
    """`current().warn`: a line on standard error."""
    current().warn(text, flush=flush)


def result(text: str, json_text: str) -> None:
    """`current().result`: the command's result, text or JSON as `--json` says."""
    current().result(text, json_text)


def emit_json(data: object) -> None:
    """`current().emit_json`: the JSON of a command whose text went out as it ran."""
    current().emit_json(data)
