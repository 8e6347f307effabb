"""`j0 mini run --here` from start to verdict without a GPU: the real orchestration (a server
process per setting, /health, `j0 bench run`, `j0 bench report`, `j0 dumps check`, the cross-check's
requests) with tests/engine_check/bin/vllm_serve_standin.py in the place of `vllm serve`: our vLLM
stand-in on 127.0.0.1 (tests/servers/vllm/server.py) with real recorded engine dumps for J0 on,
and a `vllm` folder holding the article's speculator.py first on PYTHONPATH (the identity line
each server's log starts with, and the run's own check before it starts any).
The stand-in returns no token ids, so the cross-check is reported as not run (exit 2)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from j0.errors import INPUT_LACKS, OK, USAGE, J0Error
from j0.mini.run.run import MiniRunOptions, run_mini_run
from servers.base import free_port

STANDIN = Path(__file__).resolve().parents[1] / "engine_check" / "bin" / "vllm_serve_standin.py"


def options(out: Path, crosscheck: bool, **more: Any) -> MiniRunOptions:
    chosen: dict[str, Any] = {
        "out": out,
        "tokens": (7,),
        "contexts": (32, 64),
        "requests": 2,
        "max_tokens": 16,
        "port": free_port(),
        "startup_timeout": 60.0,
        "crosscheck": crosscheck,
        "device": "cpu",
        "server_command": [sys.executable, str(STANDIN)],
        "j0_seeds": (20261031,),
        "slots": 2,
        "parts": ("mask", "j0"),
    }
    return MiniRunOptions(**{**chosen, **more})


@pytest.fixture
def trained(smoke_out: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "mini"
    shutil.copytree(smoke_out, copy)
    return copy


def server_args(folder: Path) -> dict[str, Any]:
    log = (folder / "server.log").read_text()
    return ast.literal_eval(re.search(r"non-default args: (\{.*\})", log)[1])


@pytest.mark.slow  # a matrix of stand-in servers
def test_the_matrix_runs_and_is_reported(trained: Path, article_vllm: Path) -> None:
    chosen = options(trained, crosscheck=False, parts=("baseline", "ngram", "mask", "j0"))
    result = run_mini_run(chosen, say=lambda line: None)
    assert result.exit_code == OK, result.verdict
    run = trained / "run"
    names = ["k7-j0-off", "k7-j0-on"]
    for drafter in ("drafter-mask", "drafter-j0"):
        for name in names:
            doc = json.loads((run / drafter / name / "result.json").read_text())
            assert doc["complete"] is True
            assert len(doc["requests"]) == 4
            assert doc["metrics_crosscheck"]["status"] == "match"
            assert all(r["output_text"] and r["repetition"] for r in doc["requests"])
            log = (run / drafter / name / "server.log").read_text()
            args = server_args(run / drafter / name)
            assert args["max_model_len"] == 512  # 4 x 64 (smoke drafters) + 16 + 8, in 256s
            assert args["enable_prefix_caching"] is False
            assert args["max_num_seqs"] == 2
            assert args["model"] == str(trained / "target")
            assert args["speculative_config"]["model"] == str(trained / drafter)
            assert args["speculative_config"]["num_speculative_tokens"] == 7
            assert ("DFLASH_CTX_NOISE=1" in log) == name.endswith("on")
            assert "identity=article" in log
            assert doc["manifest"]["j0"] == name.removeprefix("k7-j0-")
            assert doc["manifest"]["j0_source"] == "--log"
            assert doc["manifest"]["j0_differs"] is None
        assert (run / drafter / "report.md").is_file()
        report = json.loads((run / drafter / "report.json").read_text())
        assert [p["k"] for p in report["j0_on_minus_off"]] == [7]
        assert report["j0_on_minus_off"][0]["acceptance_length"]["stats"]["prompts"] == 4
    # the baseline without speculative decoding, the n-gram speculator as the brief names it
    assert server_args(run / "baseline")["speculative_config"] == {}
    assert server_args(run / "ngram" / "k7")["speculative_config"] == {
        "method": "ngram",
        "num_speculative_tokens": 7,
        "prompt_lookup_max": 4,
    }
    summary = json.loads((run / "mini-run.json").read_text())
    on = summary["settings"]["drafter-j0/k7-j0-on"]
    assert (on["j0"], on["speculator_identity"]) == ("on", "article")
    assert summary["settings"]["drafter-j0/k7-j0-off"]["j0"] == "off"
    assert summary["speculator"]["identity"] == "article"
    # no DFlash drafter, no J0: labelled n/a, not flagged (the run passed), beside what ran
    for name in ("baseline", "ngram/k7"):
        other = summary["settings"][name]
        assert (other["j0"], other["j0_asked"], other["speculator_identity"]) == (
            None,
            None,
            "article",
        )
        assert f"| {name} | n/a |" in (run / "mini-run.md").read_text()
    assert on["dumps_check"]["verdict"] == "PASS"
    assert on["dumps_check"]["draws_verified"] == on["dumps_check"]["draws"] > 0
    # the slots the check inferred, as its own report beside the dumps names them
    report = json.loads((run / "drafter-j0" / "k7-j0-on" / "dumps-check.json").read_text())
    slots = [r["slot"] for r in report["requests"] if isinstance(r["slot"], int)]
    assert on["dumps_check"]["slots"] == slots and slots
    assert on["dump_pass"]["requests"] >= 1
    assert (run / "drafter-j0" / "k7-j0-on" / "dumps-check.json").is_file()
    assert "dumps/step0000.pt" in (run / "drafter-j0" / "k7-j0-on" / "dumps-sha256.txt").read_text()
    assert set(on["per_request_mean_by_context"]) == {"32", "64"}
    # the comparisons by name, and the speedups, on the same four prompts
    block = summary["comparisons"]["by_tokens"]["7"]
    assert set(block) == {"article", "systems", "control", "ngram"}
    assert block["article"]["all"]["prompts"] == 4
    assert set(block["article"]["by_context"]) == {"32", "64"}
    assert block["article"]["all"]["permutation"]["method"] == "exact"
    assert set(summary["comparisons"]["speedup"]) == {
        "ngram/k7",
        "drafter-mask/k7-j0-off",
        "drafter-mask/k7-j0-on",
        "drafter-j0/k7-j0-off",
        "drafter-j0/k7-j0-on",
    }
    gate = summary["gate"]
    assert gate["target_outputs"] == "baseline"
    assert [b["outputs"] for b in gate["settings"]["baseline"]["bins"]] == [2, 2]
    text = (run / "mini-run.md").read_text()
    assert "the article's" in text and "negative control" in text and "pooled" in text
    # every prompt from a file of its own, the longest filled first, bins interleaved
    prompts = [json.loads(x) for x in (run / "prompts.jsonl").read_text().splitlines()]
    assert [p["id"] for p in prompts] == ["ctx32-00", "ctx64-00", "ctx32-01", "ctx64-01"]
    assert len({p["source"] for p in prompts}) == 4
    record = json.loads((run / "prompts.json").read_text())
    assert record["files_shared"] == 0 and len(record["prompts"]) == 4
    from j0.mini.train.tokenizer import load

    tokenizer = load(trained / "target")
    lengths = [len(tokenizer(p["prompt"], add_special_tokens=False)["input_ids"]) for p in prompts]
    assert all(abs(n - c) <= 2 for n, c in zip(lengths, (32, 64, 32, 64), strict=True)), lengths


@pytest.mark.slow  # a matrix of stand-in servers
def test_a_second_j0_seed_is_served_and_checked(trained: Path, article_vllm: Path) -> None:
    """J0 with seed 20261032: the article's file with that seed goes where the server imports
    it; the stand-in serves the dumps it recorded with the pinned seed, so the dumps check with
    the setting's seed fails: a server that did not take the seed is caught. --resume then adds
    nothing and makes the summary again, the earlier failure still named."""
    chosen = options(trained, crosscheck=False, parts=("j0",), j0_seeds=(20261031, 20261032))
    result = run_mini_run(chosen, say=lambda line: None)
    run = trained / "run"
    variant = run / "speculators" / "seed20261032" / "speculator.py"
    assert "tl.randint(20261032," in variant.read_text()
    assert "tl.randint(20261031," not in variant.read_text()
    log = (run / "drafter-j0" / "k7-j0-on-seed20261032" / "server.log").read_text()
    assert f"the speculator.py imported would be {variant.resolve()}" in log
    assert result.exit_code == 1
    assert [p.split(":")[0] for p in result.problems] == ["drafter-j0/k7-j0-on-seed20261032"]
    assert "j0 dumps check: FAIL" in result.problems[0]
    summary = json.loads((run / "mini-run.json").read_text())
    assert summary["settings"]["drafter-j0/k7-j0-on"]["dumps_check"]["verdict"] == "PASS"
    assert "seeds-j0" in summary["comparisons"]["by_tokens"]["7"]
    again = run_mini_run(
        options(trained, crosscheck=False, parts=("j0",), j0_seeds=(20261031, 20261032),
                resume=True),
        say=lambda line: None,
    )  # fmt: skip
    assert again.exit_code == 1 and again.problems == result.problems  # kept, not served again
    assert (
        json.loads((run / "mini-run.json").read_text())["settings"].keys()
        == summary["settings"].keys()
    )


@pytest.mark.slow  # a matrix of stand-in servers
def test_no_token_ids_leaves_the_cross_check_not_run(
    trained: Path, article_vllm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the command line, with --json alone: the verdict and mini-run.json's summary on
    stdout in place of the text."""
    from j0.cli import main

    chosen = options(trained, crosscheck=True, parts=("mask-off",))
    args = ["mini", "run", str(trained), "--here", "--tokens", "7", "--contexts", "32,64"]
    args += ["--requests", "2", "--max-tokens", "16", "--port", str(chosen.port)]
    args += ["--startup-timeout", "60", "--device", "cpu", "--j0-seeds", "20261031"]
    args += ["--slots", "2", "--parts", "mask-off", "--json"]
    args += ["--server-command", f"{sys.executable} {STANDIN}"]
    assert main(args) == INPUT_LACKS
    result = json.loads(capsys.readouterr().out)
    assert result["exit_code"] == INPUT_LACKS and result["problems"] == []
    assert result["verdict"].startswith("==> INCOMPLETE: ")
    assert "return_token_ids" in result["verdict"] and "cross-check not run" in result["verdict"]
    assert result["summary"] == json.loads((trained / "run" / "mini-run.json").read_text())
    # the sha256 of the prompts it served, for `j0 mini sets` (the same prompts across sets)
    served = (trained / "run" / "prompts.jsonl").read_bytes()
    assert result["summary"]["prompts_sha256"] == hashlib.sha256(served).hexdigest()
    answers = json.loads(
        (trained / "run" / "drafter-mask" / "k7-j0-off" / "crosscheck-answers.json").read_text()
    )
    assert len(answers) == 4 and all("choices" in a for a in answers)


def test_a_folder_not_of_a_run_is_not_overwritten(trained: Path) -> None:
    (trained / "run").mkdir()
    (trained / "run" / "mine").write_text("keep")
    with pytest.raises(J0Error) as caught:
        run_mini_run(options(trained, crosscheck=False), say=lambda line: None)
    assert caught.value.exit_code == USAGE
    assert (trained / "run" / "mine").read_text() == "keep"


@pytest.mark.slow  # two matrices of four servers
def test_j0_on_asked_on_a_server_that_ran_the_base_file_is_labelled_off_and_fails(
    trained: Path, article_vllm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before the run passes (the article's file), but each server's log then says
    identity=base (the stand-in's STANDIN_IDENTITY: a server that imported another file): the
    label comes from the file that ran. J0-on settings are J0 off, named as problems (exit 1);
    their results and the report say J0 off too. A re-run is not blocked: the failed run's
    folder is moved aside, whole."""
    monkeypatch.setenv("STANDIN_IDENTITY", "base")
    result = run_mini_run(options(trained, crosscheck=False), say=lambda line: None)
    assert result.exit_code == 1
    asked_on = [p for p in result.problems if "k7-j0-on" in p]
    assert len(asked_on) == 2 and len(result.problems) == 2, result.problems
    assert all("J0 on was asked, but the server's log says J0 off" in p for p in asked_on)
    assert all("identity=base" in p for p in asked_on)
    run = trained / "run"
    summary = json.loads((run / "mini-run.json").read_text())
    on = summary["settings"]["drafter-j0/k7-j0-on"]
    assert (on["j0"], on["speculator_identity"]) == ("off", "base")
    manifest = json.loads((run / "drafter-j0" / "k7-j0-on" / "result.json").read_text())
    manifest = manifest["manifest"]
    assert (manifest["j0"], manifest["j0_asked"], manifest["j0_source"]) == ("off", "on", "--log")
    assert manifest["overlay_identity"] == "base" and "identity=base" in manifest["j0_differs"]
    report = (run / "drafter-j0" / "report.md").read_text()
    assert "J0 on was asked, but the file that ran says J0 off" in report
    assert "| drafter-j0/k7-j0-on | off (identity=base" in (run / "mini-run.md").read_text()

    monkeypatch.delenv("STANDIN_IDENTITY")
    said: list[str] = []
    again = run_mini_run(options(trained, crosscheck=False), say=said.append)
    assert again.exit_code == OK, again.verdict
    assert any("moved aside to" in line and "run.failed-1" in line for line in said), said
    assert (trained / "run.failed-1" / "mini-run.json").read_text() == json.dumps(
        summary, indent=1
    ) + "\n"
    with pytest.raises(J0Error) as caught:  # a run that passed is never moved or overwritten
        run_mini_run(options(trained, crosscheck=False), say=lambda line: None)
    assert caught.value.exit_code == USAGE and "holds a run that passed" in str(caught.value)


def test_a_folder_without_training_is_refused(tmp_path: Path) -> None:
    with pytest.raises(J0Error, match=r"mini\.json"):
        run_mini_run(options(tmp_path, crosscheck=False), say=lambda line: None)


@pytest.mark.slow  # five stand-in servers, three at a time
def test_settings_served_at_once_each_on_its_own_port_sampled_as_trained(
    trained: Path, article_vllm: Path
) -> None:
    """--servers 3: the five settings run three at a time, each server on a port of its own
    from --port, with a share of the GPU's memory and a fixed KV cache, and every request is
    sampled at the temperature `j0 mini train` chose (mini.json), with --sample-seed. Seen
    failing before: --servers did not exist, and every request was greedy whatever mini.json
    said."""
    manifest = json.loads((trained / "mini.json").read_text())
    manifest["sampling"] = {"temperature": 0.7, "chosen_by": "the test"}
    (trained / "mini.json").write_text(json.dumps(manifest))
    port = free_port()
    chosen = options(
        trained,
        crosscheck=False,
        parts=("baseline", "mask", "j0"),
        servers=3,
        port=port,
        sample_seed=5,
    )
    result = run_mini_run(chosen, say=lambda line: None)
    assert result.exit_code == OK, result.verdict
    run = trained / "run"
    summary = json.loads((run / "mini-run.json").read_text())
    names = {
        "baseline",
        "drafter-mask/k7-j0-off",
        "drafter-mask/k7-j0-on",
        "drafter-j0/k7-j0-off",
        "drafter-j0/k7-j0-on",
    }
    assert set(summary["settings"]) == names
    ports = {summary["settings"][n]["port"] for n in names}
    assert ports <= {port, port + 1, port + 2} and len(ports) > 1
    assert (summary["temperature"], summary["sample_seed"], summary["servers_at_once"]) == (
        0.7,
        5,
        3,
    )
    for name in names:
        args = server_args(run / name)
        assert args["gpu_memory_utilization"] == 0.283
        assert args["kv_cache_memory_bytes"] == 2 * 1024**3
        assert args["port"] == summary["settings"][name]["port"]
        doc = json.loads((run / name / "result.json").read_text())
        assert doc["complete"] is True and len(doc["requests"]) == 4
        assert (doc["manifest"]["options"]["temperature"], doc["manifest"]["options"]["seed"]) == (
            0.7,
            5,
        )
