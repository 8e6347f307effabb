"""`j0 mini`'s command line: bad arguments and folders in use end with exit 64 and a line naming
the value, before anything is trained or served; `j0 --help` lists the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.cli import main


def exit_code(argv: list[str]) -> int:
    """What `j0 ARGV` exits with: main's return, or the parser's exit (a usage error)."""
    try:
        return main(argv)
    except SystemExit as ended:
        return int(ended.code or 0)


def test_help_lists_mini(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["mini", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "train" in out and "run" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--smoke", "--anchors", "99"], "--anchors 99: expected at most 48"),
        (["--smoke", "--budget", "0"], "--budget: '0': expected a finite number above 0"),
        (["--smoke", "--draft-layers", "0"], "--draft-layers: '0': expected a whole number from 1"),
    ],
)
def test_bad_train_arguments(
    tmp_path: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert exit_code(["mini", "train", str(out), *args]) == 64
    assert says in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.xdist_group("transformers")  # transformers imported in-process: one worker
def test_train_refuses_a_folder_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").write_text("mine")
    assert main(["mini", "train", str(tmp_path), "--smoke"]) == 64
    assert "is not empty (it holds x)" in capsys.readouterr().err
    assert (tmp_path / "x").read_text() == "mine"


def test_run_needs_here_and_a_trained_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mini", "run", str(tmp_path)]) == 64
    assert "--here" in capsys.readouterr().err
    assert main(["mini", "run", str(tmp_path), "--here"]) == 2  # the input lacks mini.json
    assert "mini.json: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["mini", "run", str(tmp_path), "--here", "--tokens", "7,x"])
    assert done.value.code == 64


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--slots", "0"], "--slots: '0': expected a whole number from 1"),
        (["--requests", "0"], "--requests: '0': expected a whole number from 1"),
        (["--parts", "mask,nope"], "--parts nope: expected some of baseline,"),
        (["--ngram-max", "0"], "--ngram-max: '0'"),
    ],
)
def test_bad_run_arguments(
    tmp_path: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(["mini", "run", str(tmp_path), "--here", *args]) == 64
    assert says in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
