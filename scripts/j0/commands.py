"""What every command's parser shares: help text printed as written, and the exit-code table.

Standard library only (every command's cli.py imports it; `j0 --help` must stay instant).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from j0.errors import EXIT_CODE_TABLE
from j0.terminal.sink import JSON_ON_STDOUT

if TYPE_CHECKING:
    from pathlib import Path


def add_command(
    subparsers: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    summary: str,
    text: str,
    *,
    exit_codes: bool = True,
) -> argparse.ArgumentParser:
    """`subparsers.add_parser(name)` with `summary` in the list of commands, `text` as its
    description (line breaks kept) and at the end its examples (EXAMPLES; a group's: one of each
    command below it) and, unless told otherwise, the exit-code table."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    key = parser.prog.removeprefix("j0 ")
    parser.epilog = epilog(EXAMPLES.get(key) or group_examples(key), exit_codes) or None
    parser.set_defaults(j0_parser=parser)  # the innermost's: whose reads and writes the entry
    return parser  # point judges (j0.edge.own_inputs)


# What each path argument is to its command: read (an input) or written (an output). The entry
# point refuses, before any work, an output that is one of the command's inputs (the same file,
# by device and inode) or an existing file inside a folder it reads (j0.edge.own_inputs);
# tests/test_own_inputs.py fails on a path argument that says neither.
FILE, FOLDER = "file", "folder"


def _actions(parser: argparse.ArgumentParser, names: tuple[str, ...]) -> list[argparse.Action]:
    found = [a for a in parser._actions if a.dest in names or set(a.option_strings) & set(names)]
    missing = set(names) - {n for a in found for n in (a.dest, *a.option_strings)}
    if missing:  # a typo would leave an argument unjudged
        raise ValueError(f"{parser.prog}: no argument {sorted(missing)}")
    return found


def reads(
    parser: argparse.ArgumentParser,
    *names: str,
    path_of: Callable[[object], list[Path]] | None = None,
    own: tuple[str, ...] | Callable[[], tuple[str, ...]] = (),
) -> None:
    """Mark the arguments `names` (option strings or dests) as inputs of the command. `path_of`
    turns a value into the paths it names where the value is not a path (`@FILE`); `own`: the
    names of files the command itself writes into that folder (which an output may replace), or
    a function that gives them (asked only when a command line is judged)."""
    for action in _actions(parser, names):
        action.j0_reads = True  # type: ignore[attr-defined]
        action.j0_path_of = path_of  # type: ignore[attr-defined]
        action.j0_own = own  # type: ignore[attr-defined]


def writes(
    parser: argparse.ArgumentParser, name: str, kind: str, *, may_be_in: tuple[str, ...] = ()
) -> None:
    """Mark the argument `name` as an output of the command: a FILE or a FOLDER; `may_be_in`:
    the inputs (their dests) that this output folder may be, or lie in, as the command's docs
    say (`j0 bench report DIR` writes its report into DIR)."""
    for action in _actions(parser, (name,)):
        action.j0_writes = kind  # type: ignore[attr-defined]
        action.j0_may_be_in = may_be_in  # type: ignore[attr-defined]


def file_after_at(value: object) -> list[Path]:
    """The file of a `TEXT|@FILE` value (`--system-prompt @FILE`), none for a text."""
    from pathlib import Path

    text = str(value)
    return [Path(text[1:])] if text.startswith("@") and len(text) > 1 else []


def existing_file(value: object) -> list[Path]:
    """The value where it names an existing file (`--dataset NAME|FILE.jsonl`), else none."""
    from pathlib import Path

    path = Path(str(value))
    return [path] if path.is_file() else []


def epilog(examples: tuple[str, ...], exit_codes: bool = True) -> str:
    """What a --help ends with: its examples, then the exit-code table."""
    shown = "examples:\n" + "".join(f"  {line}\n" for line in examples) if examples else ""
    return "\n".join(part for part in (shown, EXIT_CODE_TABLE if exit_codes else "") if part)


def group_examples(group: str) -> tuple[str, ...]:
    """The examples of a command group's --help (`j0 overlay`; "" for `j0` itself): the first
    example of each command below it (for `j0`: of each top-level command), in EXAMPLES' order."""
    found: dict[str, str] = {}
    for name, lines in EXAMPLES.items():
        if lines and (not group or name.startswith(group + " ")):
            found.setdefault(name if group else name.split()[0], lines[0])
    return tuple(found.values())


# The one --json of a command that prints its result: `--json` (or `--json -`) prints the result as
# one JSON object on stdout in place of the text; `--json OUT` writes it into the file OUT and
# prints the text as usual (the form of the commands whose --json OUT always was a file). Where
# each goes is the sink's to say (j0.terminal.sink, which the entry point makes from --json).


def add_json_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--json",
        nargs="?",
        const=JSON_ON_STDOUT,
        metavar="OUT",
        help=f"{what} as JSON: into the file OUT, or, alone (or -), on stdout in place of the text",
    )
    writes(parser, "--json", FILE)  # OUT is the command's own output: replaced where it exists


def check_json_output(json_to: str | None) -> None:
    """Refuse (exit 64), before any work, a --json OUT that cannot be a file to write."""
    if json_to is not None and json_to != JSON_ON_STDOUT:
        from pathlib import Path

        from j0.edge.atomic import check_output_path

        check_output_path(Path(json_to))


def json_file(json_to: str | None) -> Path | None:
    """The file a --json OUT names; None where there is none or the JSON goes to stdout."""
    from pathlib import Path

    return None if json_to in (None, JSON_ON_STDOUT) else Path(json_to)


# Every command's examples, as its --help shows them (one command line each, `# ...` after it
# saying what it does); tests/test_help_examples.py parses each line with the real parser. The
# defaults reproduce the article: the first line of each is the article's setup where it has one.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "overlay build": (
        "j0 overlay build                       # the article's file, from the pinned wheel",
        "j0 overlay build --variant prefix-safe -o prefix-safe.py",
        "j0 overlay build --from-image IMAGE -o speculator.py",
        "j0 overlay build --base speculator.py.base -o speculator.py --json built.json",
        "j0 overlay build --vllm 0.34.0 --variant prefix-safe   # J0 cut for vLLM 0.34.0",
    ),
    "overlay verify": (
        "j0 overlay verify overlay/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py",
        "j0 overlay verify speculator.py --json verdict.json   # the verdict also as JSON",
        "j0 overlay verify --vllm 0.34.0 speculator.py         # 0: article-0.34.0",
    ),
    "selfcheck": (
        "j0 selfcheck --speculator overlay/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py",
        "j0 selfcheck --speculator prefix-safe.py --prefix-cache    # J0 under prefix caching",
        "j0 selfcheck --speculator FILE --device cuda --bench --json out.json",
        "j0 selfcheck --vllm 0.34.0 --variant prefix-safe --prefix-cache   # with vLLM 0.34.0",
    ),
    "image build": (
        "j0 image build                                    # the wheel route (default)",
        "j0 image build --engine image                     # the article's nightly image",
        "j0 image build --variant prefix-safe",
    ),
    "image smoke": (
        "j0 image smoke j0/vllm-openai:compose",
        "j0 image smoke j0/vllm-openai:compose --json smoke.json   # each check also as JSON",
    ),
    "image identity": ("j0 image identity --json",),
    "drafter fetch": (
        "j0 drafter fetch                                  # the pinned revision into ./drafter/",
        "j0 drafter fetch --revision REV --out DIR",
    ),
    "drafter patch-config": ("j0 drafter patch-config DIR",),
    "drafter check": ("j0 drafter check DIR", "j0 drafter check DIR --json  # the verdict as JSON"),
    "serve": (
        "j0 serve --dry-run -- MODEL --max-num-seqs 4    # the checks, vLLM not started",
        "j0 serve --json plan.json -- MODEL --max-num-seqs 4   # keep what ran beside the results",
    ),
    "dumps show": ("j0 dumps show ./dumps",),
    "dumps check": (
        "j0 dumps check ./dumps --json check.json",
        "j0 dumps check ./dumps --log server.log --prompts prompts.json   # prefix-safe runs",
    ),
    "dumps audit": ("j0 dumps audit ./audit --json audit.json",),
    "dumps compare": (
        "j0 dumps compare ./dumps ./dumps-reference --plots plots/",
        "j0 dumps compare ./dumps-j0-off ./dumps --plots plots/   # J0 off vs on",
    ),
    "dumps replay": (
        "j0 dumps replay ./dumps --drafter DRAFTER_DIR --target TARGET_DIR --json r.json",
    ),
    "bench run": (
        "j0 bench run --url http://127.0.0.1:8000 --out results/k15-j0-on/result.json --j0 on",
        "j0 bench run --url http://127.0.0.1:8000 --out r.json --j0 off --dataset math500",
    ),
    "bench matrix": (
        "j0 bench matrix --out results/                    # k15/k7 x J0 off/on, compose",
        "j0 bench matrix --tokens 15 --j0 off,on --dataset math500 --requests 100 --out results/",
        "j0 bench matrix --backend k8s --dry-run --out results/",
    ),
    "bench report": (
        "j0 bench report results/",
        "j0 bench report results/ --gpu H200 --bins 2048,8192",
        "j0 bench report results/ --json    # report.json on stdout, in place of report.md",
    ),
    "deploy render": (
        "j0 deploy render                      # deploy/k8s/ from the pins",
        "j0 deploy render --json render.json   # and each file's sha256 into render.json",
    ),
    "doctor": ("j0 doctor", "j0 doctor --json                                  # on stdout"),
    "status": (
        "j0 status --compose",
        "j0 status --url http://127.0.0.1:8000 --log server.log",
        "j0 status --compose --json status.json           # the same as --json > status.json",
    ),
    "engine-check": (
        "j0 engine-check                                   # in a container of J0_IMAGE, the GPU",
        "j0 engine-check --here --graphs --tokens 15 --keep ec/ --json ec.json",
    ),
    "mini train": (
        "j0 mini train /tmp/mini                           # ~10 min on one H100 or H200",
        "j0 mini train /tmp/mini --smoke --device cpu      # tiny, for a try",
    ),
    "mini run": (
        "j0 mini run /tmp/mini --here --tokens 7",
        "j0 mini run /tmp/mini --here --json verdict.json   # the verdict and summary as JSON too",
    ),
    "mini numbers": (
        "j0 mini numbers docs/results/mini-h200/README.md",
        "j0 mini numbers docs/results/mini-h200/README.md --json   # agrees? the difference",
    ),
    "mini curves": ("j0 mini curves /tmp/mini",),
    "mini speed": (
        "j0 mini speed /tmp/mini                           # after j0 mini run: clean speeds",
        "j0 mini speed /tmp/mini --prompts 16 --repeats 5 --json speed.json",
    ),
    "mini sets": (
        "j0 mini sets docs/results/mini-h100-probe docs/results/mini-h200",
        "j0 mini sets SET0 SET1 SET2 --write docs/results/mini-sets   # sets.json, sets.md",
    ),
}


# Upper bounds for what no run needs more of: a count beyond MAX_COUNT (requests, tokens, steps,
# cases) or a number beyond MAX_NUMBER (seconds, a temperature, a learning rate) is a typo, and
# would overflow a deadline's arithmetic or a list's size rather than run.
# `--device`'s values wherever a command runs models or kernels here (mini, selfcheck): auto
# takes CUDA where torch sees a GPU, else the CPU.
DEVICES = ("auto", "cpu", "cuda")
MAX_COUNT = 10**9
MAX_NUMBER = 1e9
MAX_SEED = 2**63 - 1  # torch.manual_seed and numpy take seeds below 2**64; Philox below 2**64
MAX_PORT = 65535


class NumberType:
    """An argparse type for a number in a range: every numeric option of every command has one
    (tests/test_number_arguments.py walks the parsers and refuses a plain int or float type).
    NaN, infinities, values out of range and text that is not a number are usage errors (exit 64)
    naming the value and the range."""

    def __init__(self, minimum: float, maximum: float, *, whole: bool, above: bool) -> None:
        self.minimum, self.maximum, self.whole, self.above = minimum, maximum, whole, above
        self.__name__ = "whole number" if whole else "number"  # argparse's "invalid ... value"

    def expected(self) -> str:
        def shown(x: float) -> str:
            return str(int(x)) if self.whole else f"{x:g}"

        kind = "a whole number" if self.whole else "a finite number"
        low = f"above {shown(self.minimum)}" if self.above else f"from {shown(self.minimum)}"
        return f"{kind} {low} to {shown(self.maximum)}"

    def __call__(self, text: str) -> int | float:
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
        value: int | float
        try:
            value = int(text) if self.whole else float(text)
        except ValueError:  # also int()'s refusal of more than 4,300 digits
            raise argparse.ArgumentTypeError(f"{shown!r}: expected {self.expected()}") from None
        if (
            not math.isfinite(value)
            or value < self.minimum
            or value > self.maximum
            or (self.above and value == self.minimum)
        ):
            raise argparse.ArgumentTypeError(f"{shown!r}: expected {self.expected()}")
        return value


def finite_number(
    minimum: float, *, above: bool, maximum: float = MAX_NUMBER
) -> Callable[[str], float]:
    """An argparse type: a finite number above `minimum` (above=True) or at least `minimum`, at
    most `maximum`."""
    return NumberType(minimum, maximum, whole=False, above=above)  # type: ignore[return-value]


def whole_number(minimum: int, maximum: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`."""
    return NumberType(minimum, maximum, whole=True, above=False)  # type: ignore[return-value]


class WholeNumbers:
    """An argparse type: whole numbers separated by commas ("7,15"), each in a range."""

    def __init__(self, minimum: int, maximum: int = MAX_COUNT) -> None:
        self.item = NumberType(minimum, maximum, whole=True, above=False)
        self.__name__ = "list of whole numbers"

    def __call__(self, text: str) -> list[int]:
        values = [int(self.item(x.strip())) for x in text.split(",") if x.strip()]
        if not values:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected {self.item.expected()}, e.g. 7,15"
            )
        return values
