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


def groups(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        yield prefix, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from groups(sub, f"{prefix} {name}".strip())


GROUPS = dict(groups(build_parser()))


@pytest.mark.parametrize("name", sorted(GROUPS), ids=lambda n: n or "j0")
def test_a_group_help_shows_one_example_of_each_command_below_it(name: str) -> None:
    """`j0 --help` one of each top-level command, `j0 overlay --help` one of each overlay
    command: each line one of that command's own examples (so the parser takes it, above)."""
    text = GROUPS[name].format_help()
    shown = text[text.index("examples:\n") : text.index("exit codes")].splitlines()[1:]
    below = [n for n in COMMANDS if not name or n.startswith(name + " ")]
    heads = {n.split()[0] for n in below} if not name else set(below)
    lines = [line.removeprefix("  ") for line in shown if line.strip()]
    assert len(lines) == len(heads) >= 1, (name, lines)
    owners = {next(n for n in below if line in EXAMPLES[n]) for line in lines}
    assert ({o.split()[0] for o in owners} if not name else owners) == heads


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
