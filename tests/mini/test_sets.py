"""`j0 mini sets` (issue 54, item 4): model sets combined by random effects, a comparison
resolved only where the combination resolves it, at least three replications have it, none
resolves the opposite sign and they served the same prompts (known by the sha256 of their
prompts.jsonl: recorded, hashed from a prompts.jsonl, or from a run.tar.xz's member); the
committed H200 run and the H100 probe read as sets of other recipes. The meta-analysis is checked
on cases worked out by hand here (DerSimonian-Laird tau^2, Hartung-Knapp interval with Student's
t from scipy)."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import shutil
import tarfile
from pathlib import Path

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.mini import set_prompts, sets

# scipy (about 1 s of CPU to import) only in the tests that use it, in one worker with
# tests/bench/test_stats.py: every worker imported it when it collected this module before.
pytestmark = pytest.mark.xdist_group("scipy")

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "docs" / "results" / "mini-h200"
PROBE = ROOT / "docs" / "results" / "mini-h100-probe"
# the sha256 of the 144 prompts both served (their run.tar.xz's run/prompts.jsonl)
KEPT_PROMPTS = "a30d11ec62180a8ece59650c0b713fa7a80d475b28fc872966328afc6333a0e7"
PROMPTS = b'{"id": "ctx512-00", "prompt": "def f():", "source": "a.py"}\n' * 3
SAME = hashlib.sha256(PROMPTS).hexdigest()


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
    # neither recorded its prompts' sha256: each read from its run.tar.xz's run/prompts.jsonl
    assert [s["prompts"] for s in doc["sets"]] == [
        {
            "sha256": KEPT_PROMPTS,
            "prompts": 144,
            "from": f"{folder / 'run.tar.xz'}: run/prompts.jsonl",
        }
        for folder in (PROBE, H200)
    ]
    assert doc["prompts_served"] == (
        "Prompts: the replication mini-h100-probe served 144 prompts (sha256 a30d11ec…). "
        "The sets of other recipes: mini-h200 served the replications' prompts."
    )
    assert doc["prompts_served"] in text


def replications(
    tmp_path: Path,
    effects: list[tuple[float, list[float], str]],
    prompts: list[str | None] | None = None,
) -> list[Path]:
    """Sets of the probe's recipe (its mini.json, the seed changed) whose article comparison at
    7 draft tokens over all prompts has the given effect, interval and verdict, and whose
    mini-run.json records the prompts' sha256 `prompts[i]` (default: SAME for all; None: none
    recorded, as before 2026-12-08)."""
    manifest = json.loads((PROBE / "mini.json").read_text())
    summary = json.loads((PROBE / "mini-run.json").read_text())
    summary["requests_by_context"] = {"512": 1, "2048": 1, "4096": 1}  # as j0 mini run writes
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
        sha = SAME if prompts is None else prompts[number]
        if sha is not None:
            run["prompts_sha256"] = sha
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
    assert doc["prompts_served"] == (
        f"Prompts: the 3 replications (seed0, seed1, seed2) served the same 3 prompts "
        f"(sha256 {SAME[:8]}…)."
    )
    assert doc["prompts_served"] in sets.markdown(doc)


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


AGREEING = [
    (0.10, [0.06, 0.14], "resolved: on > off"),
    (0.12, [0.08, 0.16], "resolved: on > off"),
    (0.08, [0.04, 0.12], "resolved: on > off"),
]


def test_sets_that_served_other_prompts_are_not_resolved(tmp_path: Path) -> None:
    """The three sets agree as those of test_three_agreeing_sets_resolve do, but seed1 served
    other prompts: issue 54 asks for the same prompts served by three sets."""
    other = hashlib.sha256(b"other prompts").hexdigest()
    folders = replications(tmp_path, AGREEING, prompts=[SAME, other, SAME])
    doc = sets.report([sets.read_set(f) for f in folders])
    row = article_all(doc)
    assert row["combined"]["sets"] == 3  # combined as before, yet
    assert row["verdict"] == "not resolved"
    assert "served different prompts (seed1's are not seed0's)" in row["would_resolve"]
    assert doc["prompts_served"].startswith(
        "Prompts: the replications served different prompts: seed1's are not seed0's "
        f"(sha256 seed0 {SAME[:8]}…, seed1 {other[:8]}…, seed2 {SAME[:8]}…)"
    )


def test_a_set_whose_prompts_are_not_known_keeps_it_open(tmp_path: Path) -> None:
    """seed2's mini-run.json is from before prompts_sha256 and nothing of its prompts is kept
    beside it: that the three served the same prompts cannot be shown."""
    folders = replications(tmp_path, AGREEING, prompts=[SAME, SAME, None])
    doc = sets.report([sets.read_set(f) for f in folders])
    assert doc["sets"][2]["prompts"] == {
        "sha256": None,
        "prompts": None,
        "from": set_prompts.NOT_RECORDED,
    }
    row = article_all(doc)
    assert row["verdict"] == "not resolved"
    assert "seed2's prompts are not known" in row["would_resolve"]
    assert "the 2 replications (seed0, seed1) served the same 3 prompts" in doc["prompts_served"]
    assert "not known for seed2 (seed2: a run from before" in doc["prompts_served"]


def test_the_prompts_are_hashed_from_a_prompts_jsonl_kept_with_the_set(tmp_path: Path) -> None:
    """seed2 records no sha256, but its run/prompts.jsonl is there: hashed, the same prompts."""
    folders = replications(tmp_path, AGREEING, prompts=[SAME, SAME, None])
    (folders[2] / "run").mkdir()
    (folders[2] / "run" / "prompts.jsonl").write_bytes(PROMPTS)
    doc = sets.report([sets.read_set(f) for f in folders])
    assert doc["sets"][2]["prompts"] == {
        "sha256": SAME,
        "prompts": 3,
        "from": str(folders[2] / "run" / "prompts.jsonl"),
    }
    assert article_all(doc)["verdict"] == "resolved: on > off"
    (folders[2] / "run" / "prompts.jsonl").write_bytes(PROMPTS[:-1])  # one byte less
    assert article_all(sets.report([sets.read_set(f) for f in folders]))["verdict"] == (
        "not resolved"
    )


def packed(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:xz") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_the_prompts_are_read_from_the_sets_run_archive(tmp_path: Path) -> None:
    """seed2 keeps its run as run.tar.xz (a committed results folder): its run/prompts.jsonl
    member is hashed as the archive streams by (not the speed part's run/speed/prompts.jsonl),
    nothing unpacked beside it."""
    folders = replications(tmp_path, AGREEING, prompts=[SAME, SAME, None])
    packed(
        folders[2] / "run.tar.xz",
        [
            ("./run/speed/prompts.jsonl", b"not these\n"),
            ("./run/baseline/result.json", b"{}" * 5000),
            ("./run/prompts.jsonl", PROMPTS),
        ],
    )
    doc = sets.report([sets.read_set(f) for f in folders])
    assert doc["sets"][2]["prompts"] == {
        "sha256": SAME,
        "prompts": 3,
        "from": f"{folders[2] / 'run.tar.xz'}: run/prompts.jsonl",
    }
    assert article_all(doc)["verdict"] == "resolved: on > off"
    assert sorted(p.name for p in folders[2].iterdir()) == [
        "mini-run.json",
        "mini.json",
        "run.tar.xz",
    ]
    # an archive without the member: unknown, named
    packed(folders[2] / "run.tar.xz", [("./run/speed/prompts.jsonl", PROMPTS)])
    doc = sets.report([sets.read_set(f) for f in folders])
    assert doc["sets"][2]["prompts"]["from"].endswith("run.tar.xz holds no run/prompts.jsonl")
    assert article_all(doc)["verdict"] == "not resolved"


def test_an_archive_that_unpacks_past_the_bound_or_is_no_archive_is_refused(
    tmp_path: Path,
) -> None:
    archive = packed(
        tmp_path / "run.tar.xz",
        [("run/baseline/result.json", b"{}" * 5000), ("run/prompts.jsonl", PROMPTS)],
    )
    assert set_prompts.from_archive(archive).sha256 == SAME
    with pytest.raises(J0Error) as caught:
        set_prompts.from_archive(archive, limit=8192)  # 10 000 bytes come before the member
    assert caught.value.exit_code == INPUT_LACKS
    assert f"{archive}: more than 8192 bytes unpacked before its run/prompts.jsonl" in str(
        caught.value
    )
    archive.write_bytes(b"not xz")
    with pytest.raises(J0Error) as caught:
        set_prompts.from_archive(archive)
    assert caught.value.exit_code == INPUT_LACKS and "not a readable .tar.xz" in str(caught.value)
