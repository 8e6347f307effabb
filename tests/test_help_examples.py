"""Every command's --help ends with examples (j0.commands.EXAMPLES, shown by add_command), and
each example is a command line the real parser (j0.cli.build_parser) takes: an example that names
an option the command no longer has, or lacks a required one, fails here, not in a user's shell."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator

import pytest

from j0.cli import build_parser
from j0.commands import EXAMPLES


def leaves(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from leaves(sub, f"{prefix} {name}".strip())


COMMANDS = dict(leaves(build_parser()))


def test_every_command_has_examples_and_every_example_a_command() -> None:
    assert len(COMMANDS) >= 25
    assert sorted(COMMANDS) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_ends_with_the_examples_then_the_exit_codes(name: str) -> None:
    text = COMMANDS[name].format_help()
    shown = text[text.index("examples:\n") :]
    for line in EXAMPLES[name]:
        assert f"\n  {line}\n" in shown
    assert shown.index("examples:") < shown.index("exit codes")


@pytest.mark.parametrize(
    "line", [line for name in sorted(EXAMPLES) for line in EXAMPLES[name]], ids=str
)
def test_each_example_is_taken_by_the_parser(line: str) -> None:
    words = shlex.split(line.split(" > ")[0], comments=True)
    assert words[0] == "j0"
    command = next(n for n in sorted(EXAMPLES, key=len, reverse=True) if line in EXAMPLES[n])
    assert words[1 : 1 + len(command.split())] == command.split()
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exc:  # argparse's refusal
        pytest.fail(f"{line!r}: the parser refuses it (exit {exc.code})")
