"""One rule for exit codes, written once (scripts/j0/errors.py's EXIT_CODES), and every command's
documented exits walked against what the command does (issue 52, item 5).

- README.md's table is errors.py's rows, word for word; `--help` prints the same table.
- Every exit code a document or a `--help` names is one of the table's.
- Every command, walked through its real parser: an option it does not take is 64; each input it
  reads (a positional file or folder), absent, is 2, naming the path.
- What the docs and the help texts say a command exits with in a given case (CLAIMS): the words
  are looked up in the document, the code read from those words (never from j0's constants), and
  the command run as a user would run it. Docker claims run the real engine (an image that is
  not there: never pulled); they skip without one, except under J0_REQUIRE_DOCKER=1.

Before: `j0 serve`'s refusals exited 64 where docs/serve.md said 2; an absent image 2 where the
README said 69; `j0 mini run` and `j0 mini curves` on a missing folder 64 where other missing
inputs exit 2.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from j0 import errors
from j0.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Signals as a shell reports them (128 + the signal): SIGHUP's 129 is named in the table's 143 row.
SIGNAL_CODES = {129}


def leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of `j0` with its parser (`overlay verify`, `doctor`, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from leaves(sub, (*path, name))


COMMANDS = dict(leaves(build_parser()))


def help_text(command: str) -> str:
    return COMMANDS[tuple(command.split())].format_help()


def flat(text: str) -> str:
    """A text with its line breaks and runs of spaces as one space (words across lines)."""
    return re.sub(r"\s+", " ", text)


def run_j0(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """`j0 ARGV` in this process: its exit code (a parser's refusal included) and its output."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as ended:
        code = int(ended.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


# --- the rule, written once -----------------------------------------------------------------


def test_the_readme_table_is_the_rule_in_errors_py() -> None:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Exit codes")
    rows = [line for line in text[start:].splitlines()[1:] if line.startswith("|")]
    rows = rows[: len(errors.EXIT_CODES) + 2]
    assert rows == errors.exit_code_rows()


def test_every_help_prints_the_rule() -> None:
    for path, parser in COMMANDS.items():
        assert errors.EXIT_CODE_TABLE in parser.format_help(), path


def named_codes(text: str) -> set[int]:
    """The codes a text says a command exits with: "exit 2", "exits 64", "exit 0/1/2",
    "Exit 0: ...; 1: ...; 2: ..." (each code of such a list)."""
    text = flat(text)
    codes: set[int] = set()
    for match in re.finditer(r"\b[Ee]xits?(?: with)?(?: code)? (\d+(?:/\d+)*)", text):
        codes |= {int(c) for c in match.group(1).split("/")}
    for match in re.finditer(r"\bExit (\d+): [^.]*(?:\.|$)", text):
        codes |= {int(c) for c in re.findall(r"(?:^|; |, )(\d+): ", match.group(0)[5:])}
        codes.add(int(match.group(1)))
    return codes


def test_every_code_a_document_or_a_help_names_is_in_the_table() -> None:
    known = {code for code, _ in errors.EXIT_CODES} | SIGNAL_CODES
    found: dict[str, set[int]] = {}
    for doc in DOCS:  # lines about a script of ours (scripts/mini-gpu.sh's 75...) are its codes
        lines = doc.read_text().splitlines()
        about_j0 = [x for x in lines if not re.search(r"scripts/(?!j0/)[\w.-]+", x)]
        found[str(doc.relative_to(ROOT))] = named_codes("\n".join(about_j0))
    for path, parser in COMMANDS.items():
        found["j0 " + " ".join(path) + " --help"] = named_codes(parser.format_help())
    assert 64 in found["README.md"] | found["docs/bench.md"]  # the reader reads what it looks for
    unknown = {where: codes - known for where, codes in found.items() if codes - known}
    assert not unknown, unknown


# --- every command, walked ------------------------------------------------------------------

# Positionals that name what a command writes, not what it reads.
OUTPUTS = {("deploy", "render"): "dir", ("mini", "train"): "out"}
# What a command needs beside its input to get as far as reading it.
BESIDE = {
    ("dumps", "replay"): ("--drafter", ".", "--target", "."),
    ("mini", "run"): ("--here",),
    ("image", "smoke"): (),
}
# What a command's other positionals are where one of them is the absent one: a folder by
# default; dumps compare's other folder a real dump set (the recorded H200 run).
PRESENT = {("dumps", "compare"): str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")}
# Positionals that are not files (an image reference, vLLM's arguments).
NOT_FILES = {("image", "smoke"): "image", ("serve",): "serve_args"}


def input_positionals() -> list[tuple[tuple[str, ...], int, int]]:
    """(command, the positional's index, how many) for every positional a command reads."""
    found = []
    for path, parser in COMMANDS.items():
        names = [
            a.dest
            for a in parser._actions
            if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
        ]
        for index, name in enumerate(names):
            if name not in (OUTPUTS.get(path), NOT_FILES.get(path)):
                found.append((path, index, len(names)))
    return found


@pytest.mark.parametrize(
    ("path", "index", "count"),
    input_positionals(),
    ids=lambda v: "-".join(v) if isinstance(v, tuple) else str(v),
)
def test_an_absent_input_is_exit_2(
    path: tuple[str, ...],
    index: int,
    count: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's 2 ("a file or folder it reads is missing"), for every command's inputs; the
    others given as folders that exist (the absent one is the one named)."""
    monkeypatch.chdir(tmp_path)
    absent = tmp_path / "absent"
    other = PRESENT.get(path, str(tmp_path))
    args = [str(absent) if i == index else other for i in range(count)]
    code, said = run_j0(capsys, *path, *args, *BESIDE.get(path, ()))
    row = dict(errors.EXIT_CODES)[code] if code in dict(errors.EXIT_CODES) else None
    assert code == 2, (code, row, said)
    assert str(absent) in said, said


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_an_option_no_command_takes_is_exit_64(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    parser = COMMANDS[path]
    given: list[str] = []
    for action in parser._actions:  # what it requires, so that the option is what is refused
        if action.option_strings and action.required:
            given += [action.option_strings[-1], "x"]
        elif not action.option_strings and action.nargs != argparse.REMAINDER:
            given.append("x")
    code, said = run_j0(capsys, *path, *given, "--no-such-option-anywhere")
    assert code == 64, said
    assert "--no-such-option-anywhere" in said, said


# --- what the documents say, case by case ---------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A document's words (a regular expression whose one group is the exit code, searched in
    the document with its line breaks as spaces) and the case they speak of: `argv`, in a
    folder of its own ({tmp}), after `setup`."""

    source: str  # a file of the repository, or "help: COMMAND" (that command's --help)
    says: str
    argv: tuple[str, ...]
    setup: Callable[[Path], None] | None = None
    docker: bool = False

    def text(self) -> str:
        if self.source.startswith("help: "):
            return flat(help_text(self.source.removeprefix("help: ")))
        return flat((ROOT / self.source).read_text())


def _file_in(folder: str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / folder).mkdir()
        (tmp / folder / "mine.txt").write_text("the user's\n")

    return setup


def _existing(name: str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / name).write_text("the user's own file\n")

    return setup


ABSENT_IMAGE = "j0-test/no-such-image:never-built"
CLAIMS = {
    "readme-absent-image": Claim(
        "README.md",
        r"\| (\d+) \| what the command needs is not installed or not here: [^|]*an image",
        ("image", "smoke", ABSENT_IMAGE),
        docker=True,
    ),
    "image-absent": Claim(
        "docs/image.md",
        r"an image that is not present is exit (\d+)",
        ("image", "smoke", ABSENT_IMAGE),
        docker=True,
    ),
    "serve-refusal": Claim(
        "docs/serve.md",
        r"what vLLM would refuse \(an ambiguous prefix, an unknown option\), all exit (\d+)",
        ("serve", "--dry-run", "--", "Qwen/Qwen3.8-27B", "--no-such-vllm-option"),
    ),
    "mini-run-missing": Claim(
        "help: mini run",
        r"(\d+): a check could not run, or OUT is missing",
        ("mini", "run", "{tmp}/absent", "--here"),
    ),
    "mini-run-not-trained": Claim(
        "help: mini run",
        r"(\d+): a check could not run, or OUT is missing or not made by `j0 mini train`",
        ("mini", "run", "{tmp}/plain", "--here"),
        setup=_file_in("plain"),
    ),
    "mini-curves-missing": Claim(
        "help: mini curves", r"(\d+): no logs there", ("mini", "curves", "{tmp}/absent")
    ),
    "mini-train-used": Claim(
        "help: mini train",
        r"(\d+): bad arguments, or OUT not new or empty",
        ("mini", "train", "{tmp}/used", "--smoke", "--device", "cpu"),
        setup=_file_in("used"),
    ),
    "dumps-not-a-folder": Claim(
        "docs/dumps.md",
        r"Exit (\d+) also for a folder that is not a dump folder \(absent",
        ("dumps", "check", "{tmp}/absent"),
    ),
    "dumps-max-slots": Claim(
        "docs/dumps.md",
        r"`--max-slots` outside its range is a usage error \(exit (\d+)\)",
        ("dumps", "check", "{tmp}", "--max-slots", "0"),
    ),
    "bench-existing-out": Claim(
        "docs/bench.md",
        r"An existing `--out` is refused \(exit (\d+), naming the file\)",
        ("bench", "run", "--url", "http://127.0.0.1:9", "--out", "{tmp}/r.json"),
        setup=_existing("r.json"),
    ),
    "selfcheck-seed": Claim(
        "docs/architecture.md",
        r"`j0 selfcheck --seed -1`: exit (\d+)",
        ("selfcheck", "--seed", "-1"),
    ),
}


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_what_the_documents_say_a_command_exits_with(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = CLAIMS[name]
    found = re.search(claim.says, claim.text())
    assert found, f"{claim.source} no longer says {claim.says!r}: the claim changed, walk it again"
    said_code = int(found.group(1))
    if claim.docker:
        from conftest import require_docker

        require_docker()
    if claim.setup is not None:
        claim.setup(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in claim.argv]
    code, said = run_j0(capsys, *argv)
    assert code == said_code, (claim.source, found.group(0), code, said)
    assert "internal error" not in said and "Traceback" not in said, said
