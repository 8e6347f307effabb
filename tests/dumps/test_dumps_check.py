"""`j0 dumps check` and `j0 dumps show` on dumps made by the article's real kernels (Triton's
interpreter, tests/dumps/simulate.py), on tampered copies of them, on dumps of broken kernels, and
on the recorded H200 engine dumps (tests/data/README.md).

Expected values come from the scenario's design (simulate.py: which request sits in which slot,
how many chunks and decodes, which file was edited) or from the recorded run's README, never from
the code under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from dumpsets import (
    BROKEN,
    ENGINE,
    ENGINE_GRAPHS,
    ENGINE_PREFIX,
    MASK,
    copy_set,
    edit_step,
    load_step,
    make_sets,
)

from j0.cli import main

# --- Fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sets(article_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sets(article_file, tmp_path_factory.mktemp("dumpsets"))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["dumps", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def check_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "report.json"
    code, out = run(capsys, "check", *args, "--json", str(report))
    data = json.loads(report.read_text())
    assert data["exit_code"] == code, out
    return data


# Layout of the main scenario (simulate.py, main_scenario): two warm-up rounds of two dumped steps
# each (0-3); request A in slot 2: chunks 4, 5 (no query pass), last chunk 6, decodes 7-16, a
# context-only final step 17; request B in slot 3: last chunk 18, decodes 19-24.
A_DECODES = range(7, 17)


# --- The article's kernels pass ---------------------------------------------------------------


@pytest.mark.parametrize("j0", ["on", "off"])
def test_main_scenario_passes(
    sets: Path, j0: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = check_json(capsys, tmp_path, str(sets / f"main-j0-{j0}"))
    assert data["verdict"] == "PASS" and data["exit_code"] == 0, data["findings"][:3]
    reqs = data["requests"]
    assert [r["status"] for r in reqs] == ["warm-up", "warm-up", "checked", "checked"]
    assert [r["first_step"] for r in reqs] == [f"step{n:04d}.pt" for n in (0, 2, 4, 18)]
    a, b = reqs[2], reqs[3]
    assert a["kinds"] == {"prefill-chunk": 2, "prefill-last": 1, "decode": 11}
    assert b["kinds"] == {"prefill-last": 1, "decode": 6}
    # 11 query steps of A and 7 of B, 7 draft slots each, all verified.
    assert (a["draws"], b["draws"]) == (77, 49)
    assert a["verified"] == 77 and b["verified"] == 49 and a["unverifiable"] == 0
    if j0 == "on":
        assert (a["slot"], b["slot"]) == (2, 3)  # inferred: the slots the simulation used
    else:
        assert data["mask_token"] == MASK


def test_the_warm_up_is_named(sets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "check", str(sets / "main-j0-on"))
    assert code == 0
    assert "warm-up" in out and "starts at position 12" in out and "PASS" in out


def test_skip_requests(sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = check_json(capsys, tmp_path, str(sets / "main-j0-on"), "--skip-requests", "3")
    assert [r["status"] for r in data["requests"]] == ["warm-up", "warm-up", "skipped", "checked"]
    assert data["verdict"] == "PASS"


def test_the_given_mask_token_is_used(sets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", str(sets / "main-j0-off"), "--mask-token", str(MASK))[0] == 0
    code, out = run(capsys, "check", str(sets / "main-j0-off"), "--mask-token", str(MASK - 1))
    assert code == 1 and f"expected {MASK - 1}, actual {MASK}" in out


def test_another_seed_fails(sets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "check", str(sets / "main-j0-on"), "--seed", "1")
    assert code == 1 and "j0-draw" in out


# --- Prefix cache: unverifiable, never a pass -------------------------------------------------


def test_prefix_cache_hit_is_unverifiable(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = check_json(capsys, tmp_path, str(sets / "prefix-j0-on"))
    assert data["verdict"] == "UNVERIFIABLE" and data["exit_code"] == 2
    first, again = data["requests"]
    assert first["unverifiable"] == 0 and first["verified"] == first["draws"] == 5 * 15
    assert again["start_pos"] == 32 and again["unverifiable"] > 0
    # Same prompt, same slot: what the kernel drew is what request 0 left in the history.
    assert again["stale_matches"] == again["unverifiable"]
    assert data["max_model_len"] == 64  # the query positions' clamp, seen and accepted
    code, out = run(capsys, "check", str(sets / "prefix-j0-on"), "--allow-unverifiable")
    assert code == 0 and "UNVERIFIABLE" in out and "PASS" not in out


def test_prefix_cache_with_j0_off_passes(sets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", str(sets / "prefix-j0-off"))[0] == 0


def test_a_fault_beside_unverifiable_draws_still_fails(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = copy_set(sets / "prefix-j0-on", tmp_path / "bad")
    edit_step(bad / "step0002.pt", lambda d: d["query_ids"].__setitem__(0, 7))
    assert run(capsys, "check", str(bad))[0] == 1


# --- Tampered copies: each must fail, naming the step and slot --------------------------------


def _rejected_token(step: dict) -> int:
    n_rej = int(step["num_rejected"][0])
    assert n_rej > 0
    return int(step["input_ids"][-1])


def _tampers(sets: Path) -> dict:
    on = sets / "main-j0-on"

    def first_decode_with_rejections() -> int:
        for n in A_DECODES:
            if int(load_step(on / f"step{n:04d}.pt")["num_rejected"][0]) > 0:
                return n
        raise AssertionError("no decode step with rejections in the main scenario")

    rej_step = first_decode_with_rejections()
    future_token = int(load_step(on / "step0017.pt")["input_ids"][0])  # committed at the end

    def other_token(d: dict, k: int) -> None:
        d["query_ids"][k] = (int(d["query_ids"][k]) + 1) % MASK or 1

    return {
        # name: (set, file, change, text the failure must contain)
        "wrong J0 slot": ("main-j0-on", 9, lambda d: other_token(d, 3), "step0009.pt slot 3"),
        "slot reads a rejected token": (
            "main-j0-on",
            rej_step,
            lambda d: d["query_ids"].__setitem__(2, _rejected_token(d)),
            "rejected draft",
        ),
        "slot reads a future token": (
            "main-j0-on",
            8,
            lambda d: d["query_ids"].__setitem__(4, future_token),
            "future token",
        ),
        "wrong anchor": (
            "main-j0-on",
            10,
            lambda d: other_token(d, 0),
            "step0010.pt slot 0 [anchor]",
        ),
        "query positions": (
            "main-j0-on",
            12,
            lambda d: d["query_positions"].__setitem__(2, int(d["query_positions"][2]) + 1),
            "[query-positions]",
        ),
        "target positions shifted": (
            "main-j0-on",
            13,
            lambda d: d.__setitem__("positions", d["positions"] + 1),
            "[positions]",
        ),
        "positions with a hole": (
            "main-j0-on",
            14,
            lambda d: d["positions"].__setitem__(3, int(d["positions"][3]) + 1),
            "[positions]",
        ),
        "num_rejected off by one": (
            "main-j0-on",
            rej_step,
            lambda d: d["num_rejected"].__setitem__(0, int(d["num_rejected"][0]) - 1),
            "[counts]",
        ),
        "num_sampled off by one": (
            "main-j0-on",
            15,
            lambda d: d["num_sampled"].__setitem__(0, int(d["num_sampled"][0]) + 1),
            "[counts]",
        ),
        "prefill chunk with rejections": (
            "main-j0-on",
            5,
            lambda d: d["num_rejected"].__setitem__(0, 1),
            "[counts]",
        ),
        "mask token wrong with J0 off": (
            "main-j0-off",
            20,
            lambda d: d["query_ids"].__setitem__(4, MASK - 1),
            "step0020.pt slot 4 [mask]",
        ),
        "J0 switched within a run": (
            "main-j0-on",
            11,
            lambda d: d.__setitem__("ctx_noise", False),
            "[ctx_noise]",
        ),
        "a dtype changed": (
            "main-j0-on",
            8,
            lambda d: d.__setitem__("input_ids", d["input_ids"].to(torch.int64)),
            "input_ids is int64, expected int32",
        ),
        "a key missing": (
            "main-j0-on",
            8,
            lambda d: d.pop("draft_tokens"),
            "[format]",
        ),
        "the J0 draws of request B in a step of request A": (
            "main-j0-on",
            9,
            lambda d: d.__setitem__("query_ids", load_step(on / "step0020.pt")["query_ids"]),
            "step0009.pt",
        ),
    }


def test_tampered_copies_fail(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missed = []
    for n, (name, (src, number, change, text)) in enumerate(_tampers(sets).items()):
        bad = copy_set(sets / src, tmp_path / f"t{n}")
        edit_step(bad / f"step{number:04d}.pt", change)
        code, out = run(capsys, "check", str(bad))
        if code != 1 or text not in out:
            missed.append(f"{name}: exit {code}, {text!r} not in:\n{out[-1500:]}")
    assert not missed, "\n\n".join(missed)


def test_a_missing_step_fails(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = copy_set(sets / "main-j0-on", tmp_path / "bad")
    (bad / "step0012.pt").unlink()
    code, out = run(capsys, "check", str(bad))
    assert code == 1 and "step0012.pt" in out and "missing" in out


def test_an_unreadable_step_fails(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = copy_set(sets / "main-j0-on", tmp_path / "bad")
    (bad / "step0012.pt").write_bytes(b"not a torch file")
    code, out = run(capsys, "check", str(bad))
    assert code == 1 and "step0012.pt" in out and "cannot be read" in out


@pytest.mark.parametrize("name", [name for name, _, _ in BROKEN])
def test_broken_kernels_fail(sets: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Dumps written by a copy of the article's file with one J0 fault (see dumpsets.BROKEN)."""
    code, out = run(capsys, "check", str(sets / name))
    assert code == 1, out[-2000:]
    assert "FAIL" in out


# --- Not a dump folder: exit 2 ------------------------------------------------------------------


def test_not_a_dump_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", str(tmp_path / "absent"))[0] == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run(capsys, "check", str(empty))
    assert code == 2 and "not a dump folder" in out
    other = tmp_path / "other"
    other.mkdir()
    (other / "README.md").write_text("hello\n")
    torch.save({"weight": torch.zeros(3)}, other / "step0000.pt")
    torch.save([1, 2, 3], other / "step0001.pt")
    code, out = run(capsys, "check", str(other))
    assert code == 2 and "not a dump folder" in out
    a_file = tmp_path / "file.pt"
    a_file.write_bytes(b"x")
    assert run(capsys, "check", str(a_file))[0] == 2
    assert run(capsys, "show", str(empty))[0] == 2


def test_pickled_code_is_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Files come from elsewhere: torch.load(weights_only=True) refuses arbitrary objects."""
    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "ran"
    torch.save({"positions": _Evil(marker)}, folder / "step0000.pt")
    code, _ = run(capsys, "check", str(folder))
    assert code == 2 and not marker.exists()


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Path.touch, (self.marker,))


# --- The recorded engine dumps ------------------------------------------------------------------


@pytest.mark.parametrize("j0", ["on", "off"])
def test_engine_dumps_pass(j0: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = check_json(capsys, tmp_path, str(ENGINE / f"j0-{j0}"))
    assert data["verdict"] == "PASS" and data["exit_code"] == 0
    (req,) = data["requests"]
    assert req["steps"] == 60 and req["draws"] == req["verified"] == 60 * 7
    if j0 == "on":
        assert req["slot"] == 3  # as the recorded run's README says
    else:
        assert data["mask_token"] == 4095  # the drafter's mask_token_id in that run


def test_engine_prefix_cache_dumps_are_unverifiable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = check_json(capsys, tmp_path, str(ENGINE_PREFIX))
    assert data["verdict"] == "UNVERIFIABLE" and data["exit_code"] == 2
    a, a_again, b, a_third = data["requests"]
    assert a["unverifiable"] == b["unverifiable"] == 0
    assert a_again["start_pos"] == a_third["start_pos"] == 560
    # The README: A-third drew B's tokens in every step; here, each of its unverifiable draws
    # equals what request 2 (B) left in slot 3's history.
    text = next(f for f in data["findings"] if f["request"] == 3)["why"]
    assert "request 2: " in text and a_third["stale_matches"] == a_third["unverifiable"] > 200


def test_engine_dumps_tampered_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = copy_set(ENGINE / "j0-on", tmp_path / "bad")

    def swap(d: dict) -> None:
        ids = d["query_ids"]
        ids[1], ids[2] = int(ids[2]), int(ids[1])

    # step0030's slots 1 and 2 hold different tokens (2 and 559 in the recorded run).
    ids = load_step(bad / "step0030.pt")["query_ids"]
    assert int(ids[1]) != int(ids[2])
    edit_step(bad / "step0030.pt", swap)
    code, out = run(capsys, "check", str(bad))
    assert code == 1 and "step0030.pt slot 1" in out and "step0030.pt slot 2" in out


# --- show ---------------------------------------------------------------------------------------


def test_show(sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "show.json"
    code, out = run(capsys, "show", str(sets / "main-j0-on"), "--json", str(out_json))
    assert code == 0
    assert "warm-up" in out and "bfloat16 [T, 64]" in out and "int32 [8]" in out
    data = json.loads(out_json.read_text())
    assert data["j0"] == "on" and data["num_spec"] == 7 and data["steps"] == 25
    a = data["requests"][2]
    assert (a["prefill_chunks"], a["prefill_last"], a["decodes"]) == (2, 1, 11)
    # simulate.py: A's accepted drafts over its decodes, and its first decode has 7 drafts.
    assert a["accepted"] == sum([0, 3, 7, 0, 2, 5, 1, 0, 7, 4]) + 0
    assert [r["warmup"] for r in data["requests"]] == [True, True, False, False]


def test_show_engine_dumps(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "show", str(ENGINE / "j0-off"))
    assert code == 0 and "J0 off" in out and "60 steps" in out


def test_show_names_a_bad_file(
    sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = copy_set(sets / "main-j0-on", tmp_path / "bad")
    shutil.copy(bad / "step0001.pt", bad / "step0001.pt.bak")
    (bad / "step0003.pt").write_bytes(b"junk")
    code, out = run(capsys, "show", str(bad))
    assert code == 1 and "step0003.pt" in out


def test_unverifiable_draws_of_one_position_must_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Below a request's first position nothing is written while it runs: two draws of the same
    index read the same token, so changing one of them fails even where neither is checkable."""
    data = check_json(capsys, tmp_path, str(ENGINE_PREFIX))
    draws = data["requests"][3]["unverifiable_draws"]
    assert len(draws) == 200  # the first 200 of 213 are listed
    by_index: dict[int, list[dict]] = {}
    for d in draws:
        by_index.setdefault(d["index"], []).append(d)
    first, second = next(v for v in by_index.values() if len(v) > 1)[:2]
    assert first["actual"] == second["actual"]  # the recorded run is consistent
    bad = copy_set(ENGINE_PREFIX, tmp_path / "bad")
    edit_step(
        bad / second["step"],
        lambda d: d["query_ids"].__setitem__(second["slot"], (second["actual"] + 1) % 4095),
    )
    code, out = run(capsys, "check", str(bad))
    assert code == 1
    assert f"{second['step']} slot {second['slot']} [j0-draw]" in out
    assert f"as {first['step']} slot {first['slot']} did" in out


@pytest.mark.parametrize("j0", ["on", "off"])
def test_engine_dumps_with_cuda_graphs_pass(
    j0: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recorded CUDA-graph run (15 draft tokens): its README says step0000-0003 are the
    start-up warm-up (positions 20 and 21) and the real request starts at step0004."""
    data = check_json(capsys, tmp_path, str(ENGINE_GRAPHS / f"j0-{j0}"))
    assert data["verdict"] == "PASS" and data["exit_code"] == 0, data["findings"][:3]
    warm1, warm2, real = data["requests"]
    assert warm1["status"] == warm2["status"] == "warm-up"
    assert (warm1["first_step"], warm2["first_step"]) == ("step0000.pt", "step0002.pt")
    assert warm1["start_pos"] == 20
    assert real["first_step"] == "step0004.pt" and real["start_pos"] == 0
    assert data["num_spec"] == 15 and real["draws"] == real["verified"] == 36 * 15
    if j0 == "on":
        assert real["slot"] == 3
    else:
        assert data["mask_token"] == 4095
