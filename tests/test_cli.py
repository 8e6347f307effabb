"""The `j0` entry point's exit codes, as a shell sees them: `python -m j0 ...` in a subprocess.

64 is a command-line usage error, for every command and subcommand (argparse's own 2 would read
as "the input lacks what the command checks"); checks that refuse an argument value after
parsing exit 64 too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0 import errors
from j0.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def j0(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    return subprocess.run(
        [sys.executable, "-m", "j0", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_usage_code_is_64() -> None:
    assert errors.USAGE == 64
    assert "  64  command-line usage error" in errors.EXIT_CODE_TABLE


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--no-such-option",),
        ("no-such-command",),
        ("overlay",),
        ("overlay", "build", "--tool", "nope"),
        ("overlay", "build", "--base", "a", "--installed"),
        ("overlay", "verify"),
        ("drafter", "fetch", "--no-such-option"),
        ("image", "smoke"),
        ("selfcheck", "--cases", "many"),
        ("serve", "--api-key-file"),
    ],
)
def test_argument_errors_exit_64_with_the_usage(args: tuple[str, ...]) -> None:
    result = j0(*args)
    assert result.returncode == 64, (args, result.stderr)
    assert "usage: j0" in result.stderr and "error:" in result.stderr
    assert "Traceback" not in result.stderr


def test_argument_errors_exit_64_in_process_too() -> None:
    with pytest.raises(SystemExit) as info:
        main(["overlay", "build", "--tool", "nope"])
    assert info.value.code == 64


def test_selfcheck_with_no_cases_is_a_usage_error() -> None:
    result = j0("selfcheck", "--cases", "0")
    assert result.returncode == 64
    assert "argument --cases: '0': expected a whole number from 1" in result.stderr


def test_serve_without_a_model_is_a_usage_error() -> None:
    """`j0 serve -- ARGS` with ARGS empty (TARGET_MODEL empty in compose): refused before
    anything starts."""
    result = j0("serve", "--dry-run", "--")
    assert result.returncode == 64
    assert "no target model" in result.stderr and "TARGET_MODEL" in result.stderr


def test_serve_with_an_option_first_and_no_model_option() -> None:
    result = j0("serve", "--dry-run", "--", "--max-num-seqs", "4")
    assert result.returncode == 64
    assert "no target model" in result.stderr


def test_a_dir_named_like_another_method_is_a_usage_error(tmp_path: Path) -> None:
    result = j0("drafter", "fetch", "--dir", str(tmp_path / "eagle3-head"))
    assert result.returncode == 64
    assert "vLLM issue 47486" in result.stderr


REAL_BUILD_PARSER = build_parser


def _parser_with_a_bug() -> argparse.ArgumentParser:
    """The real parser plus one command whose handler has a bug (raises an unexpected error)."""
    parser = REAL_BUILD_PARSER()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    def buggy(args: argparse.Namespace) -> int:
        return {"a": 1}["missing key " + args.what]

    bug = subparsers.add_parser("buggy")
    bug.add_argument("what")
    bug.set_defaults(func=buggy)
    return parser


def test_an_internal_error_is_exit_70_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from j0 import cli

    monkeypatch.delenv("J0_DEBUG", raising=False)
    monkeypatch.setattr(cli, "build_parser", _parser_with_a_bug)
    assert cli.main(["buggy", "x"]) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("j0 buggy: internal error (a bug in j0, not a verdict) on `j0 buggy x`")
    assert "KeyError: 'missing key x'" in err and "J0_DEBUG=1" in err


def test_j0_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from j0 import cli

    monkeypatch.setenv("J0_DEBUG", "1")
    monkeypatch.setattr(cli, "build_parser", _parser_with_a_bug)
    with pytest.raises(KeyError):
        cli.main(["buggy", "x"])


def test_the_exit_code_table_names_70() -> None:
    from j0.errors import EXIT_CODE_TABLE, INTERNAL

    assert INTERNAL == 70
    assert "  70  internal error" in EXIT_CODE_TABLE


def test_every_help_page_ends_with_the_exit_code_table() -> None:
    """`j0 CMD --help` and `j0 GROUP SUB --help`, for every command and subcommand."""
    import argparse

    from j0.cli import build_parser

    def pages(parser: argparse.ArgumentParser, prog: str) -> dict[str, argparse.ArgumentParser]:
        found = {prog: parser}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found |= pages(sub, f"{prog} {name}")
        return found

    every = pages(build_parser(), "j0")
    assert {"j0 overlay", "j0 drafter", "j0 dumps check", "j0 engine-check"} <= set(every)
    lacking = {prog for prog, p in every.items() if "69  " not in p.format_help()}
    assert lacking == set(), sorted(lacking)


def _help_pages(parser: argparse.ArgumentParser, prog: str) -> dict[str, str]:
    """Every help page under `parser`, by its command line, as argparse prints it."""
    found = {prog: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _help_pages(sub, f"{prog} {name}")
    return found


def test_a_command_alone_is_parsed_as_in_the_whole_parser() -> None:
    """`j0 COMMAND ...` builds the parser of that command alone (j0.cli.command_parser): the
    table of which module registers which command is what the modules register, and every help
    page (every option, default and choice) of the command is the whole parser's, word for word;
    `j0 --help`, `j0` alone and an unknown name get the whole parser."""
    from j0 import cli

    registered = {}
    for module in cli.COMMAND_MODULES:
        subparsers = argparse.ArgumentParser().add_subparsers()
        __import__(module, fromlist=["register"]).register(subparsers)
        registered |= dict.fromkeys(subparsers.choices, module)
    assert registered == cli.MODULE_OF
    whole = _help_pages(build_parser(), "j0")
    for command in cli.MODULE_OF:
        alone = _help_pages(cli.command_parser([command, "--help"]), "j0")
        mine = {prog: page for prog, page in whole.items() if prog.startswith(f"j0 {command}")}
        assert {prog: page for prog, page in alone.items() if prog != "j0"} == mine, command
    for argv in (["--help"], [], ["nope"], ["--version"]):
        assert set(_help_pages(cli.command_parser(argv), "j0")) == set(whole), argv
