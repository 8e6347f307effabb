"""The results READMEs' tables are the data's: `j0 mini numbers` makes every block again from
the files beside the README and must find what the README says; a figure of three decimals in
the prose must be one of the tables'; a README whose data changed fails the check."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from j0.errors import CHECK_FAILED, OK, J0Error
from j0.mini import numbers

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted(
    p for p in (ROOT / "docs" / "results").rglob("*.md") if "<!-- numbers:" in p.read_text()
)


def test_there_are_readmes_with_numbers() -> None:
    assert ROOT / "docs" / "results" / "mini-h200" / "README.md" in READMES


def _readme_param(readme: Path) -> object:
    """A README whose blocks unpack a `.tar.xz` takes seconds to make again (mini-h200's 9 s in a
    fast-subset run of 2026-12-06; the H100 probe's and mini-gpu/seed0's about 3 s each on
    2026-12-08): slow; the others' well under one. A `sets` block unpacks no archive: each set's
    prompts' sha256 is read from its run.tar.xz's run/prompts.jsonl as the archive streams by
    (docs/results/mini-gpu/README.md's three sets: 0.45 s of CPU for the whole check, 2026-12-08),
    so it stays fast."""
    unpacks = any(".tar.xz" in m["spec"] for m in numbers.BLOCK.finditer(readme.read_text()))
    return pytest.param(readme, marks=[pytest.mark.slow] if unpacks else [])


@pytest.mark.parametrize(
    "readme", [_readme_param(r) for r in READMES], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_table_is_made_from_the_data(readme: Path) -> None:
    said: list[str] = []
    assert numbers.run(readme, say=said.append) == OK, "\n".join(said)


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_prose_figures_are_the_tables(readme: Path) -> None:
    text = readme.read_text()
    blocks = "".join(m["body"] for m in numbers.BLOCK.finditer(text))
    prose = numbers.BLOCK.sub("", text)
    figures = set(re.findall(r"(?<![\d.])\d+\.\d{3,}(?![\d.])", prose))
    missing = sorted(f for f in figures if f not in blocks)
    assert not missing, f"figures in the prose that no table holds: {missing}"


def test_changed_data_fails_the_check(tmp_path: Path) -> None:
    source = ROOT / "docs" / "results" / "mini-h200" / "2026-12-01-loops"
    copy = tmp_path / "mini-h200"
    shutil.copytree(source, copy)
    said: list[str] = []
    assert numbers.run(copy / "README.md", say=said.append) == OK
    manifest = copy / "engine-k7" / "mini.json"
    doc = json.loads(manifest.read_text())
    doc["target"]["steps"] = 2011
    manifest.write_text(json.dumps(doc))
    said.clear()
    assert numbers.run(copy / "README.md", say=said.append) == CHECK_FAILED
    assert "-| engine-k7 | 948 |" in said[0] and "+| engine-k7 | 2011 |" in said[0]
    assert numbers.run(copy / "README.md", write=True, say=said.append) == OK
    assert "| engine-k7 | 2011 |" in (copy / "README.md").read_text()


def test_json_says_whether_the_tables_agree_and_how_they_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`j0 mini numbers --json`: agrees, the difference, written; the text unchanged beside
    --json OUT."""
    from j0.cli import main

    source = ROOT / "docs" / "results" / "mini-h200" / "2026-12-01-loops"
    copy = tmp_path / "mini-h200"
    shutil.copytree(source, copy)
    readme = str(copy / "README.md")
    assert main(["mini", "numbers", readme, "--json"]) == OK
    said = json.loads(capsys.readouterr().out)
    assert said == {"readme": readme, "agrees": True, "written": False, "diff": []}
    manifest = copy / "engine-k7" / "mini.json"
    doc = json.loads(manifest.read_text())
    doc["target"]["steps"] = 2011
    manifest.write_text(json.dumps(doc))
    out = tmp_path / "numbers.json"
    assert main(["mini", "numbers", readme, "--json", str(out)]) == CHECK_FAILED
    printed = capsys.readouterr().out
    said = json.loads(out.read_text())
    assert (said["agrees"], said["written"]) == (False, False)
    diff = "\n".join(said["diff"])
    assert "-| engine-k7 | 948 |" in diff and "+| engine-k7 | 2011 |" in diff
    assert printed == "\n".join(said["diff"]) + "\n"
    assert main(["mini", "numbers", readme, "--write", "--json", str(out)]) == OK
    assert json.loads(out.read_text())["written"] is True


def test_a_block_without_its_data_is_named(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: engine nowhere -->\n<!-- /numbers -->\n")
    with pytest.raises(J0Error, match="nowhere"):
        numbers.run(readme)
    readme.write_text("no blocks\n")
    with pytest.raises(J0Error, match="no <!-- numbers"):
        numbers.run(readme)


@pytest.mark.slow  # 12.6 s alone: every result of a whole run, read and held
def test_a_run_kept_as_an_archive_is_read_and_held_to_it(tmp_path: Path) -> None:
    """docs/results/mini-h200/ keeps its run as run.tar.xz (1.9 MB, 23 MB unpacked): the blocks
    are made from the archive's contents, and a change inside it fails the check. Seen failing
    before: a block's PATH had to be a folder."""
    import tarfile

    source = ROOT / "docs" / "results" / "mini-h200"
    copy = tmp_path / "results"
    copy.mkdir()
    shutil.copy(source / "README.md", copy)
    shutil.copytree(source / "train", copy / "train")
    unpacked = tmp_path / "unpacked"
    with tarfile.open(source / "run.tar.xz") as archive:
        archive.extractall(unpacked, filter="data")
    summary = unpacked / "run" / "mini-run.json"
    doc = json.loads(summary.read_text())
    name = next(n for n, s in doc["settings"].items() if s.get("lines"))
    doc["settings"][name]["lines"] = ["a line the run never wrote"]
    summary.write_text(json.dumps(doc))
    # xz's fastest preset: the check reads any xz archive, and the default one spent 8 s of CPU
    with tarfile.open(copy / "run.tar.xz", "w:xz", preset=0) as archive:
        archive.add(unpacked / "run", arcname="run")
    said: list[str] = []
    assert numbers.run(copy / "README.md", say=said.append) == CHECK_FAILED
    assert f"+- {name}: a line the run never wrote" in said[0]
