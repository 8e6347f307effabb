"""J0's state as one value (j0.engine.server.j0_state): its one JSON form read back, and its one
reader taking every older shape the project wrote, here the committed results under docs/results (a
`j0 bench run` manifest that saw `j0 status --json`, one that was only asked `--j0`, `j0 status
--json` itself, `j0 mini run`'s settings, a folder's name) and matrix.json's entries as they were
written before j0_state. The expected states are written by hand from each file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from j0.engine.server.j0_state import J0State
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.run.setting_record import PointRecord

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
LOOPS = RESULTS / "mini-h200" / "2026-12-01-loops" / "engine-k7" / "run-k7"


def read(path: Path, *keys: str) -> Any:
    value = json.loads(path.read_text())
    for key in keys:
        value = value[key]
    return value


def state(value: Any) -> tuple[str, str, bool, str | None]:
    got = J0State.from_json(value, "test")
    return got.asked, got.ran, got.seen, got.identity


def test_the_json_form_reads_back() -> None:
    for value in (
        J0State("on", "off", "identity=base: vLLM's unpatched speculator.py", "base"),
        J0State("unknown", "n/a", "not applicable: ngram has no DFlash drafter", seen=False),
    ):
        written = json.loads(json.dumps(value.to_json()))
        assert set(written) == {"asked", "ran", "why", "identity", "seen"}
        assert J0State.from_json(written, "test") == value
        assert J0State.from_json({"j0_state": written, "j0": "ignored"}, "test") == value


def test_a_manifest_that_saw_the_status_file() -> None:
    manifest = read(RESULTS / "engine-check-h200" / "live-bench.json", "manifest")
    got = J0State.from_json(manifest, "live-bench.json")
    assert (got.asked, got.ran, got.seen, got.identity) == ("unknown", "on", True, "article")
    assert got.why == "--status-json /tmp/res/live-status.json"


def test_a_manifest_only_asked() -> None:
    manifest = read(LOOPS / "drafter-mask" / "k7-j0-on" / "result.json", "manifest")
    assert state(manifest) == ("on", "unknown", False, None)
    assert J0State.from_json(manifest, "t").differs() is None  # not seen: not known to differ


def test_a_status_report_is_judged_by_the_rule() -> None:
    status = read(RESULTS / "engine-check-h200" / "live-status.json")
    assert state(status) == ("unknown", "on", True, "article")
    # the patch line alone, no identity line: which file drew is unknown
    assert state({"url": "http://x", "j0": "on"})[:3] == ("unknown", "unknown", True)
    assert state({"url": "http://x", "j0": None, "identity": None})[:3] == (
        "unknown",
        "unknown",
        False,
    )


def test_mini_run_settings() -> None:
    settings = read(RESULTS / "mini-h200" / "run-summary" / "mini-run.json", "settings")
    assert state(settings["drafter-j0/k15-j0-off"]) == ("off", "off", True, "article")
    assert state(settings["drafter-mask/k7-j0-on-seed20261032"]) == ("on", "on", True, "article")
    ngram = J0State.from_json(settings["ngram/k7"], "t")
    assert (ngram.ran, ngram.why) == ("n/a", "not applicable: ngram has no DFlash drafter")
    old = PointRecord.from_folder_name("drafter-mask/k7-j0-on-seed7")
    assert old is not None and state(old.to_json()) == ("on", "unknown", False, None)


def test_matrix_entries_before_j0_state() -> None:
    asked = {"name": "k7-j0-on", "num_speculative_tokens": 7, "j0": True}
    assert state(asked) == ("on", "unknown", False, None)
    ran = {**asked, "j0_ran": "off", "speculator_identity": "base", "j0_from": "identity=base"}
    assert state(ran) == ("on", "off", True, "base")
    assert J0State.from_json(ran, "t").differs() == (
        "J0 on was asked, but the server's log says J0 off (identity=base): not a J0-on measurement"
    )
    assert state({**asked, "j0": False, "baseline": True})[1] == "n/a"


def test_a_folder_name() -> None:
    named = J0State.from_name("k15-j0-off")
    assert named is not None and (named.asked, named.ran, named.seen) == ("off", "unknown", False)
    assert J0State.from_name("baseline") is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([1], "test: J0's state is not an object"),
        ({"asked": "maybe", "ran": "on", "why": "x"}, "test: 'asked' is \"maybe\", expected"),
        ({"asked": "on", "ran": "yes", "why": "x"}, "test: 'ran' is \"yes\", expected"),
        ({"asked": "on", "ran": "on"}, "test: J0's state lacks why"),
        ({"asked": "on", "ran": "on", "why": "x", "seen": "1"}, "'seen' is \"1\", expected true"),
        ({"j0_source": "--log", "j0": "1"}, "test: 'j0' is \"1\", expected"),
        ({"name": "k7", "num_speculative_tokens": 7, "j0": "on"}, "'j0' is \"on\", expected true"),
        ({"speed": 3}, "test: no J0 state"),
    ],
    ids=lambda x: json.dumps(x)[:30],
)
def test_what_is_not_a_j0_state_is_named(value: Any, said: str) -> None:
    with pytest.raises(J0Error) as caught:
        J0State.from_json(value, "test")
    assert caught.value.exit_code == INPUT_LACKS and said in str(caught.value)


def test_only_the_one_rule_tells_which_files_run_j0() -> None:
    """The identities that run J0 (j0.article.identity.J0_KINDS) are read only by the one rule
    (j0.engine.server.j0_state): a command that wanted to decide J0 from an identity line by itself
    would need them, and fails here."""
    import ast

    package = Path(__file__).resolve().parents[2] / "scripts" / "j0"
    users = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "__pycache__" not in path.parts
        and "J0_KINDS" in (text := path.read_text())
        and any(
            isinstance(node, ast.Name | ast.alias)
            and (getattr(node, "id", None) or getattr(node, "name", None)) == "J0_KINDS"
            for node in ast.walk(ast.parse(text))
        )
    )
    assert users == ["article/identity.py", "engine/server/j0_state.py"]
