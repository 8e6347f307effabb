"""`j0 dumps compare` on dump sets made by the article's kernels (simulate.py), J0 off vs on, on
altered copies, and on the recorded H200 engine dumps.

Expected agreement comes from the simulation's plan (simulate.py: the drafter proposes the true
tokens for a planned number of positions, then tokens hashed from its query ids, which differ
between J0 on and off), not from the code under test.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import matplotlib.image
import pytest
import torch
from dumpsets import ENGINE, copy_set, edit_step, load_step, make_sets

from j0.cli import main


@pytest.fixture(scope="module")
def sets(article_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sets(article_file, tmp_path_factory.mktemp("dumpsets"))


def compare(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "compare.json"
    code = main(["dumps", "compare", *args, "--json", str(out)])
    capsys.readouterr()
    return code, json.loads(out.read_text())


# The drafter's plan per query step of the main scenario (simulate.py): 4 warm-up query steps
# (plan 0), request A's last chunk and 10 decodes, request B's last chunk and 6 decodes.
PLANS = [0] * 4 + [0, 3, 7, 0, 2, 5, 1, 0, 7, 4, 0] + [7, 0, 1, 6, 0, 3, 0]


def test_j0_off_against_on(sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(sets / "main-j0-on"))
    assert code == 0 and data["verdict"] == "SAME"
    assert len(data["pairs"]) == 25 and not data["unpaired_a"] and not data["unpaired_b"]
    assert all(p["committed_equal"] for p in data["pairs"])
    # Same committed tokens and positions give the same taps: bit for bit.
    assert data["aux_max_abs"] == 0.0 and data["aux_over_tolerance"] == 0
    # Drafts agree exactly where the plan had the drafter propose the true tokens.
    want = [sum(p > j for p in PLANS) / len(PLANS) for j in range(7)]
    assert data["draft_agreement"] == pytest.approx(want)
    # Query slot 0 is the anchor in both; slots k > 0 are J0 draws vs the mask token.
    assert data["query_id_agreement"][0] == 1.0
    assert data["query_id_agreement"][1:] == [0.0] * 7


def test_plots_and_csv(sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tmp_path / "plots"
    code = main(
        [
            *("dumps", "compare", str(sets / "main-j0-off"), str(sets / "main-j0-on")),
            *("--plots", str(plots)),
        ]
    )
    capsys.readouterr()
    assert code == 0
    for name in ("agreement.png", "errors.png"):
        image = matplotlib.image.imread(plots / name)
        assert image.shape[0] > 100 and image.shape[1] > 100
    rows = list(csv.DictReader((plots / "agreement.csv").open()))
    want = [sum(p > j for p in PLANS) / len(PLANS) for j in range(7)]
    assert [float(r["agreement"]) for r in rows] == pytest.approx(want, abs=1e-6)
    assert len(list(csv.DictReader((plots / "errors.csv").open()))) == 25


def test_a_committed_token_differs(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = copy_set(sets / "main-j0-on", tmp_path / "b")
    edit_step(
        b / "step0009.pt", lambda d: d["input_ids"].__setitem__(0, int(d["input_ids"][0]) + 1)
    )
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(b))
    assert code == 1 and data["verdict"] == "DIFFERENT"
    assert [(d["what"], d["step_a"]) for d in data["differences"]] == [("committed", "step0009.pt")]


def test_aux_beyond_bf16_tolerance(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = copy_set(sets / "main-j0-on", tmp_path / "b")

    def scale(d: dict) -> None:
        aux = d["aux"].to(torch.float32)
        aux[0] *= 1.1  # a committed row, 10 %: far beyond two bf16 steps
        d["aux"] = aux.to(torch.bfloat16)

    edit_step(b / "step0012.pt", scale)
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(b))
    assert code == 1 and [d["what"] for d in data["differences"]] == ["aux"]
    # Relative to B's value: 0.1 / 1.1, give or take bf16's rounding of the scaled value.
    assert data["aux_max_rel"] == pytest.approx(0.1 / 1.1, rel=0.05)


def test_aux_within_one_bf16_step(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = copy_set(sets / "main-j0-on", tmp_path / "b")

    def nudge(d: dict) -> None:
        # One bf16 step up on every element: what a different kernel's rounding may give.
        bits = d["aux"].view(torch.int16)
        d["aux"] = (bits + 1).view(torch.bfloat16)

    edit_step(b / "step0012.pt", nudge)
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(b))
    assert code == 0, data["differences"]
    assert 0 < data["aux_max_rel"] <= 2.0**-7 * 1.01


def test_a_reference_set_without_aux_and_context_steps(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A set as a reference writes it: only query steps, no aux (read leniently)."""
    b = copy_set(sets / "main-j0-on", tmp_path / "b")
    for path in sorted(b.iterdir()):
        data = torch.load(path, weights_only=True)
        if "query_ids" not in data:
            path.unlink()
            continue
        data.pop("aux")
        torch.save(data, path)
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-on"), str(b))
    assert code == 0 and data["aux_max_abs"] is None
    assert any("aux not compared" in n for n in data["notes"])
    assert data["draft_agreement"] == [1.0] * 7
    assert sorted(data["unpaired_a"]) == ["step0004.pt", "step0005.pt", "step0017.pt"]


def test_nothing_in_common(sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = compare(capsys, tmp_path, str(sets / "prefix-j0-on"), str(ENGINE / "j0-on"))
    # Different prompts: no request of one shares a step start and first token with the other.
    assert code == 2 and data["verdict"] == "NOTHING IN COMMON"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["dumps", "compare", str(empty), str(ENGINE / "j0-on")]) == 2


def test_engine_dumps_off_against_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = compare(capsys, tmp_path, str(ENGINE / "j0-off"), str(ENGINE / "j0-on"))
    assert code == 0 and data["verdict"] == "SAME"
    # Lossless: 60 steps, the same committed tokens and the same taps on them.
    assert len(data["pairs"]) == 60 and data["aux_max_abs"] == 0.0
    # The random drafter proposed other tokens in some steps with J0 on (recorded run).
    assert not all(p["draft_inputs_equal"] for p in data["pairs"])


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_tap_is_a_difference(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: float
) -> None:
    """Before, a NaN compared as "not over the tolerance" (NaN > x is False): SAME, exit 0."""
    b = copy_set(sets / "main-j0-on", tmp_path / "b")

    def poison(d: dict) -> None:
        aux = d["aux"].to(torch.float32)
        aux[0, 0] = bad
        d["aux"] = aux.to(torch.bfloat16)

    edit_step(b / "step0012.pt", poison)
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(b))
    assert code == 1 and data["verdict"] == "DIFFERENT"
    assert [d["what"] for d in data["differences"]] == ["aux"]
    assert "1 of" in data["differences"][0]["detail"]


def test_taps_of_another_width_are_a_difference(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, taps of another shape were silently not compared: SAME, exit 0."""
    b = copy_set(sets / "main-j0-on", tmp_path / "b")
    width = load_step(b / "step0012.pt")["aux"].shape[1]
    edit_step(b / "step0012.pt", lambda d: d.update(aux=d["aux"][:, : width // 2].contiguous()))
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-off"), str(b))
    assert code == 1 and data["verdict"] == "DIFFERENT"
    (difference,) = data["differences"]
    assert difference["what"] == "aux" and f", {width // 2}] in B" in difference["detail"]


def test_unpaired_query_steps_are_partial_not_same(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, steps with no partner were listed but the verdict was SAME, exit 0."""
    b = copy_set(sets / "main-j0-on", tmp_path / "b")
    query_steps = [p for p in sorted(b.iterdir()) if "query_ids" in load_step(p)]
    for path in query_steps[-3:]:
        path.unlink()
    code, data = compare(capsys, tmp_path, str(sets / "main-j0-on"), str(b))
    assert code == 2 and data["verdict"] == "PARTIAL"
    assert sorted(data["unpaired_a"]) == sorted(p.name for p in query_steps[-3:])
    assert any(n.startswith("PARTIAL: 3 steps of A have no partner") for n in data["notes"])


@pytest.mark.parametrize("rtol", ["nan", "inf", "0", "-1", "x"])
def test_rtol_must_be_a_finite_number_above_zero(
    sets: Path, capsys: pytest.CaptureFixture[str], rtol: str
) -> None:
    """Before, --rtol nan was taken and --rtol 0 silently became 2^-6."""
    with pytest.raises(SystemExit) as stop:
        main(
            [
                "dumps",
                "compare",
                str(sets / "main-j0-on"),
                str(sets / "main-j0-off"),
                "--rtol",
                rtol,
            ]
        )
    assert stop.value.code == 64
    assert "--rtol" in capsys.readouterr().err
