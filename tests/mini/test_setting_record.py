"""setting.json as a type (j0.mini.run.setting_record): the H200
run's 15 records read and write back byte for byte, the older runs' folders are described from
their names, and a record of other kinds is refused naming the file, the key and the value."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.mini.run.setting_record import PointRecord

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "docs" / "results" / "mini-h200" / "run.tar.xz"


def test_the_recorded_runs_records_read_and_write_back_byte_for_byte(tmp_path: Path) -> None:
    with tarfile.open(ARCHIVE, "r:xz") as archive:
        archive.extractall(tmp_path, filter="data")
    paths = sorted(tmp_path.rglob("setting.json"))
    assert len(paths) == 15
    kinds = set()
    for path in paths:
        record = PointRecord.read(path)
        kinds.add(record.kind)
        out = tmp_path / "again" / path.parent.relative_to(tmp_path)
        out.mkdir(parents=True)
        record.write(out)
        assert (out / "setting.json").read_bytes() == path.read_bytes(), path
    assert kinds == {"dflash", "ngram", "baseline"}


def test_an_older_runs_folders_are_described_from_their_names() -> None:
    on = PointRecord.from_folder_name("drafter-mask/k7-j0-on-seed5")
    assert on is not None and (on.kind, on.drafter, on.k, on.j0, on.seed) == (
        "dflash",
        "mask",
        7,
        True,
        5,
    )
    assert on.ran_as_asked(True) and not on.ran_as_asked(False)  # J0 as asked: a bool
    ngram = PointRecord.from_folder_name("ngram/k15")
    assert ngram is not None and (ngram.kind, ngram.k) == ("ngram", 15)
    assert PointRecord.from_folder_name("baseline").to_json() == {"kind": "baseline", "k": None}
    assert PointRecord.from_folder_name("drafter-mask/k7") is None


def test_the_label_from_the_log_decides_and_must_agree_with_what_was_asked() -> None:
    ran = PointRecord.checked({"kind": "dflash", "j0": "off", "j0_asked": "on"}, "s.json")
    assert not ran.ran_as_asked(True) and not ran.ran_as_asked(False)
    fine = PointRecord.checked({"kind": "dflash", "j0": "on", "j0_asked": "on"}, "s.json")
    assert fine.ran_as_asked(True)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"k": 7}, 's.json: no \'kind\' (expected one of "dflash", "ngram"'),
        ({"kind": "eagle"}, 's.json: \'kind\' is "eagle", expected one of "dflash", "ngram"'),
        ({"kind": "dflash", "k": "7"}, "s.json: 'k' is \"7\", expected a whole number or null"),
        ({"kind": "dflash", "lines": "ok"}, "'lines' is \"ok\", expected a list"),
        ([], "s.json: [], expected an object"),
    ],
)
def test_a_record_of_other_kinds_is_refused_naming_the_key(value: object, said: str) -> None:
    with pytest.raises(J0Error) as caught:
        PointRecord.checked(value, "s.json")
    assert said in str(caught.value) and caught.value.exit_code == 2


def test_a_file_that_is_not_json_is_named(tmp_path: Path) -> None:
    (tmp_path / "setting.json").write_text("{")
    said = r"setting\.json: not JSON \(.*\); expected the setting\.json of `j0 mini run`"
    with pytest.raises(J0Error, match=said):
        PointRecord.read(tmp_path / "setting.json")
    (tmp_path / "setting.json").write_text(json.dumps({"kind": "ngram", "port": "x"}))
    with pytest.raises(J0Error, match=r"setting\.json: 'port' is \"x\", expected a whole number"):
        PointRecord.read(tmp_path / "setting.json")
