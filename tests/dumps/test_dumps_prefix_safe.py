"""`j0 dumps check` on runs with a prefix-cache hit: the prefix-safe variant's draws below a
request's start are checked (its identity from --log or --variant, the prompts from --prompts);
the article's stay UNVERIFIABLE.

The dumps are made by simulate.py with real kernels: the article's file (dumpsets.make_sets) and
the prefix-safe variant, which is the committed second patch applied to the article's file with
`git apply`; simulate.py calls the variant's fill as its propose does. The recorded real-engine
dumps of the article's file (tests/data/engine-h200-prefix-cache) are read too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dumps.dumpsets import ENGINE_PREFIX, HERE, ROOT, cached_simulation, make_sets
from j0.cli import main
from j0.pins import Pins

PATCH = ROOT / "overlay" / "jetspec-j0-prefix-safe.patch"
PREFIX_SAFE_SHA = "38d5625e42113ced60fe43ef47434d0b88bed0e5f7217787d81efb441dce6d02"
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"


@pytest.fixture(scope="module")
def article_sets(article_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sets(article_file, tmp_path_factory.mktemp("dumpsets"))


@pytest.fixture(scope="module")
def variant_sets(article_file: Path, pins: Pins, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from j0.selfcheck.kernels import INTERPRETER_ENV

    work = tmp_path_factory.mktemp("variant")
    target = work / "tree" / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    subprocess.run(["git", "init", "-q", str(work / "tree")], check=True)
    subprocess.run(["git", "apply", "-p1", str(PATCH)], cwd=work / "tree", check=True)
    scenarios = ["--scenario", "prefix", "--scenario", "prefix-aba"]

    def simulate(tmp: Path) -> Path:
        env = {**os.environ, **INTERPRETER_ENV, "VLLM_LOGGING_LEVEL": "ERROR"}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
        )
        out = tmp / "sets"
        command = [sys.executable, str(HERE / "simulate.py"), "--speculator", str(target)]
        command += ["--out", str(out), *scenarios]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return out

    return cached_simulation([target], scenarios, work, simulate)


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / "report.json"
    capsys.readouterr()
    code = main(["dumps", "check", *args, "--json", str(out)])
    text = capsys.readouterr().out
    return code, json.loads(out.read_text()) if out.exists() else {}, text


def server_log(tmp_path: Path, sha: str, kind: str) -> Path:
    """The identity line as the entrypoint (and `engine-check --here`) writes it, first in a log."""
    log = tmp_path / f"server-{kind}.log"
    log.write_text(
        "j0-entrypoint: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), "
        f"/site/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py: speculator.py sha256={sha} "
        f"identity={kind} (...)\n(EngineCore pid=7) INFO 11-30 12:00:53 [speculator.py:144] "
        "DFLASH_CTX_NOISE=1 pool=(4, 64) dump=/d/200\n"
    )
    return log


@pytest.mark.parametrize("scenario", ["prefix", "prefix-aba"])
def test_the_variant_is_verified_at_cached_positions(
    variant_sets: Path, scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = variant_sets / f"{scenario}-j0-on"
    prompts = folder.with_name(folder.name + "-prompts.json")
    log = server_log(tmp_path, PREFIX_SAFE_SHA, "prefix-safe")
    code, data, text = check(
        capsys, tmp_path, str(folder), "--log", str(log), "--prompts", str(prompts)
    )
    assert code == 0, text
    assert data["verdict"] == "PASS" and data["variant"] == "prefix-safe"
    again = data["requests"][-1]
    assert again["start_pos"] == 32 and again["unverifiable"] == 0
    assert again["verified"] == again["draws"] > 0
    assert "the prefix-safe variant fills positions 0..31" in again["note"]
    # --variant says the same as the log.
    code, data, _ = check(
        capsys, tmp_path, str(folder), "--variant", "prefix-safe", "--prompts", str(prompts)
    )
    assert code == 0 and data["requests"][-1]["unverifiable"] == 0


def test_the_variant_without_prompts_says_what_would_check_it(
    variant_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = variant_sets / "prefix-aba-j0-on"
    code, data, _ = check(capsys, tmp_path, str(folder), "--variant", "prefix-safe")
    assert code == 2 and data["verdict"] == "UNVERIFIABLE"
    note = data["requests"][-1]["note"]
    assert "read the request's own tokens (the prefix-safe variant)" in note
    assert "--prompts FILE" in note


def test_the_articles_file_stays_unverifiable(
    article_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = article_sets / "prefix-aba-j0-on"
    log = server_log(tmp_path, ARTICLE_SHA, "article")
    prompts = folder.with_name(folder.name + "-prompts.json")
    code, data, _ = check(
        capsys, tmp_path, str(folder), "--log", str(log), "--prompts", str(prompts)
    )
    assert code == 2 and data["verdict"] == "UNVERIFIABLE" and data["variant"] == "article"
    again = data["requests"][-1]
    assert again["unverifiable"] > 0
    assert "the article's file: its known behaviour under prefix caching" in again["note"]
    # What it drew there is what D, the slot's previous request, left: stale history.
    assert again["stale_matches"] > 0


def test_the_articles_dumps_claimed_as_the_variant_fail(
    article_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check is real: the article's draws at cached positions read D's tokens, not C's own,
    so taken for the variant's they fail."""
    folder = article_sets / "prefix-aba-j0-on"
    prompts = folder.with_name(folder.name + "-prompts.json")
    code, data, text = check(
        capsys, tmp_path, str(folder), "--variant", "prefix-safe", "--prompts", str(prompts)
    )
    assert code == 1 and data["verdict"] == "FAIL", text
    failed = [f for f in data["findings"] if f["level"] == "fail" and f["check"] == "j0-draw"]
    assert failed


def test_the_real_engines_article_dumps_stay_unverifiable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data, _ = check(capsys, tmp_path, str(ENGINE_PREFIX), "--variant", "article")
    assert code == 2 and data["verdict"] == "UNVERIFIABLE"
    assert any("known behaviour under prefix caching" in r["note"] for r in data["requests"])


def test_prompts_that_match_no_request_leave_it_unverifiable(
    variant_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = variant_sets / "prefix-aba-j0-on"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([[7] * 60]))
    code, data, _ = check(
        capsys, tmp_path, str(folder), "--variant", "prefix-safe", "--prompts", str(wrong)
    )
    assert code == 2
    assert (
        "no prompt of --prompts matches its dumped tokens from 32" in data["requests"][-1]["note"]
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{}", "expected a non-empty JSON list of prompts"),
        ("[1, 2]", "item 0 is not a prompt"),
        ('[[1, 2], {"prompt_token_ids": "x"}]', "item 1 is not a prompt"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_prompts_file_is_refused_naming_it(
    variant_sets: Path, tmp_path: Path, content: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "prompts.json"
    bad.write_text(content)
    folder = variant_sets / "prefix-j0-on"
    capsys.readouterr()
    code = main(["dumps", "check", str(folder), "--variant", "prefix-safe", "--prompts", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and f"--prompts {bad}" in err and said in err


def test_the_log_must_name_a_j0_file_and_agree_with_variant(
    variant_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(variant_sets / "prefix-j0-on")
    base = server_log(tmp_path, "27" * 32, "base")
    assert main(["dumps", "check", folder, "--log", str(base)]) == 2
    assert "identity=base; expected article or prefix-safe" in capsys.readouterr().err
    article = server_log(tmp_path, ARTICLE_SHA, "article")
    assert main(["dumps", "check", folder, "--log", str(article), "--variant", "prefix-safe"]) == 64
    assert "says identity=article" in capsys.readouterr().err
    empty = tmp_path / "empty.log"
    empty.write_text("INFO nothing here\n")
    assert main(["dumps", "check", folder, "--log", str(empty)]) == 2
    assert "no `j0-entrypoint: ... identity=...` line" in capsys.readouterr().err


def test_the_log_must_show_the_dumps_own_j0(
    variant_sets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dumps of J0 on checked with the log of a server whose J0 file logged DFLASH_CTX_NOISE=0
    (J0 off, by the one rule of j0.engine.server.j0_state) are not that server's dumps: exit 2,
    naming both; a log that leaves J0 unknown (no DFLASH_CTX_NOISE line) says nothing of it."""
    folder = str(variant_sets / "prefix-j0-on")
    log = server_log(tmp_path, PREFIX_SAFE_SHA, "prefix-safe")
    off = tmp_path / "off.log"
    off.write_text(
        log.read_text().replace("DFLASH_CTX_NOISE=1 pool=(4, 64)", "DFLASH_CTX_NOISE=0 pool=(1, 1)")
    )
    capsys.readouterr()
    assert main(["dumps", "check", folder, "--log", str(off)]) == 2
    err = capsys.readouterr().err
    assert f"--log {off} says J0 off (identity=prefix-safe, DFLASH_CTX_NOISE=0)" in err
    assert "are J0 on: they are not that server's dumps" in err
    unknown = tmp_path / "unknown.log"
    unknown.write_text(log.read_text().splitlines()[0] + "\n")
    main(["dumps", "check", folder, "--log", str(unknown)])  # no --prompts: UNVERIFIABLE
    said = capsys.readouterr()
    assert "UNVERIFIABLE" in said.out and "not that server's dumps" not in said.out + said.err
