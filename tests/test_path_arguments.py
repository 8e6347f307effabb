"""Every path argument of every command, given a file where a folder goes and a folder where a file
goes (an input or an output): a usage error (64) or "the input lacks what is read" (2), one line
naming the path, never exit 70 (an internal error) or a traceback. The sweep is kept complete:
each argument the parser types as a Path (and the few that take a path in a string) has its cases
here, and a new one without them fails `test_the_sweep_covers_every_path_argument`.

`{file}` is a file of one line of text, `{dir}` an empty folder, `{base}` vLLM's unpatched
speculator.py, `{drafter}` a drafter folder with a config.json, `{trained}` a folder that looks
made by `j0 mini train`, `{tmp}` a fresh folder for outputs; no network is reached (closed port,
the Hub offline) and no GPU is needed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from j0.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
ENGINE = str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")
PROBE = str(ROOT / "docs" / "results" / "mini-h100-probe")  # a model set `j0 mini sets` reads
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port here
SERVE = ["--", "/models/target", "--speculative-config"]
SPEC = '{"method":"dflash","model":"{drafter}","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'

# (command, the argument as the parser names it (its first flag, or its dest), what it is given,
#  the command line) -- the command line's other arguments are valid, or at least not the cause.
CASES: list[tuple[str, str, str, list[str]]] = [
    ("overlay build", "--base", "dir", ["--base", "{dir}", "-o", "{tmp}/o.py"]),
    ("overlay build", "--site-packages", "file", ["--site-packages", "{file}", "-o", "{tmp}/o.py"]),
    ("overlay build", "-o", "dir", ["--base", "{base}", "-o", "{dir}"]),
    ("overlay build", "-o", "file-parent", ["--base", "{base}", "-o", "{file}/o.py"]),
    ("overlay verify", "file", "dir", ["{dir}"]),
    ("selfcheck", "--speculator", "dir", ["--speculator", "{dir}"]),
    ("selfcheck", "--json", "dir", ["--speculator", "{base}", "--json", "{dir}"]),
    ("selfcheck", "--audit-out", "file", ["--speculator", "{base}", "--audit", "--audit-out",
                                          "{file}"]),
    ("drafter fetch", "--out", "file", ["--out", "{file}"]),
    ("drafter patch-config", "dir", "file", ["{file}"]),
    ("drafter patch-config", "--patch", "dir", ["{drafter}", "--patch", "{dir}"]),
    ("drafter check", "dir", "file", ["{file}"]),
    ("serve", "--api-key-file", "dir", ["--dry-run", "--api-key-file", "{dir}", *SERVE, SPEC]),
    ("serve", "--overlay-mount", "dir", ["--dry-run", "--overlay-mount", "{dir}", *SERVE, SPEC]),
    ("serve", "--json", "dir", ["--dry-run", "--json", "{dir}", *SERVE, SPEC]),
    ("dumps show", "dir", "file", ["{file}"]),
    ("dumps show", "--json", "dir", [ENGINE, "--json", "{dir}"]),
    ("dumps check", "dir", "file", ["{file}"]),
    ("dumps check", "--json", "dir", [ENGINE, "--json", "{dir}"]),
    ("dumps check", "--log", "dir", [ENGINE, "--log", "{dir}"]),
    ("dumps check", "--prompts", "dir", [ENGINE, "--prompts", "{dir}"]),
    ("dumps audit", "dir", "file", ["{file}"]),
    ("dumps audit", "--json", "dir", ["{dir}", "--json", "{dir}"]),
    ("dumps compare", "a", "file", ["{file}", ENGINE]),
    ("dumps compare", "b", "file", [ENGINE, "{file}"]),
    ("dumps compare", "--json", "dir", [ENGINE, ENGINE, "--json", "{dir}"]),
    ("dumps compare", "--plots", "file", [ENGINE, ENGINE, "--plots", "{file}"]),
    ("dumps replay", "dir", "file", ["{file}", "--drafter", "{drafter}", "--target", "{dir}"]),
    ("dumps replay", "--drafter", "file", [ENGINE, "--drafter", "{file}", "--target", "{dir}"]),
    ("dumps replay", "--target", "file", [ENGINE, "--drafter", "{drafter}", "--target", "{file}"]),
    ("dumps replay", "--out", "file", [ENGINE, "--drafter", "{drafter}", "--target", "{dir}",
                                       "--out", "{file}"]),
    ("dumps replay", "--json", "dir", [ENGINE, "--drafter", "{drafter}", "--target", "{dir}",
                                       "--json", "{dir}"]),
    ("bench run", "--out", "dir", ["--url", CLOSED, "--out", "{dir}"]),
    ("bench run", "--out", "file-parent", ["--url", CLOSED, "--out", "{file}/r.json"]),
    ("bench run", "--json", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json", "--json", "{dir}"]),
    ("bench run", "--dataset", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json",
                                       "--dataset", "{dir}"]),
    ("bench run", "--dataset-files", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json",
                                             "--dataset", "gsm8k", "--dataset-files", "{dir}"]),
    ("bench run", "--log", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json", "--log", "{dir}"]),
    ("bench run", "--status-json", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json",
                                           "--status-json", "{dir}"]),
    ("bench run", "--system-prompt", "dir", ["--url", CLOSED, "--out", "{tmp}/r.json",
                                             "--system-prompt", "@{dir}"]),
    ("bench matrix", "--out", "file", ["--dry-run", "--out", "{file}"]),
    ("bench matrix", "--system-prompt", "dir", ["--dry-run", "--out", "{tmp}/m",
                                                "--system-prompt", "@{dir}"]),
    ("bench report", "dir", "file", ["{file}"]),
    ("bench report", "--weights-index", "dir", ["{dir}", "--weights-index", "{dir}"]),
    ("bench report", "--out", "file", ["{dir}", "--out", "{file}"]),
    ("deploy render", "dir", "file", ["{file}"]),
    ("status", "--log", "dir", ["--no-probe", "--url", CLOSED, "--log", "{dir}"]),
    ("status", "--api-key-file", "dir", ["--no-probe", "--url", CLOSED, "--api-key-file", "{dir}"]),
    ("status", "--json", "dir", ["--no-probe", "--url", CLOSED, "--json", "{dir}"]),
    ("status", "--json", "file-parent", ["--no-probe", "--url", CLOSED, "--json", "{file}/s.json"]),
    ("doctor", "--json", "dir", ["--json", "{dir}"]),
    ("image identity", "--json", "dir", ["--json", "{dir}"]),
    ("overlay verify", "--json", "dir", ["{base}", "--json", "{dir}"]),
    ("drafter check", "--json", "dir", ["{drafter}", "--json", "{dir}"]),
    ("deploy render", "--json", "dir", ["{tmp}/k8s", "--json", "{dir}"]),
    ("image smoke", "--json", "dir", ["no-such-image", "--json", "{dir}"]),
    ("image build", "--json", "dir", ["--no-pull", "--json", "{dir}"]),
    ("bench report", "--json", "dir", ["{tmp}", "--json", "{dir}"]),
    ("bench matrix", "--json", "dir", ["--out", "{tmp}/m", "--json", "{dir}"]),
    ("drafter patch-config", "--json", "dir", ["{drafter}", "--json", "{dir}"]),
    ("overlay build", "--json", "dir", ["--base", "{base}", "-o", "{tmp}/o.py", "--json", "{dir}"]),
    ("engine-check", "--models", "file", ["--here", "--no-gpu", "--models", "{file}"]),
    ("engine-check", "--keep", "file", ["--here", "--no-gpu", "--keep", "{file}"]),
    ("engine-check", "--json", "dir", ["--here", "--no-gpu", "--json", "{dir}"]),
    ("mini train", "out", "file", ["{file}", "--smoke"]),
    ("mini run", "out", "file", ["{file}", "--here"]),
    ("mini run", "--run-dir", "file", ["{trained}", "--here", "--run-dir", "{file}"]),
    ("mini numbers", "readme", "dir", ["{dir}"]),
    ("mini curves", "out", "file", ["{file}"]),
    ("mini speed", "out", "file", ["{file}"]),
    ("mini speed", "--run-dir", "file", ["{trained}", "--run-dir", "{file}"]),
    ("mini sets", "folders", "file", ["{file}"]),
    ("mini sets", "--write", "file", [PROBE, "--write", "{file}"]),
]  # fmt: skip


def path_arguments() -> set[tuple[str, str]]:
    """(command, argument) for every argument the parser types as a Path."""
    found: set[tuple[str, str]] = set()

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif action.type is Path:
                name = action.option_strings[0] if action.option_strings else action.dest
                found.add((" ".join(words), name))

    walk(build_parser(), [])
    return found


def test_the_sweep_covers_every_path_argument() -> None:
    swept = {(command, argument) for command, argument, _, _ in CASES}
    missing = sorted(path_arguments() - swept)
    assert not missing, f"path arguments without a case here: {missing}"


@pytest.fixture
def places(tmp_path: Path, base_file: Path) -> dict[str, str]:
    (tmp_path / "a-file").write_text("x\n")
    (tmp_path / "a-folder").mkdir()
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    config = {"architectures": ["DFlashDraftModel"], "dflash_config": {"causal": True}}
    (drafter / "config.json").write_text(json.dumps(config))
    trained = tmp_path / "trained"
    for name in ("target", "drafter-mask", "drafter-j0"):
        (trained / name).mkdir(parents=True)
        (trained / name / "config.json").write_text("{}")
    # its target's window covers the default contexts (8 x 64) and the output (256)
    (trained / "mini.json").write_text(json.dumps({"sizes": {"draft_seq": 64, "target_seq": 768}}))
    (tmp_path / "out").mkdir()
    return {
        "file": str(tmp_path / "a-file"),
        "dir": str(tmp_path / "a-folder"),
        "base": str(base_file),
        "drafter": str(drafter),
        "trained": str(trained),
        "tmp": str(tmp_path / "out"),
    }


def fill(arg: str, places: dict[str, str]) -> str:
    for name, value in places.items():
        arg = arg.replace(f"{{{name}}}", value)
    return arg


@pytest.mark.parametrize(
    ("command", "argument", "given", "argv"),
    CASES,
    ids=[f"{c.replace(' ', '-')}{a}-{g}" for c, a, g, _ in CASES],
)
def test_a_path_of_the_other_kind_is_refused_in_one_line(
    command: str,
    argument: str,
    given: str,
    argv: list[str],
    places: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", CLOSED)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("J0_DEBUG", raising=False)
    line = [*command.split(), *(fill(a, places) for a in argv)]
    try:
        code = main(line)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out = capsys.readouterr()
    text = out.out + out.err
    assert code in (2, 64), f"exit {code}: {text}"
    assert "Traceback" not in text and "internal error" not in text, text
    named = places["file"] if given in ("file", "file-parent") else places["dir"]
    errors = [line for line in text.splitlines() if line.startswith("j0: error:")]
    assert len(errors) == 1 and named in errors[0], text
