"""`j0 selfcheck --prefix-cache`: sessions whose requests start with prefix-cached positions.

The article's file (made from vLLM 0.33.0's wheel with GNU patch, conftest.py) and the prefix-safe
variant (the committed second patch applied to it with `git apply`) run through the real CLI, their
real kernels in Triton's interpreter on the CPU. The article's file must fail there, naming the
request slot and the foreign token; the variant must pass; both must pass the no-hit controls.
Broken copies of the variant must fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from j0.pins import Pins
from j0.reference.draws import draws
from j0.selfcheck.prefix import sessions as prefix_sessions

ROOT = Path(__file__).resolve().parents[2]
PATCH = ROOT / "overlay" / "jetspec-j0-prefix-safe.patch"
PREFIX_SAFE_SHA = "38d5625e42113ced60fe43ef47434d0b88bed0e5f7217787d81efb441dce6d02"


@pytest.fixture(scope="module")
def variant_file(article_file: Path, pins: Pins, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("variant")
    target = work / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "apply", "-p1", str(PATCH)], cwd=work, check=True)
    import hashlib

    assert hashlib.sha256(target.read_bytes()).hexdigest() == PREFIX_SAFE_SHA
    return target


# --- The batteries, without any kernel -----------------------------------------------------------


@pytest.fixture(scope="module")
def sessions() -> list[prefix_sessions.PrefixCase]:
    return prefix_sessions.battery(0)


def _first_rows(pcase: prefix_sessions.PrefixCase, name: str) -> list[tuple[int, int]]:
    """(step, row) of every step of request `name`."""
    return [
        (s, i) for s, ids in enumerate(pcase.req_ids) for i, rid in enumerate(ids) if rid == name
    ]


def test_every_scenario_has_a_hit_and_a_control(
    sessions: list[prefix_sessions.PrefixCase],
) -> None:
    hits = [p for p in sessions if p.hit]
    controls = [p for p in sessions if not p.hit]
    assert (
        [p.scenario for p in hits]
        == [p.scenario for p in controls]
        == list(prefix_sessions.SCENARIOS)
    )
    for pcase in hits:
        cached = [a for a in pcase.admissions if a.cached > 0]
        assert len(cached) == 1, pcase.label()
        adm = cached[0]
        # A whole number of blocks, at least one prompt token left to schedule.
        assert adm.cached % pcase.case.block_size == 0 and 0 < adm.cached < len(adm.prompt)
        step, row = _first_rows(pcase, adm.name)[0]
        first = pcase.case.steps[step].requests[row]
        assert first.start_pos == adm.cached == pcase.num_computed[step][row]
        assert (first.committed[: adm.cached] == adm.prompt[: adm.cached]).all()
    for pcase in controls:
        assert all(a.cached == 0 for a in pcase.admissions), pcase.label()


def test_the_scenarios_are_what_they_say(sessions: list[prefix_sessions.PrefixCase]) -> None:
    by_name = {p.scenario: p for p in sessions if p.hit}
    names = [a.name for a in by_name["A, A again"].admissions]
    assert names == ["A", "A again"]
    a, again = by_name["A, A again"].admissions
    assert a.slot == again.slot and (a.prompt == again.prompt).all()
    a, b, again = by_name["A, B, A again"].admissions
    assert a.slot == b.slot == again.slot
    assert len(b.prompt) != len(a.prompt) or (b.prompt != a.prompt).any()
    a, c, b = by_name["shared prefix, other slot"].admissions
    assert b.slot == c.slot != a.slot and (b.prompt[: b.cached] == a.prompt[: b.cached]).all()
    chunked = by_name["chunked prefill after a hit"]
    hit = next(x for x in chunked.admissions if x.cached)
    kinds = [chunked.case.steps[s].requests[i].kind for s, i in _first_rows(chunked, hit.name)]
    assert kinds.count("prefill-chunk") >= 2  # the rest of the prompt takes several chunks
    beside = by_name["hit beside other requests"]
    step, _ = _first_rows(beside, "A again")[0]
    assert len(beside.case.steps[step].requests) == 2  # batched with the request without a hit


def test_in_every_hit_session_a_draw_lands_on_a_cached_position(
    sessions: list[prefix_sessions.PrefixCase], pins: Pins
) -> None:
    """Otherwise the battery could not tell the article's file from the variant."""
    for pcase in (p for p in sessions if p.hit):
        adm = next(a for a in pcase.admissions if a.cached)
        landed = 0
        for step, row in _first_rows(pcase, adm.name):
            req = pcase.case.steps[step].requests[row]
            found = draws(pins.j0_seed, req.req_state_idx, pcase.case.num_spec, len(req.committed))
            landed += sum(d.index < adm.cached for d in found)
        assert landed > 0, pcase.label()


def test_a_session_replays_from_its_seed() -> None:
    a, b = (
        prefix_sessions.make_prefix_case(4, 1, True),
        prefix_sessions.make_prefix_case(4, 1, True),
    )
    assert a.req_ids == b.req_ids and a.num_computed == b.num_computed
    for sa, sb in zip(a.case.steps, b.case.steps, strict=True):
        for ra, rb in zip(sa.requests, sb.requests, strict=True):
            assert (ra.tokens == rb.tokens).all() and ra.anchor == rb.anchor


# --- Through the real CLI, real kernels ---------------------------------------------------------


def _cli(*args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "j0", "selfcheck", "--prefix-cache", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(f"j0 selfcheck --prefix-cache {' '.join(args)}: {time.monotonic() - started:.1f} s")
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_variant_passes(variant_file: Path) -> None:
    code, out = _cli("--speculator", str(variant_file), "--device", "cpu")
    assert code == 0, out[-4000:]
    assert "PASS" in out
    assert "10 sessions (5 with a prefix-cache hit, 5 no-hit controls)" in out
    assert "DEVIATES" not in out


@pytest.mark.slow
def test_the_articles_file_deviates_naming_the_slot_and_the_foreign_token(
    article_file: Path,
) -> None:
    code, out = _cli("--speculator", str(article_file), "--device", "cpu")
    assert code == 1, out[-4000:]
    assert "FAIL" in out and "J0 deviates under prefix caching" in out
    head = next(x for x in out.splitlines() if "J0 deviates under prefix caching" in x)
    assert "(request slot " in head and "query slot " in head
    assert "expected its own committed token " in head and "(a prefix-cached position)" in head
    assert "a foreign token: request 'B', which ran in request slot " in head
    assert "This is the known behaviour of the article's file" in out
    assert "--variant prefix-safe" in out
    # Same slot, same prompt: right by luck. And every control passes.
    assert "ok        A, A again (with a prefix-cache hit)" in out
    for scenario in prefix_sessions.SCENARIOS:
        assert f"ok        {scenario} (no hit: control)" in out
    assert "DEVIATES  A, B, A again (with a prefix-cache hit)" in out


# Broken copies of the variant: (name, text, replacement, what the report must say).
BROKEN = [
    ("fill copies nothing", "        if n > 0:\n", "        if n > 10**9:\n", "but a draw still"),
    (
        "fill one short",
        "ctx_pool[slot, :n].copy_(all_token_ids[slot, :n]",
        "ctx_pool[slot, : n - 1].copy_(all_token_ids[slot, : n - 1]",
        "but a draw still",
    ),
    (
        "fill in dummy runs too",
        "        if self.ctx_noise and not dummy_run:\n            fill_ctx",
        "        if self.ctx_noise:\n            fill_ctx",
        "in a dummy run calls fill_ctx_pool_cached_prefix",
    ),
    (
        "fill from the wrong slots",
        "                input_batch.idx_mapping_np,\n",
        "                input_batch.idx_mapping,\n",
        "expected (self.ctx_pool",
    ),
]


@pytest.fixture(scope="module")
def broken_results(variant_file: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every broken copy checked in one worker process (`python -m j0.selfcheck`, what the CLI
    starts; one vLLM import, about 7 s here, instead of one per copy): each copy's result by
    name, from --json."""
    from j0.selfcheck.kernels import INTERPRETER_ENV

    text = variant_file.read_text()
    work = tmp_path_factory.mktemp("broken")
    cmd = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--prefix-cache"]
    paths = {}
    for n, (name, old, new, _) in enumerate(BROKEN):
        assert text.count(old) == 1, name
        paths[name] = work / f"b{n}.py"
        paths[name].write_text(text.replace(old, new))
        cmd += ["--speculator", str(paths[name])]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(INTERPRETER_ENV, VLLM_LOGGING_LEVEL="ERROR")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    cmd += ["--json", str(work / "results.json")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-4000:]
    by_file = {r["file"]: r for r in json.loads((work / "results.json").read_text())}
    return {name: by_file[str(path)] for name, path in paths.items()}


@pytest.mark.slow
# one pytest-xdist worker for all four, so that the module's fixture runs once, not per worker
@pytest.mark.xdist_group("prefix-cache-broken")
@pytest.mark.parametrize(("name", "old", "new", "said"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_variants_fail(
    broken_results: dict[str, Any], name: str, old: str, new: str, said: str
) -> None:
    result = broken_results[name]
    assert result["code"] == 1, result
    assert said in result["message"], result["message"]


@pytest.mark.gpu
def test_both_files_on_cuda(pins: Pins, tmp_path: Path) -> None:
    """The compiled kernels against the CPU reference: the variant passes, the article's file
    deviates. Both are made from the installed vLLM (a GPU machine may have no wheel)."""
    from conftest import cuda_gpu_here

    if not cuda_gpu_here():
        pytest.skip("no CUDA GPU")
    from j0.article import build as overlay
    from j0.engine.source import base_sources

    base = base_sources.from_installed(pins)
    for variant, want in (("prefix-safe", 0), ("article", 1)):
        path = tmp_path / f"{variant}.py"
        path.write_bytes(overlay.build_variant(base.data, base.origin, pins, variant))
        code, out = _cli("--speculator", str(path), "--device", "cuda")
        assert code == want, out[-4000:]


@pytest.mark.slow
def test_bench_times_the_fill_of_the_variant_only(
    variant_file: Path, article_file: Path, tmp_path: Path
) -> None:
    """`--bench` adds the fill's rows (per step, per admission) for the variant, none for the
    article's file. The times are this machine's and are not asserted."""
    import json

    rows = {}
    for name, path in (("variant", variant_file), ("article", article_file)):
        out = tmp_path / f"{name}.json"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = str(ROOT / "scripts")
        command = [sys.executable, "-m", "j0", "selfcheck", "--speculator", str(path)]
        command += ["--device", "cpu", "--cases", "1", "--bench", "--json", str(out)]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        rows[name] = json.loads(out.read_text())["bench_prefix_fill"]
    assert rows["article"] is None
    fill = rows["variant"]
    assert [(r["what"], r["num_reqs"]) for r in fill if r["what"] == "per step"] == [
        ("per step", 1),
        ("per step", 4),
        ("per step", 8),
    ]
    assert [r["cached"] for r in fill if r["what"] == "per admission"] == [512, 4096, 30000]
    assert all(r["host_us"] > 0 for r in fill)


def test_case_and_prefix_cache_together_is_a_usage_error(
    article_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from j0.cli import main

    assert (
        main(["selfcheck", "--speculator", str(article_file), "--prefix-cache", "--case", "3"])
        == 64
    )
    assert "--prefix-cache runs its own sessions" in capsys.readouterr().err
