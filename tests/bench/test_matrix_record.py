"""matrix.json's settings are a type owned by their writer (j0.bench.matrix.layout): the reader's
field table is what PointRun.to_json writes, an entry read back is the setting written, and an
entry of other types is refused naming the file, the entry, the key, the value and what was
expected. Before, `j0 bench report` took J0 as on where matrix.json said True, "on" or 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.bench.matrix.layout import PointEntry, PointRun, read_settings
from j0.compose.server import MatrixPoint
from j0.errors import INPUT_LACKS, J0Error

matrix_settings = st.builds(
    MatrixPoint, st.integers(min_value=0, max_value=64), st.booleans(), st.booleans()
)


@settings(max_examples=40, deadline=None)
@given(matrix_settings)
def test_what_the_writer_writes_the_reader_takes_back(setting: MatrixPoint) -> None:
    run = PointRun(setting)
    run.entry.status = "ok"
    written = run.to_json()
    assert list(written)[:4] == ["name", "num_speculative_tokens", "j0", "prefix_caching"]
    assert ("baseline" in written) is setting.baseline  # baseline: written when true
    entry = PointEntry.from_json(json.loads(json.dumps(written)), "matrix.json: settings[0]")
    assert (entry.name, entry.num_speculative_tokens, entry.j0, entry.prefix_caching) == (
        setting.name,
        setting.tokens,
        setting.j0,
        setting.prefix_caching,
    )
    assert entry.baseline is setting.baseline and entry.j0_ran is None


GOOD = {"name": "k7-j0-on", "num_speculative_tokens": 7, "j0": True}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"j0": "on"}, "'j0' is \"on\", expected true or false"),
        ({"j0": 1}, "'j0' is 1, expected true or false"),
        ({"num_speculative_tokens": True}, "'num_speculative_tokens' is true, expected a whole"),
        ({"num_speculative_tokens": -1}, "'num_speculative_tokens' is -1, expected a whole"),
        ({"num_speculative_tokens": "7"}, "'num_speculative_tokens' is \"7\", expected a whole"),
        ({"prefix_caching": "off"}, "'prefix_caching' is \"off\", expected true or false"),
        ({"j0_ran": "maybe"}, '\'j0_ran\' is "maybe", expected "on", "off", "unknown"'),
        ({"name": None}, "'name' is null, expected a string"),
    ],
    ids=lambda x: json.dumps(x)[:40],
)
def test_an_entry_of_other_types_is_refused_naming_it(
    tmp_path: Path, change: dict[str, object], said: str
) -> None:
    (tmp_path / "matrix.json").write_text(json.dumps({"settings": [GOOD, {**GOOD, **change}]}))
    with pytest.raises(J0Error) as caught:
        read_settings(tmp_path)  # what find_settings, j0 bench report's reader, calls
    assert caught.value.exit_code == INPUT_LACKS
    assert f"{tmp_path / 'matrix.json'}: settings[1]: {said}" in str(caught.value)


def test_a_missing_key_a_record_that_is_not_json_or_not_a_list_is_named(tmp_path: Path) -> None:
    path = tmp_path / "matrix.json"
    for text, said in [
        (json.dumps({"settings": [{"name": "k7-j0-on", "j0": True}]}), "no 'num_speculative"),
        (json.dumps({"settings": ["k7-j0-on"]}), 'settings[0]: "k7-j0-on", expected an object'),
        (json.dumps({"settings": {"k7": GOOD}}), "'settings' is {\"k7\""),
        (json.dumps(["k7-j0-on"]), 'matrix.json: ["k7-j0-on"], expected an object'),
        ('{"settings": [', "not JSON (Expecting value"),
    ]:
        path.write_text(text)
        with pytest.raises(J0Error, match=r"matrix\.json") as caught:
            read_settings(tmp_path)
        assert said in str(caught.value), str(caught.value)


def test_no_record_is_no_settings_and_a_hand_written_one_leaves_caching_unknown(
    tmp_path: Path,
) -> None:
    assert read_settings(tmp_path) == {}
    (tmp_path / "matrix.json").write_text(json.dumps({"settings": [GOOD]}))
    entry = read_settings(tmp_path)["k7-j0-on"]
    assert entry.prefix_caching is None and entry.j0_ran is None and not entry.baseline


def test_a_dry_runs_record_is_read_through_the_type_before_its_folder_is_claimed(
    tmp_path: Path,
) -> None:
    """A dry run's matrix.json names the folders it made; one whose settings are not what the
    writer writes is not taken for a dry run's (the real run would replace it): refused, named."""
    from j0.bench.matrix.out_folder import claim_out_folder

    (tmp_path / "k7-j0-on").mkdir()
    (tmp_path / "matrix.json").write_text(json.dumps({"dry_run": True, "settings": [GOOD]}))
    claim_out_folder(tmp_path)  # the dry run's own: claimed
    bad = {"dry_run": True, "settings": [{**GOOD, "name": 7}]}
    (tmp_path / "matrix.json").write_text(json.dumps(bad))
    with pytest.raises(J0Error) as caught:
        claim_out_folder(tmp_path)
    said = f"{tmp_path / 'matrix.json'}: settings[0]: 'name' is 7, expected a string"
    assert str(caught.value) == said and caught.value.exit_code == INPUT_LACKS


def test_the_doc_names_every_key_of_the_type() -> None:
    """docs/bench-matrix.md's paragraph on matrix.json names each key MatrixJson and its
    settings' PointEntry declare (a key added to the type and not to the doc fails here)."""
    import re

    from j0.bench.matrix.layout import MatrixJson
    from j0.edge.document import table_of

    text = (Path(__file__).resolve().parents[2] / "docs" / "bench-matrix.md").read_text()
    start = text.index("`matrix.json` (`kind: j0-bench-matrix`")
    named = set(re.findall(r"`([a-z0-9_]+)", text[start : text.index("\n\n", start)]))
    assert set(table_of(MatrixJson)) - named == set()
    assert set(table_of(PointEntry)) - named == set()
