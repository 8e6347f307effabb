"""`j0 mini sets` (issue 54, item 4): model sets combined by random effects, a comparison
resolved only where the combination resolves it, at least three replications have it and none
resolves the opposite sign; the committed H200 run and the H100 probe read as sets of other
recipes. The meta-analysis is checked on cases worked out by hand here (DerSimonian-Laird tau^2,
Hartung-Knapp interval with Student's t from scipy)."""

from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.mini import sets

# scipy (about 1 s of CPU to import) only in the tests that use it, in one worker with
# tests/bench/test_stats.py: every worker imported it when it collected this module before.
pytestmark = pytest.mark.xdist_group("scipy")

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "docs" / "results" / "mini-h200"
PROBE = ROOT / "docs" / "results" / "mini-h100-probe"


def test_equal_sets_without_spread() -> None:
    # three sets, effects 0.1, 0.3, 0.2, each with se 0.1: weights 100, fixed mean 0.2,
    # Q = 100 (0.01 + 0.01) = 2 = k - 1, so tau^2 = 0; the Hartung-Knapp variance
    # 100 (0.01 + 0.01) / (2 x 300) = 1/300, the same as 1 / sum(w)
    from scipy import stats

    combined = sets.combine([0.1, 0.3, 0.2], [0.1, 0.1, 0.1])
    half = stats.t.ppf(0.975, 2) * math.sqrt(1 / 300)
    assert combined["tau2"] == 0.0
    assert combined["effect"] == pytest.approx(0.2)
    assert combined["ci95"] == pytest.approx([0.2 - half, 0.2 + half], abs=2e-4)


def test_two_sets_far_apart() -> None:
    # effects 0 and 1, se 0.1 each: Q = 100 (0.25 + 0.25) = 50, C = 200 - 20000 / 200 = 100,
    # tau^2 = (50 - 1) / 100 = 0.49; weights 1 / 0.5 = 2 each, mean 0.5; the Hartung-Knapp
    # variance 2 (0.25 + 0.25) / (1 x 4) = 0.25, t with 1 degree of freedom
    from scipy import stats

    combined = sets.combine([0.0, 1.0], [0.1, 0.1])
    assert combined["tau2"] == pytest.approx(0.49)
    assert combined["effect"] == pytest.approx(0.5)
    half = stats.t.ppf(0.975, 1) * 0.5
    assert combined["ci95"] == pytest.approx([0.5 - half, 0.5 + half], abs=1e-3)


def test_the_interval_is_never_narrower_than_the_inverse_variance_one() -> None:
    # three identical effects: the sets' spread is 0, yet each set's own error stays
    combined = sets.combine([0.2, 0.2, 0.2], [0.1, 0.1, 0.1])
    assert combined["se"] == pytest.approx(math.sqrt(1 / 300))


def entry(label: str, verdict: str) -> dict[str, str]:
    return {"label": label, "verdict": verdict}


def test_the_rule() -> None:
    resolved = {"sets": 3, "effect": 0.2, "ci95": [0.1, 0.3], "se": 0.05}
    three = [entry(x, "not resolved") for x in "abc"]
    assert sets.judge(three, resolved) == ("resolved: A > B", "")
    verdict, why = sets.judge(three[:2], {**resolved, "sets": 2})
    assert verdict == "not resolved" and "1 more (at least 3" in why
    opposite = [*three[:2], entry("c", "resolved: on < off")]
    verdict, why = sets.judge(opposite, resolved)
    assert verdict == "not resolved" and "c resolve(s) the opposite sign" in why
    split = [entry("a", "resolved: on > off"), entry("b", "resolved: on < off"), three[2]]
    verdict, why = sets.judge(split, {**resolved, "ci95": [-0.1, 0.3]})
    assert verdict == "not resolved" and "depends on the training seed" in why
    verdict, why = sets.judge(three, {**resolved, "ci95": [-0.01, 0.41]})
    assert verdict == "not resolved" and "sets at this spread would resolve +0.200" in why


def test_the_recorded_runs_are_sets_of_other_recipes() -> None:
    h200, probe = sets.read_set(H200), sets.read_set(PROBE)
    assert h200.recipe != probe.recipe  # 120 s a model, 2 layers vs 210 s, 4 draft layers
    doc = sets.report([probe, h200])
    assert [s["replication"] for s in doc["sets"]] == [True, False]
    row = next(
        r
        for r in doc["rows"]
        if (r["tokens"], r["comparison"], r["subset"]) == ("7", "systems", "all")
    )
    kept = json.loads((H200 / "run-summary" / "mini-run.json").read_text())
    want = kept["comparisons"]["by_tokens"]["7"]["systems"]["all"]
    by_label = {e["label"]: e for e in row["sets"]}
    assert by_label["mini-h200"]["effect"] == want["effect"]
    assert by_label["mini-h200"]["ci95"] == want["ci95"]
    assert row["combined"]["sets"] == 1 and row["verdict"] == "not resolved"
    assert "other recipes resolve it: mini-h200 -" in row["would_resolve"]
    text = sets.markdown(doc)
    assert "mini-h200 (other recipe)" in text and "mini-h100-probe (seed 0)" in text


def replications(tmp_path: Path, effects: list[tuple[float, list[float], str]]) -> list[Path]:
    """Sets of the probe's recipe (its mini.json, the seed changed) whose article comparison at
    7 draft tokens over all prompts has the given effect, interval and verdict."""
    manifest = json.loads((PROBE / "mini.json").read_text())
    summary = json.loads((PROBE / "mini-run.json").read_text())
    folders = []
    for number, (effect, ci, verdict) in enumerate(effects):
        folder = tmp_path / f"seed{number}"
        folder.mkdir()
        doc = copy.deepcopy(manifest)
        doc["seed"] = number
        (folder / "mini.json").write_text(json.dumps(doc))
        run = copy.deepcopy(summary)
        run["comparisons"]["by_tokens"]["7"]["article"]["all"].update(
            {"effect": effect, "ci95": ci, "verdict": verdict}
        )
        (folder / "mini-run.json").write_text(json.dumps(run))
        folders.append(folder)
    return folders


def article_all(doc: dict) -> dict:
    return next(
        r
        for r in doc["rows"]
        if (r["tokens"], r["comparison"], r["subset"]) == ("7", "article", "all")
    )


def test_three_agreeing_sets_resolve(tmp_path: Path) -> None:
    folders = replications(
        tmp_path,
        [
            (0.10, [0.06, 0.14], "resolved: on > off"),
            (0.12, [0.08, 0.16], "resolved: on > off"),
            (0.08, [0.04, 0.12], "resolved: on > off"),
        ],
    )
    doc = sets.report([sets.read_set(f) for f in folders])
    row = article_all(doc)
    assert row["combined"]["sets"] == 3
    assert row["verdict"] == "resolved: on > off"


def test_a_set_of_the_opposite_sign_keeps_it_open(tmp_path: Path) -> None:
    folders = replications(
        tmp_path,
        [
            (0.10, [0.06, 0.14], "resolved: on > off"),
            (0.12, [0.08, 0.16], "resolved: on > off"),
            (0.11, [0.07, 0.15], "resolved: on > off"),
            (-0.05, [-0.09, -0.01], "resolved: on < off"),
        ],
    )
    row = article_all(sets.report([sets.read_set(f) for f in folders]))
    assert row["verdict"] == "not resolved"
    assert "opposite signs" in row["would_resolve"]


def test_a_folder_that_is_no_set_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "half"
    folder.mkdir()
    shutil.copy(PROBE / "mini.json", folder / "mini.json")
    with pytest.raises(J0Error) as caught:
        sets.read_set(folder)
    assert caught.value.exit_code == INPUT_LACKS  # the input lacks it (was 64)
    assert str(folder) in str(caught.value) and "mini-run.json" in str(caught.value)


def test_the_flat_files_of_mini_gpu_sh_are_a_set(tmp_path: Path) -> None:
    """What `scripts/mini-gpu.sh wait-run` copies out (mini-gpu-seedN-mini.json and
    -mini-run.json beside the tar.xz) is read as a set as it is."""
    folder = tmp_path / "seed4"
    folder.mkdir()
    shutil.copy(PROBE / "mini.json", folder / "mini-gpu-seed4-mini.json")
    shutil.copy(PROBE / "mini-run.json", folder / "mini-gpu-seed4-mini-run.json")
    found = sets.read_set(folder)
    assert found.recipe == sets.read_set(PROBE).recipe and found.label == "seed4"
    shutil.copy(PROBE / "mini.json", folder / "mini-gpu-seed5-mini.json")
    with pytest.raises(J0Error) as caught:
        sets.read_set(folder)
    assert "more than one" in str(caught.value)
