"""`j0 engine-check --here` from start to verdict without a GPU: the real orchestration (server
processes, /health, requests, /metrics, `j0 dumps check`, `j0 status`, the report) with
`--server-command` putting bin/vllm_serve_standin.py in the place of `vllm serve`: our vLLM
stand-in server on 127.0.0.1 (tests/servers/vllm/server.py), the patch's log lines as the real
engine prints them, and real recorded engine dumps (tests/data/engine-h200/). The identity line
comes from the real `j0 image identity` over a vLLM folder holding the article's speculator.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from j0.cli import main
from servers.base import free_port

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parent / "bin" / "vllm_serve_standin.py"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


@pytest.fixture
def article_vllm(tmp_path: Path, article_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `vllm` folder first on PYTHONPATH with the article's speculator.py and a version file."""
    site = tmp_path / "site"
    target = site / SPECULATOR
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "_version.py").write_text(
        "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT / 'scripts'}")
    return site


def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    (folder / "target").mkdir(parents=True)
    (folder / "draft").mkdir()
    return folder


def engine_check(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    code = main(
        [
            "engine-check",
            "--here",
            "--no-gpu",  # the stand-in in the place of vLLM needs none
            "--models",
            str(models(tmp_path)),
            "--server-command",
            f"{sys.executable} {STANDIN}",
            "--port",
            str(free_port()),
            "--startup-timeout",
            "60",
            "--keep",
            str(tmp_path / "kept"),
            "--json",
            str(out),
            *extra,
        ]
    )
    return code, json.loads(out.read_text())


def test_json_alone_prints_the_report_in_place_of_the_text(
    tmp_path: Path, article_vllm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json alone: the report as one JSON document on stdout, nothing else there."""
    argv = ["engine-check", "--here", "--no-gpu", "--models", str(models(tmp_path))]
    argv += ["--server-command", f"{sys.executable} {STANDIN}", "--port", str(free_port())]
    assert main([*argv, "--startup-timeout", "60", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASS" and report["checks"]


# The report's keys in their order, as the engine check has always written them (both forms).
REPORT_HEAD = ("verdict", "mode", "graphs", "num_speculative_tokens", "max_tokens", "seconds")
REPORT_HEAD += ("healthy_after_s",)


def by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_engine_check_passes_on_the_article_setup(tmp_path: Path, article_vllm: Path) -> None:
    code, report = engine_check(tmp_path)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["verdict"] == "PASS", failed
    assert list(report) == [*REPORT_HEAD, "checks", "status", "kept"]
    names = by_name(report)
    assert set(names) == {
        "identity (j0-on)",
        "identity (j0-off)",
        "patch log lines (j0-on)",
        "patch log lines (j0-off)",
        "greedy outputs J0 on = off",
        "j0 dumps check (j0-on)",
        "j0 dumps check (j0-off)",
        "per-request metrics = /metrics deltas (j0-on)",
        "per-request metrics = /metrics deltas (j0-off)",
        "j0 status (J0 on)",
    }
    assert "pool=(4, 2048)" in names["patch log lines (j0-on)"]["detail"]
    assert report["status"]["j0"] == "on"
    kept = tmp_path / "kept"
    for name in (
        "server-j0-on.log",
        "server-j0-off.log",
        "responses-j0-on.json",
        "engine-check.json",
    ):
        assert (kept / name).is_file(), name
    assert sorted(p.name for p in (kept / "dumps-j0-on").iterdir())[0] == "step0000.pt"


def test_the_unpatched_base_fails_the_identity_check(
    tmp_path: Path, article_vllm: Path, base_bytes: bytes
) -> None:
    (article_vllm / SPECULATOR).write_bytes(base_bytes)
    code, report = engine_check(tmp_path)
    assert code == 1
    assert not by_name(report)["identity (j0-on)"]["ok"]
    assert "identity=base" in by_name(report)["identity (j0-on)"]["detail"]


def test_a_wrong_history_shape_and_tampered_dumps_fail(
    tmp_path: Path, article_vllm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(ROOT / "tests" / "data" / "engine-h200" / "j0-on", tampered)
    import torch

    step = tampered / "step0005.pt"
    data = torch.load(step, weights_only=True)
    data["query_ids"][3] = (int(data["query_ids"][3]) + 1) % 4095
    torch.save(data, step)
    monkeypatch.setenv("STANDIN_DUMPS", str(tampered))
    monkeypatch.setenv("STANDIN_POOL", "(4, 1024)")
    code, report = engine_check(tmp_path)
    names = by_name(report)
    assert code == 1
    assert not names["patch log lines (j0-on)"]["ok"]
    assert not names["j0 dumps check (j0-on)"]["ok"]
    assert names["j0 dumps check (j0-off)"]["ok"]  # J0 off copies its own recorded set


def test_a_server_that_exits_at_start_is_reported_with_its_log(tmp_path: Path) -> None:
    failing = tmp_path / "fail.py"
    failing.write_text(
        "import sys\nprint('CUDA error: no kernel image is available')\nsys.exit(3)\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "j0",
            "engine-check",
            "--here",
            "--no-gpu",  # the stand-in in the place of vLLM needs none
            "--models",
            str(models(tmp_path)),
            "--server-command",
            f"{sys.executable} {failing}",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert "exited before it was healthy" in result.stderr
    assert "no kernel image is available" in result.stderr


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:  # the parser's range (j0.commands.whole_number)
        main(["engine-check", "--here", "--tokens", "0"])
    assert refused.value.code == 64
    assert main(["engine-check", "--here", "--env", "NOEQUALS"]) == 64


# --- --scenario: the serving scenarios, J0 on with the audit -----------------------------------


def rows_by_name(report: dict) -> dict[str, dict]:
    return {r["scenario"]: r for r in report["scenarios"]}


def test_every_scenario_passes_and_names_what_it_forced(
    tmp_path: Path, article_vllm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scenario all` on the stand-in: the J0-on server runs the audited article's file from a
    tree of links (the stand-in writes audit records for its steps), J0 off the article's; one
    row per scenario with the audit's counts, preemptions and outputs on vs off."""
    code, report = engine_check(tmp_path, "--scenario", "all", "--max-tokens", "16")
    said = capsys.readouterr().out
    failed = [c for c in report["checks"] if not c["ok"]]
    assert list(report) == [*REPORT_HEAD, "settings", "checks", "scenarios", "kept"]
    assert all(list(c) == ["name", "ok", "detail", "status"] for c in report["checks"])
    assert code == 0 and report["verdict"] == "PASS", failed
    rows = rows_by_name(report)
    assert list(rows) == ["single", "chunked", "prefix", "concurrency-4", "prefix-4"]
    for row in rows.values():
        assert row["audit"] == "PASS" and row["mismatches"] == 0 and row["rows"] > 0, row
        assert row["draws"] > 0
    assert rows["single"]["outputs_on_vs_off"] == "same" and rows["single"]["status"] == "ok"
    assert rows["prefix"]["outputs_on_vs_off"] == "same" and rows["prefix"]["cached_tokens"] > 0
    assert rows["concurrency-4"]["status"] == "warn"
    assert rows["concurrency-4"]["outputs_on_vs_off"].startswith("WARN not comparable (same)")
    # 80 blocks of 16: four 500 + 16-token requests (33 blocks each) do not fit at once; the
    # count is the stand-in's own (its log), read back through vllm:num_preemptions
    on_log = (tmp_path / "kept" / "server-j0-on.log").read_text()
    counted = [row["preemptions"] for row in rows.values()]
    assert sum(counted) == on_log.count("j0-standin: preempted")
    assert rows["concurrency-4"]["preemptions"] > 0 and rows["single"]["preemptions"] == 0.0
    assert "--num-gpu-blocks-override 80" in rows["concurrency-4"]["forces"]
    assert "--max-num-batched-tokens 256" in rows["chunked"]["forces"]
    assert "--enable-prefix-caching" in rows["prefix-4"]["forces"]
    assert rows["prefix"]["expected"] == "FAIL (known defect)"  # the real article's file
    assert report["settings"]["max_model_len"] == 1024 and report["settings"]["prefix_caching"]
    names = by_name(report)
    assert "identity=audit" in names["identity (j0-on)"]["detail"]
    assert "identity=article" in names["identity (j0-off)"]["detail"]
    assert "pool=(4, 1024)" in names["patch log lines (j0-on)"]["detail"]
    assert "  WARN scenario concurrency-4: audit PASS" in said
    assert "--max-num-batched-tokens 256 --num-gpu-blocks-override 80" in said
    # The installed file is untouched; the audited one is in the kept tree.
    kept = tmp_path / "kept"
    assert (article_vllm / SPECULATOR).read_bytes() != (
        kept / "audit-site" / SPECULATOR
    ).read_bytes()
    assert (kept / "audit-site" / "vllm" / "_version.py").is_symlink()
    assert list((kept / "audit").glob("audit-*.jsonl"))


def test_a_scenario_whose_audit_mismatches_fails_alone(
    tmp_path: Path, article_vllm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STANDIN_AUDIT_FAULT=700: the chunked scenario's steps record foreign history rows and
    draws; only its row fails, with the counts, and the command exits 1."""
    monkeypatch.setenv("STANDIN_AUDIT_FAULT", "700")
    code, report = engine_check(
        tmp_path, "--scenario", "single", "--scenario", "chunked", "--max-tokens", "16"
    )
    assert code == 1 and report["verdict"] == "FAIL"
    rows = rows_by_name(report)
    assert rows["single"]["status"] == "ok" and rows["single"]["audit"] == "PASS"
    chunked = rows["chunked"]
    assert chunked["status"] == "fail" and chunked["audit"] == "FAIL"
    assert chunked["mismatches"] == 2 * chunked["rows"] > 0
    assert chunked["first_mismatches"][0]["what"] == "history"
    assert not by_name(report)["scenario chunked"]["ok"]
    assert report["settings"]["num_gpu_blocks_override"] is None  # no concurrency-4 asked


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--here", "--max-num-batched-tokens", "256"), "expected with --scenario only"),
        (("--here", "--no-prefix-caching"), "expected with --scenario only"),
        (
            ("--here", "--scenario", "chunked", "--max-num-batched-tokens", "700"),
            "prompt is 700 tokens; expected fewer",
        ),
        (
            ("--here", "--scenario", "chunked", "--max-num-batched-tokens", "0"),
            "--max-num-batched-tokens: '0': expected a whole number from 1",
        ),
        (("--here", "--scenario", "prefix", "--no-prefix-caching"), "no prefix hit to force"),
        (("--scenario", "single"), "--scenario: expected with --here"),
    ],
)
def test_scenario_settings_that_force_nothing_are_usage_errors(
    args: tuple[str, ...], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything starts (no server, no models: none are given here); a value out
    of its option's range is refused by the parser itself (SystemExit 64, as `j0` exits)."""
    try:
        code = main(["engine-check", *args])
    except SystemExit as stop:
        code = stop.code
    assert code == 64
    assert said in capsys.readouterr().err


def test_scenarios_on_an_installed_base_file_stop_before_anything_starts(
    tmp_path: Path, article_vllm: Path, base_bytes: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit patch goes on the article's file only: vLLM's base installed is exit 1, the
    file and its identity named, no server started (no log written)."""
    (article_vllm / SPECULATOR).write_bytes(base_bytes)
    code = main(
        ["engine-check", "--here", "--no-gpu", "--models", str(models(tmp_path)),
         "--server-command", f"{sys.executable} {STANDIN}", "--port", str(free_port()),
         "--keep", str(tmp_path / "kept"), "--scenario", "single"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "--scenario serves the audited article's file" in err and "identity=base" in err
    assert str(article_vllm / SPECULATOR) in err
    assert not list((tmp_path / "kept").glob("server-*.log"))


def test_a_server_without_speculative_decoding_is_not_asked_for_its_metrics(tmp_path: Path) -> None:
    """vLLM 0.33 refuses `--per-request-spec-decode-metrics` without `--speculative-config`
    ("requires speculative decoding to be enabled", a pydantic error before the server is up):
    seen on the H200, where `j0 mini run`'s baseline never started
    (run/baseline/server.log in docs/results/mini-h200/run.tar.xz at commit b604bf9; the run
    after the fix has its baseline). Seen failing before: the
    flag was in every server's arguments."""
    from j0.article.spec_config import SpecConfig
    from j0.engine.server.launcher import ServerStart

    def args(method: str | None) -> list[str]:
        spec = None if method is None else SpecConfig(method, 7, None if method == "ngram" else "d")  # type: ignore[arg-type]
        setting = ServerStart(
            target=tmp_path / "t",
            draft=tmp_path / "d",
            spec=spec,
            graphs=False,
            j0=False,
            dumps=tmp_path / "dumps",
            dump_steps=0,
            port=8000,
        )
        return setting.server("t", "d", "").args()

    assert "--per-request-spec-decode-metrics" not in args(None)
    assert "--speculative-config" not in args(None)
    for method in ("dflash", "ngram"):
        spec = args(method)
        assert spec[spec.index("--per-request-spec-decode-metrics") + 1] == "detailed"


def test_a_server_start_is_the_launchers_command_line_on_each_route(tmp_path: Path) -> None:
    """engine-check's server (the article's config, eager, a scenario's flags): its command line
    and switches as the launcher wrote them before ServerSetting (typed from that form), with
    the paths of the route it runs on; the drafter in the config is the route's too."""
    from j0.article.spec_config import SpecConfig
    from j0.engine.server.launcher import ServerStart

    start = ServerStart(
        target=tmp_path / "t",
        draft=tmp_path / "d",
        spec=SpecConfig.article(str(tmp_path / "d"), 15),
        graphs=False,
        j0=True,
        dumps=tmp_path / "dumps",
        dump_steps=3,
        port=8123,
        extra_env={"VLLM_DFLASH_AUDIT": "/a"},
        max_num_batched_tokens=256,
        prefix_caching=True,
    )
    server = start.server("/w/t", "/w/d", "/w/dumps")
    spec = '{"method":"dflash","model":"/w/d","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
    assert server.args() == [
        "/w/t", "--speculative-config", spec, "--max-num-seqs", "4", "--max-model-len", "2048",
        "--gpu-memory-utilization", "0.3", "--per-request-spec-decode-metrics", "detailed",
        "--enable-prompt-tokens-details", "--host", "127.0.0.1", "--port", "8123",
        "--enable-prefix-caching", "--max-num-batched-tokens", "256", "--enforce-eager",
    ]  # fmt: skip
    assert server.env() == {
        "VLLM_DFLASH_CTX_NOISE": "1",
        "VLLM_DFLASH_DUMP": "/w/dumps",
        "VLLM_DFLASH_DUMP_STEPS": "3",
        "VLLM_DFLASH_AUDIT": "/a",
    }
    here = start.here()
    assert here.args()[0] == str(tmp_path / "t") and here.spec == start.spec
    assert here.env()["VLLM_DFLASH_DUMP"] == str(tmp_path / "dumps")
