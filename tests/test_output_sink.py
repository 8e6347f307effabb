"""One output sink (issue 56 item 4): the `j0` command's text, warnings and result go through
j0.terminal.sink, which the entry point makes from `--json`; no module below it calls `print`,
but the programs of their own listed here (run as `python -m MODULE`, in a worker, a pod or an
image build, their standard output read by whoever started them). Under `--json` alone stdout
holds the JSON and nothing else: the sink's text goes nowhere (as it always did), warnings go to
standard error, and a stray write on `sys.stdout` (a library's) cannot reach stdout either."""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scripts" / "j0"
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port here

# The modules that still call print, how many times, and why (the count is exact: a print added
# to one of them fails here as well as one added elsewhere).
PRINTS_ALLOWED = {
    # programs of their own: `python -m MODULE`, their stdout read by the script that runs them
    "j0.article.server_flags": (4, "the GPU scripts' `python -m` program: the flags on stdout"),
    "j0.engine.server.speculator_identity": (3, "`python -m` in the image: the identity line"),
    "j0.engine.source.torch_version": (2, "`python -m` under another Python: one JSON line"),
    "j0.engine.source.vllm_version": (2, "`python -m` under another Python: one JSON line"),
    "j0.engine_check.prefix_requests": (1, "engine-check's request sender, a program"),
    "j0.engine_check.scenarios.sender": (1, "engine-check's scenario runner, a program"),
    "j0.engine_check.scenarios.table": (3, "`python -m` on a results file: a markdown table"),
    "j0.engine_check.tiny_models": (2, "`python -m` in the engine-check container"),
    "j0.selfcheck.worker": (10, "selfcheck's worker process (its stdout: the cases)"),
    "j0.selfcheck.zygote": (4, "selfcheck's zygote process"),
    "j0.bench.matrix.k8s.pod": (6, "the matrix's pod program"),
    # the image build's steps, which run inside `docker build` with the package's files alone
    "j0.image.build_step": (10, "the image build's step (RUN python -m ...)"),
    "j0.image.engine_step": (9, "the image build's first step (RUN python -m ...)"),
    # copied alone into the image build's first stage (docker/Dockerfile), without j0.terminal
    "j0.engine.source.base_sources": (2, "in the image's first stage, where j0.terminal is absent"),
}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def prints_in(path: Path) -> int:
    """How many calls of the builtin `print` the module makes (not `console.print`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return sum(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
        for node in ast.walk(tree)
    )


def prints_by_module(package: Path = PACKAGE) -> dict[str, int]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts and (count := prints_in(path)):
            found[module_name(path, package)] = count
    return found


def test_the_print_finder_counts_a_planted_print(tmp_path: Path) -> None:
    """Planted in a package of the test's own, named j0 as the real one: planted in the real
    package for a moment, other workers' tests saw it (the rule below failed on
    `j0._planted_print`, and an image test's copy of scripts/j0 lost it halfway: fast-subset runs
    of 2026-12-07)."""
    package = tmp_path / "j0"
    shutil.copytree(PACKAGE / "terminal", package / "terminal")  # a real module beside it
    planted = package / "_planted_print.py"
    planted.write_text(
        "import sys\nprint('a')\ndef f(console):\n    print('b', file=sys.stderr)\n"
        "    console.print('not one')\n    s = \"print('nor this')\"\n"
    )
    assert prints_in(planted) == 2
    assert prints_by_module(package) == {"j0._planted_print": 2}


def test_no_print_outside_the_sink_but_the_programs_of_their_own() -> None:
    """Where a module calls `print` it is a program of its own (PRINTS_ALLOWED); the `j0`
    command and every module it runs write through j0.terminal.sink. (Before issue 56's move:
    115 prints in 36 modules, `--json` muting stdout around them.)"""
    allowed = {module: count for module, (count, _why) in PRINTS_ALLOWED.items()}
    assert prints_by_module() == allowed


# The sink itself, in this process: what reaches stdout and stderr in each mode.


def run_with_sink(json_to: str | None, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    from j0.terminal import sink

    with sink.installed(json_to):
        sink.say("a line of text")
        print("a library's stray line")
        sink.warn("j0: warning: a warning")
        sink.result("the result as text", '{"result": 1}')
    out, err = capsys.readouterr()
    return out, err


def test_without_json_the_text_and_the_result_are_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, err = run_with_sink(None, capsys)
    assert out == "a line of text\na library's stray line\nthe result as text\n"
    assert err == "j0: warning: a warning\n"


def test_json_alone_puts_the_json_alone_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = run_with_sink("-", capsys)
    assert out == '{"result": 1}\n'
    assert err == "j0: warning: a warning\n"


def test_json_out_writes_the_file_and_keeps_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "r.json"
    out, err = run_with_sink(str(out_file), capsys)
    assert out == "a line of text\na library's stray line\nthe result as text\n"
    assert err == "j0: warning: a warning\n"
    assert out_file.read_text() == '{"result": 1}\n'


def test_the_sink_gives_stdout_back_after_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    from j0.terminal import sink

    before = sys.stdout
    with pytest.raises(RuntimeError), sink.installed("-"):
        raise RuntimeError("the command failed")
    assert sys.stdout is before
    assert sink.current().json_to is None  # outside a run: text on the standard streams


def test_a_text_stream_under_json_alone_keeps_nothing() -> None:
    from j0.terminal.sink import Sink

    shown = io.StringIO()
    Sink(None, out=shown).text_stream().write("a table\n")
    Sink("-", out=shown).text_stream().write("a hidden table\n")
    assert shown.getvalue() == "a table\n"


# Through the front door, as a shell runs it: `--json` alone prints one JSON document and nothing
# else, the same document `--json OUT` writes; the text of the plain run is not in it.


def j0(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    return subprocess.run(
        [sys.executable, "-m", "j0", *args],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


COMMANDS = {
    "image identity": ["image", "identity"],
    "overlay verify": ["overlay", "verify", str(ROOT / "pyproject.toml")],
    "status": ["status", "--no-probe", "--url", CLOSED],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_alone_is_the_json_out_file_and_holds_no_text(name: str, tmp_path: Path) -> None:
    args = COMMANDS[name]
    text = j0(*args)
    alone = j0(*args, "--json")
    out = tmp_path / "result.json"
    written = j0(*args, "--json", str(out))
    assert text.returncode == alone.returncode == written.returncode, alone.stderr
    assert json.loads(alone.stdout) == json.loads(out.read_text())  # one document, nothing else
    assert alone.stdout.startswith("{") and alone.stdout.rstrip().endswith("}")
    assert written.stdout == text.stdout and text.stdout.strip()
    for line in text.stdout.splitlines():
        if line.strip() and not line.strip().startswith(("{", "}", "[", "]", '"')):
            assert line not in alone.stdout.splitlines(), line
