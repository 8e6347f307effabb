"""mini.json as a type (j0.mini.manifest): what `j0 mini train` writes is what MiniManifest reads
back, key for key and in order (the smoke miniature's file, trained for real, and the H200
training kept in docs/results/); files written before a key existed are still read; and a file
with a key of another type is refused naming the file, the key, the value and what was expected,
by the commands that read it (exit 2), instead of a reader crashing on it (exit 70)."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.mini import numbers
from j0.mini.manifest import MiniManifest, read_manifest_file

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "docs" / "results" / "mini-h200"


@pytest.mark.slow
def test_what_train_writes_is_what_the_type_reads(smoke_out: Path) -> None:
    raw = json.loads((smoke_out / "mini.json").read_text())
    assert list(raw) == [f.name for f in dataclasses.fields(MiniManifest)][:-1]  # not `where`
    manifest = read_manifest_file(smoke_out)
    assert manifest.to_json() == raw
    assert json.dumps(manifest.to_json(), indent=1) == json.dumps(raw, indent=1)
    assert manifest.draft_seq == raw["sizes"]["draft_seq"]
    assert manifest.temperature() == raw["sampling"]["temperature"]


def test_the_kept_h200_training_reads_back_byte_for_byte() -> None:
    path = KEPT / "train" / "mini.json"
    raw = json.loads(path.read_text())
    manifest = read_manifest_file(path.parent)
    assert json.dumps(manifest.to_json(), indent=1) + "\n" == path.read_text()
    trained = manifest.trained()
    assert sorted(trained.drafters) == sorted(raw["drafters"])
    assert trained.target.steps == raw["target"]["steps"]
    assert trained.total_s == raw["times"]["total_s"]


@pytest.mark.parametrize("folder", sorted(p.parent for p in KEPT.rglob("mini.json")))
def test_every_kept_training_is_read(folder: Path) -> None:
    """Trainings made before `sampling` was written are read as greedy (temperature 0)."""
    manifest = read_manifest_file(folder)
    raw = json.loads((folder / "mini.json").read_text())
    assert manifest.temperature() == (raw.get("sampling") or {}).get("temperature", 0.0)
    assert manifest.trained().target.heldout_loss == raw["target"]["heldout_loss"]


def _broken(change: str) -> dict[str, Any]:
    doc = copy.deepcopy(json.loads((KEPT / "train" / "mini.json").read_text()))
    drafter = next(iter(doc["drafters"]))
    if change == "no sizes":
        del doc["sizes"]
    elif change == "draft_seq text":
        doc["sizes"]["draft_seq"] = "64"
    elif change == "draft_seq 0":
        doc["sizes"]["draft_seq"] = 0
    elif change == "seed true":
        doc["seed"] = True
    elif change == "target steps text":
        doc["target"]["steps"] = "948"
    elif change == "drafter without slots":
        del doc["drafters"][drafter]["heldout_slots"]
    elif change == "chain estimate null":
        doc["drafters"][drafter]["heldout_slots"]["chain_estimate"]["greedy_rows_k7"] = None
    elif change == "target a list":
        doc["target"] = [1, 2]
    return doc


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("no sizes", "no 'sizes' (expected an object)"),
        ("draft_seq text", "sizes.draft_seq is '64', expected a whole number >= 1"),
        ("draft_seq 0", "sizes.draft_seq is 0, expected a whole number >= 1"),
        ("seed true", "'seed' is true, expected a whole number"),
        ("target steps text", "target.'steps' is \"948\", expected a whole number"),
        ("drafter without slots", "'heldout_slots' (expected an object)"),
        ("chain estimate null", "'greedy_rows_k7' is null, expected a number"),
        ("target a list", "'target' is [1, 2], expected an object"),
    ],
)
def test_a_key_of_another_type_is_refused_naming_file_key_and_value(
    tmp_path: Path, change: str, words: str
) -> None:
    (tmp_path / "mini.json").write_text(json.dumps(_broken(change)))
    with pytest.raises(J0Error) as caught:
        read_manifest_file(tmp_path)
    assert caught.value.exit_code == INPUT_LACKS
    assert str(tmp_path / "mini.json") in str(caught.value)
    assert words in str(caught.value)


def test_a_manifest_that_is_not_an_object_or_not_json_is_refused(tmp_path: Path) -> None:
    for text, words in (("[1]", "expected an object"), ("{", "not JSON")):
        (tmp_path / "mini.json").write_text(text)
        with pytest.raises(J0Error) as caught:
            read_manifest_file(tmp_path)
        assert caught.value.exit_code == INPUT_LACKS and words in str(caught.value)


def test_a_run_folder_without_the_training_record_is_named_for_the_numbers() -> None:
    manifest = MiniManifest.from_json({"sizes": {"draft_seq": 64}}, "x/mini.json")
    assert manifest.draft_seq == 64 and manifest.temperature() == 0.0
    with pytest.raises(J0Error, match=r"x/mini.json: no 'target'; expected a folder made by"):
        manifest.trained()


def test_j0_mini_numbers_refuses_a_broken_training_with_exit_2(tmp_path: Path) -> None:
    """The README check reads every training it cites; a broken one is named, not a crash."""
    source = KEPT / "2026-12-01-loops"
    shutil.copytree(source, tmp_path / "loops")
    path = tmp_path / "loops" / "engine-k7" / "mini.json"
    doc = json.loads(path.read_text())
    doc["target"]["heldout_loss"] = "low"
    path.write_text(json.dumps(doc))
    with pytest.raises(J0Error) as caught:
        numbers.run(tmp_path / "loops" / "README.md", say=lambda _: None)
    assert caught.value.exit_code == INPUT_LACKS
    assert "'heldout_loss' is \"low\", expected a number" in str(caught.value)
