"""No `j0 dumps` command writes into a dump folder it reads: `--json`, `--plots` and `--out` inside
DIR (or A, B) are usage errors (exit 64) before anything is read or written, and the dump that
`--json DIR/step0000.pt` names keeps its bytes. Before, `check --json DIR/step0000.pt` replaced the
dump with the report. Outputs beside the folder are taken as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.cli import main

DUMP_BYTES = b"not a real dump: the refusal comes before any is read"


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "step0000.pt").write_bytes(DUMP_BYTES)
    return folder


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("check", ["--json", "{dir}/step0000.pt"]),
        ("check", ["--json", "{dir}/report.json"]),
        ("show", ["--json", "{dir}/step0000.pt"]),
        ("compare", ["{dir}", "--json", "{dir}/sub/report.json"]),
        ("compare", ["{dir}", "--plots", "{dir}"]),
        ("replay", ["--drafter", "{dir}", "--target", "{dir}", "--out", "{dir}/ref"]),
    ],
)
def test_an_output_inside_a_folder_read_is_refused(
    dumps: Path, capsys: pytest.CaptureFixture[str], command: str, flags: list[str]
) -> None:
    other = dumps.parent / "other"
    other.mkdir()
    args = [flag.format(dir=dumps) for flag in flags]
    first = [str(other)] if command == "compare" else [str(dumps)]
    if command == "compare":
        args[0] = str(dumps)  # B is the folder written into
    code = main(["dumps", command, *first, *args])
    err = capsys.readouterr().err
    assert code == 64
    assert "is inside" in err and "which this command reads" in err
    assert (dumps / "step0000.pt").read_bytes() == DUMP_BYTES
    assert sorted(p.name for p in dumps.iterdir()) == ["step0000.pt"]


def test_a_report_beside_the_folder_is_written(
    dumps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    out = dumps.parent / "report.json"
    code = main(["dumps", "show", str(dumps), "--json", str(out)])
    capsys.readouterr()
    assert code != 64  # the folder's one file is not a dump: another refusal, not this one
    assert (dumps / "step0000.pt").read_bytes() == DUMP_BYTES
