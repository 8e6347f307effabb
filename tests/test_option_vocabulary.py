"""One option vocabulary across the commands: where two commands take the same kind of value,
they take it under the same name (docs/architecture.md#one-option-vocabulary). A command may keep
an older spelling beside it, never instead of it. Read from the real parser (`j0.cli`)."""

from __future__ import annotations

import argparse

from j0.cli import build_parser

# an older or other spelling -> the name every command that takes the value answers to
CANONICAL = {
    "--output": "--out",
    "--prefix-cache": "--prefix-caching",
    "--no-prefix-cache": "--no-prefix-caching",
    "--outdir": "--out",
    "--output-dir": "--out",
    "--server": "--url",
    "--base-url": "--url",
    "--time-limit": "--timeout",
    "--quiet-progress": "--no-progress",
    "--dir": "--out",
}


def _parsers(parser: argparse.ArgumentParser, prog: str = "j0"):
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


def test_every_other_spelling_stands_beside_the_shared_name() -> None:
    seen = []
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                if flag in CANONICAL:
                    seen.append(flag)
                    assert CANONICAL[flag] in action.option_strings, (prog, flag)
    # the sweep reads the real parsers
    assert {"--output", "--prefix-cache", "--dir"} <= set(seen)


def test_the_shared_names_mean_one_thing() -> None:
    """--json is always the one form of j0.commands.add_json_option (an optional OUT: alone or
    with `-`, on stdout); --out and --url always take a value."""
    with_json = []
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            if "--json" in action.option_strings:
                with_json.append(prog)
                assert (action.metavar, action.nargs, action.const) == ("OUT", "?", "-"), prog
            if {"--out", "--url"} & set(action.option_strings):
                assert action.nargs is None and not isinstance(action.const, bool), prog
    assert len(with_json) >= 17, with_json
