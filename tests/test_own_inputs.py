"""No output of any command is one of its inputs (issue 53, item 1): `j0 status --log L --json L`
destroyed the server log, and the same held for the API key file, a benchmark result under
`bench report`, the drafter's config.json under `drafter check`, the speculator.py under
`overlay verify`, mini.json under `mini curves`. One rule (j0.edge.own_inputs), judged at the
entry point before any work: an output that is the same file as an input (device and inode,
links followed, not the spelling), or an existing file inside a folder the command reads, is a
usage error (exit 64) naming both, and nothing is written.

The sweep walks every command's output options as the parsers declare them
(j0.commands.writes; --json through add_json_option): each has a case here where it names one
of that command's inputs, and a new output option without one fails
`test_the_sweep_covers_every_output_option`; a path argument that says neither read nor written
fails `test_every_path_argument_is_read_or_written`. The pins file, which every command reads,
is an input of every command (the commands that read nothing else are swept with it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from j0.cli import build_parser, main
from j0.edge.own_inputs import _label, refuse_writing_inputs
from j0.errors import USAGE, J0Error

ROOT = Path(__file__).resolve().parents[1]
URL = "http://127.0.0.1:9"

# (command, the output option as its label, the command line: the output names an input)
CASES: list[tuple[str, str, list[str]]] = [
    ("overlay build", "--out", ["--base", "{file}", "-o", "{file}"]),
    ("overlay build", "--json", ["--base", "{file}", "--json", "{file}"]),
    ("overlay verify", "--json", ["{file}", "--json", "{link}"]),  # a link to the input
    ("selfcheck", "--json", ["--speculator", "{file}", "--json", "{hardlink}"]),  # a hard link
    ("selfcheck", "--audit-out", ["--speculator", "{file}", "--audit", "--audit-out", "{file}"]),
    ("image build", "--json", ["--json", "{pins}"]),
    ("image smoke", "--json", ["IMAGE", "--json", "{pins}"]),
    ("image identity", "--json", ["--json", "{pins}"]),
    ("drafter fetch", "--out", ["--out", "{pins}"]),
    ("drafter fetch", "--json", ["--json", "{pins}"]),
    ("drafter patch-config", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("drafter check", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("serve", "--json", ["--dry-run", "--api-key-file", "{file}", "--json", "{file}"]),
    ("dumps show", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("dumps check", "--json", ["{dir}", "--log", "{file}", "--json", "{file}"]),
    ("dumps audit", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("dumps compare", "--json", ["{dir}", "{dir}", "--json", "{dir}/config.json"]),
    ("dumps compare", "--plots", ["{dir}", "{dir}", "--plots", "{dir}"]),
    ("dumps replay", "--json", ["{dir}", "--drafter", "{dir}", "--target", "{dir}", "--json",
                                "{dir}/config.json"]),
    ("dumps replay", "--out", ["{dir}", "--drafter", "{dir}", "--target", "{dir}", "--out",
                               "{dir}/sub"]),
    ("bench run", "--out", ["--url", URL, "--out", "{file}", "--log", "{file}"]),
    ("bench run", "--json", ["--url", URL, "--out", "{tmp}/r.json", "--status-json", "{file}",
                             "--json", "{file}"]),
    ("bench matrix", "--out", ["--out", "{file}", "--system-prompt", "@{file}"]),
    ("bench matrix", "--json", ["--out", "{tmp}/m", "--dataset", "{file}", "--json", "{file}"]),
    ("bench report", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("bench report", "--out", ["{dir}", "--weights-index", "{file}", "--out", "{file}"]),
    ("deploy render", "DIR", ["{pins}"]),
    ("deploy render", "--json", ["{tmp}/k8s", "--json", "{pins}"]),
    ("doctor", "--json", ["--json", "{pins}"]),
    ("status", "--json", ["--log", "{file}", "--json", "{file}"]),
    ("engine-check", "--json", ["--here", "--models", "{dir}", "--json", "{dir}/config.json"]),
    ("engine-check", "--keep", ["--here", "--models", "{dir}", "--keep", "{dir}"]),
    ("mini train", "OUT", ["{pins}"]),
    ("mini train", "--json", ["{tmp}/t", "--json", "{pins}"]),
    ("mini run", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("mini run", "--run-dir", ["{dir}", "--run-dir", "{pins}"]),
    ("mini speed", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("mini sets", "--json", ["{dir}", "--json", "{dir}/config.json"]),
    ("mini sets", "--write", ["{dir}", "--write", "{dir}"]),
    ("mini numbers", "--json", ["{file}", "--json", "{file}"]),
    ("mini curves", "--json", ["{dir}", "--json", "{dir}/config.json"]),
]  # fmt: skip

# Outputs beside inputs that the rule lets through: a new file in a folder read, a file the
# command writes into that folder itself, an output folder its docs put in the input's.
ALLOWED: list[list[str]] = [
    ["drafter", "check", "{dir}", "--json", "{dir}/new.json"],
    ["bench", "report", "{dir}", "--json", "{dir}/report.json"],
    ["bench", "report", "{dir}", "--out", "{dir}"],
    ["mini", "run", "{dir}", "--run-dir", "{dir}/run2"],
    ["status", "--log", "{file}", "--json", "{tmp}/status.json"],
    ["status", "--log", "{file}", "--json"],
]


def leaf_parsers() -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[" ".join(words)] = parser
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, [*words, name])

    walk(build_parser(), [])
    return found


def names_a_path(action: argparse.Action) -> bool:
    metavar = str(action.metavar or "")
    named = metavar in ("OUT", "README", "SET", "FOLDER", "TARGET") or "FILE" in metavar
    return action.type is Path or action.dest == "json" or named or "DIR" in metavar


def test_every_path_argument_is_read_or_written() -> None:
    """Each argument that names a path (typed Path, --json, a FILE or DIR metavar) says whether
    the command reads or writes it: an unmarked one would escape the rule."""
    unmarked = [
        f"{command} {_label(action)}"
        for command, parser in leaf_parsers().items()
        for action in parser._actions
        if names_a_path(action)
        and not getattr(action, "j0_reads", False)
        and getattr(action, "j0_writes", None) is None
    ]
    assert unmarked == []


def test_the_sweep_covers_every_output_option() -> None:
    declared = {
        (command, _label(action))
        for command, parser in leaf_parsers().items()
        for action in parser._actions
        if getattr(action, "j0_writes", None) is not None
    }
    assert ("status", "--json") in declared and ("deploy render", "DIR") in declared
    missing = sorted(declared - {(command, label) for command, label, _ in CASES})
    assert not missing, f"output options without a case here: {missing}"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "overlay").mkdir(parents=True)
    shutil.copy(ROOT / "overlay" / "pins.env", home / "overlay" / "pins.env")
    monkeypatch.setenv("J0_HOME", str(home))
    (tmp_path / "in.txt").write_text("the input\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "in.txt")
    os.link(tmp_path / "in.txt", tmp_path / "hard.txt")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}\n')
    return {
        "file": str(tmp_path / "in.txt"),
        "link": str(tmp_path / "link.txt"),
        "hardlink": str(tmp_path / "hard.txt"),
        "dir": str(folder),
        "pins": str(home / "overlay" / "pins.env"),
        "tmp": str(tmp_path),
    }


def fill(args: list[str], places: dict[str, str]) -> list[str]:
    out = []
    for arg in args:
        for key, value in places.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def judged(argv: list[str]) -> None:
    """The rule on a parsed command line, as the entry point judges it (no command runs)."""
    args = build_parser().parse_args(argv)
    refuse_writing_inputs(args.j0_parser, args)


def contents(root: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("command", "output", "argv"), CASES, ids=[f"{c} {o}" for c, o, _ in CASES]
)
def test_an_output_that_names_an_input_is_refused(
    command: str, output: str, argv: list[str], places: dict[str, str]
) -> None:
    line = [*command.split(), *fill(argv, places)]
    with pytest.raises(J0Error) as refused:
        judged(line)
    assert refused.value.exit_code == USAGE
    message = str(refused.value)
    assert message.startswith(f"{output} ") and "never writes into its own input" in message


@pytest.mark.parametrize("argv", ALLOWED, ids=[" ".join(a[:2]) for a in ALLOWED])
def test_an_output_beside_its_inputs_is_let_through(
    argv: list[str], places: dict[str, str]
) -> None:
    (Path(places["dir"]) / "report.json").write_text("{}\n")  # an earlier report
    judged(fill(argv, places))


def test_status_json_onto_its_log_is_refused_and_the_log_kept(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case through the entry point: `j0 status --log L --json L` (and the API key
    file) exit 64 before any work, every file as it was."""
    before = contents(Path(places["tmp"]))
    for option in ("--log", "--api-key-file"):
        line = ["status", "--no-probe", "--url", URL, option, places["file"]]
        assert main([*line, "--json", places["file"]]) == USAGE
        err = capsys.readouterr().err
        assert f"--json {places['file']} is the same file as {option} {places['file']}" in err
    assert contents(Path(places["tmp"])) == before


def test_the_pins_file_is_an_input_of_every_command(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = contents(Path(places["tmp"]))
    assert main(["image", "identity", "--json", places["pins"]]) == USAGE
    assert "the pins file" in capsys.readouterr().err
    assert contents(Path(places["tmp"])) == before


def test_drafter_check_json_onto_its_config_is_refused(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`j0 drafter check DIR --json DIR/config.json` replaced the drafter's config with the
    verdict (exit 0) before: a file inside a folder the command reads."""
    config = Path(places["dir"]) / "config.json"
    before = config.read_bytes()
    assert main(["drafter", "check", places["dir"], "--json", str(config)]) == USAGE
    assert f"is inside DIR {places['dir']}, which this command reads" in capsys.readouterr().err
    assert config.read_bytes() == before


def test_the_checkouts_env_file_is_an_input_of_every_command(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """compose's .env beside the pins (doctor, status, engine-check and bench matrix read it as
    compose does): `j0 doctor --json .env` would have replaced it."""
    env = Path(places["pins"]).parents[1] / ".env"
    env.write_text("PORT=8000\n")
    with pytest.raises(J0Error) as refused:
        judged(["doctor", "--json", str(env)])
    assert f"is the same file as compose's .env {env}" in str(refused.value)
