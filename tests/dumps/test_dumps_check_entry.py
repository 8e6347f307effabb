"""`run_check(CheckOptions(...))`, the entry point other commands call (engine_check among them):
its result says what `j0 dumps check` says, with the same exit code, and its summary is the very
line the command prints last, on passing, failing, unverifiable and unreadable dump folders.

Expected verdicts come from the scenario's design (simulate.py) and the recorded engine dumps'
README (tests/data/README.md), as in test_dumps_check.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dumpsets import ENGINE, ENGINE_PREFIX, make_sets

from j0.cli import main
from j0.dumps.check.run import CheckOptions, run_check


@pytest.fixture(scope="module")
def sets(article_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sets(article_file, tmp_path_factory.mktemp("dumpsets"))


def last_printed_line(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(["dumps", "check", *args])
    except SystemExit as refused:  # the parser's range check (j0.commands.whole_number)
        code = int(refused.code or 0)
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    return code, lines[-1]


@pytest.mark.parametrize(
    ("folder", "flags", "options", "verdict", "code"),
    [
        ("main-j0-on", [], {}, "PASS", 0),
        ("main-j0-off", [], {}, "PASS", 0),
        ("main-j0-on", ["--seed", "1"], {"seed": 1}, "FAIL", 1),
        ("other-seed", [], {}, "FAIL", 1),
        ("prefix-j0-on", [], {}, "UNVERIFIABLE", 2),
        (
            "prefix-j0-on",
            ["--allow-unverifiable"],
            {"allow_unverifiable": True},
            "UNVERIFIABLE",
            0,
        ),
        ("main-j0-on", ["--skip-requests", "9"], {"skip_requests": 9}, "NOTHING TO CHECK", 2),
        ("main-j0-on", ["--max-slots", "0"], {"max_slots": 0}, "ERROR", 64),
        ("no-such-folder", [], {}, "ERROR", 2),
    ],
)
def test_the_result_says_what_the_command_prints(
    sets: Path,
    capsys: pytest.CaptureFixture[str],
    folder: str,
    flags: list[str],
    options: dict,
    verdict: str,
    code: int,
) -> None:
    cli_code, last = last_printed_line(capsys, str(sets / folder), *flags)
    result = run_check(CheckOptions(sets / folder, **options))
    assert (result.verdict, result.exit_code, cli_code) == (verdict, code, code)
    assert result.ok is (code == 0)
    if last.startswith("j0 dumps check: error: argument "):  # refused by the parser first
        assert code == 64 and "expected a whole number" in last
        return
    assert result.summary == last
    assert last.endswith(f"(exit {code})") or last.startswith("j0: error: ")


def test_the_counts_are_the_reports(sets: Path) -> None:
    # Main scenario (simulate.py): 18 query steps of 7 draft slots in two checked requests.
    result = run_check(CheckOptions(sets / "main-j0-on"))
    assert result.report is not None and result.error is None
    assert (result.requests_checked, result.draws, result.draws_verified) == (2, 126, 126)
    assert (result.draws_mismatched, result.draws_unverifiable, result.failures) == (0, 0, 0)
    failed = run_check(CheckOptions(sets / "main-j0-on", seed=1))
    assert failed.failures > 0 and failed.draws_mismatched > 0 and not failed.ok


def test_engine_dumps_through_the_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    for folder in (ENGINE / "j0-on", ENGINE / "j0-off", ENGINE_PREFIX):
        code, last = last_printed_line(capsys, str(folder))
        result = run_check(CheckOptions(folder))
        assert (result.exit_code, result.summary) == (code, last), folder
    assert run_check(CheckOptions(ENGINE / "j0-on")).ok
    assert not run_check(CheckOptions(ENGINE_PREFIX)).ok  # unverifiable: a prefix-cache hit
