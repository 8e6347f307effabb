"""A setting is labelled "J0 on" from the file that ran, never from what was asked
(j0.engine.server.j0_state): the server log's identity line must name a J0 file and the patch
must have logged DFLASH_CTX_NOISE=1. Shown where j0 labels settings: `j0 bench run --log` (against
our vLLM stand-in, tests/servers/vllm/server.py, its log saying identity=base while `--j0 on` was
asked), what `j0 bench report` reads of such results, and `j0 bench matrix`'s record of each
setting (judge_ran, for compose's one server and k8s's shards)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.bench.matrix.layout import PointRun, judge_ran
from j0.bench.report.results_folder import find_settings
from j0.cli import main
from j0.compose.server import MatrixPoint
from j0.engine.server import server_log
from j0.engine.server.j0_state import j0_ran
from servers.vllm.server import VllmStandIn
from status.status_logs import BASE_SHA, article_log

BASE_LOG = article_log(sha=BASE_SHA, kind="base (the unpatched vLLM base)")


@pytest.mark.parametrize(
    ("log", "label"),
    [
        (article_log(), "on"),
        (article_log(noise=0, pool="(1, 1)"), "off"),
        (article_log(kind="prefix-safe (the article's J0 file with the prefix-safe patch)"), "on"),
        (BASE_LOG, "off"),  # the patch line alone does not make J0: the base file has none
        (article_log(sha="1" * 64, kind="other (other)"), "unknown"),
        ("\n".join(x for x in article_log().splitlines() if "j0-entrypoint" not in x), "unknown"),
        ("\n".join(x for x in article_log().splitlines() if "DFLASH_CTX" not in x), "unknown"),
    ],
    ids=["article-on", "article-off", "prefix-safe-on", "base", "other", "no-identity", "no-patch"],
)
def test_the_label_is_the_file_that_ran(log: str, label: str) -> None:
    ran = j0_ran(server_log.parse(log, "server.log"))
    assert ran.ran == label
    assert (ran.asking(True).differs() is None) == (label == "on")
    # J0 not applicable (no speculative decoding, vLLM's n-gram speculator): never a mismatch
    assert ran.asking(None).differs() is None


def bench(url: str, out: Path, *extra: str) -> int:
    argv = ["bench", "run", "--url", url, "--out", str(out), "--requests", "2"]
    return main([*argv, "--max-tokens", "16", "--no-progress", *extra])


def test_bench_run_labels_from_the_log_not_from_j0_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(BASE_LOG)
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=15, seed=1) as server:
        assert bench(server.url, out, "--j0", "on", "--log", str(log)) == 0
    manifest = json.loads(out.read_text())["manifest"]
    assert (manifest["j0"], manifest["j0_asked"], manifest["j0_source"]) == ("off", "on", "--log")
    assert manifest["overlay_identity"] == "base" and manifest["server_log"] == str(log)
    assert manifest["j0_differs"].startswith("J0 on was asked, but the server's log says J0 off")
    said = capsys.readouterr()
    assert "identity=base" in said.out + said.err and "recorded as J0 off" in said.out + said.err


def test_bench_run_with_the_article_file_is_j0_on(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=15, seed=1) as server:
        assert bench(server.url, out, "--j0", "on", "--log", str(log)) == 0
    manifest = json.loads(out.read_text())["manifest"]
    assert (manifest["j0"], manifest["j0_source"], manifest["j0_differs"]) == ("on", "--log", None)
    assert manifest["j0_from"] == "identity=article, DFLASH_CTX_NOISE=1"


def test_a_status_file_without_an_identity_does_not_make_j0_on(tmp_path: Path) -> None:
    """`j0 status` reports J0 on from the patch line; without the identity line nothing says
    which file drew: unknown, over the --j0 asked."""
    status = tmp_path / "status.json"
    out = tmp_path / "r.json"
    with VllmStandIn(seed=1) as server:
        status.write_text(json.dumps({"url": server.url, "model": server.model, "j0": "on"}))
        assert bench(server.url, out, "--j0", "on", "--status-json", str(status)) == 0
    manifest = json.loads(out.read_text())["manifest"]
    assert (manifest["j0"], manifest["j0_source"]) == ("unknown", "--status-json")


def test_the_report_labels_a_setting_as_it_ran(tmp_path: Path) -> None:
    """k5-j0-on was asked J0 on (its name, --j0 on), its log says the base file ran."""
    logs = {"k5-j0-off": article_log(noise=0, pool="(1, 1)"), "k5-j0-on": BASE_LOG}
    with VllmStandIn(num_spec_tokens=5, seed=1) as server:
        for name, text in logs.items():
            (tmp_path / name).mkdir()
            (tmp_path / name / "server.log").write_text(text)
            asked = name.removeprefix("k5-j0-")
            log = str(tmp_path / name / "server.log")
            out = tmp_path / name / "result.json"
            assert bench(server.url, out, "--j0", asked, "--log", log) == 0
    settings = {s.name: s for s in find_settings(tmp_path)}  # what `j0 bench report` reads
    assert (settings["k5-j0-off"].j0, settings["k5-j0-on"].j0) == ("off", "off")
    assert "J0 on was asked, but the file that ran says J0 off" in settings["k5-j0-on"].notes[0]
    # matrix.json's asked J0 on does not win over the log either
    record = {"settings": [{"name": "k5-j0-on", "num_speculative_tokens": 5, "j0": True}]}
    (tmp_path / "matrix.json").write_text(json.dumps(record))
    assert {s.name: s.j0 for s in find_settings(tmp_path)}["k5-j0-on"] == "off"


def test_the_matrix_fails_a_setting_that_did_not_run_j0_as_asked() -> None:
    on = PointRun(MatrixPoint(7, True))
    on.entry.status = "ok"
    judge_ran(on, [BASE_LOG])
    assert on.entry.status == "failed" and "k7-j0-on: J0 on was asked" in str(on.entry.error)
    record = on.to_json()
    assert (record["j0"], record["j0_ran"], record["speculator_identity"]) == (True, "off", "base")

    fine = PointRun(MatrixPoint(7, True))
    fine.entry.status = "ok"
    judge_ran(fine, [article_log(), article_log()])  # k8s: one log per shard
    assert fine.entry.status == "ok" and fine.to_json()["j0_ran"] == "on"

    shards = PointRun(MatrixPoint(7, True))
    shards.entry.status = "ok"
    judge_ran(shards, [article_log(), BASE_LOG])  # one shard's server ran the base file
    assert shards.entry.status == "failed" and shards.to_json()["j0_ran"] == "unknown"

    baseline = PointRun(MatrixPoint(0, False))
    baseline.entry.status = "ok"
    judge_ran(baseline, [BASE_LOG])  # no speculative decoding: nothing to judge
    assert baseline.entry.status == "ok" and baseline.ran is None


def j0_line(text: str) -> str:
    """The line of `j0 bench run`'s summary that says J0's state."""
    return next(line for line in text.splitlines() if line.startswith("J0:"))


def test_bench_run_says_whether_j0_is_as_asked_or_as_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--j0 on` alone is what was asked, not what ran: the summary says "as asked" and "not
    verified"; with the server's log (the article's file, or the base file while J0 on was
    asked) it says "as run", the state the log shows and the file it read."""
    on_log, base_log = tmp_path / "article.log", tmp_path / "base.log"
    on_log.write_text(article_log())
    base_log.write_text(BASE_LOG)
    said: dict[str, str] = {}
    with VllmStandIn(num_spec_tokens=5, seed=1) as server:
        for name, extra in {
            "asked": ("--j0", "on"),
            "run": ("--j0", "on", "--log", str(on_log)),
            "differs": ("--j0", "on", "--log", str(base_log)),
            "nothing": (),
        }.items():
            assert bench(server.url, tmp_path / f"{name}.json", *extra) == 0
            out = capsys.readouterr()
            said[name] = j0_line(out.out + out.err)
    assert "on, as asked (--j0 on)" in said["asked"] and "not verified" in said["asked"]
    assert "as run" not in said["asked"]
    assert said["run"].split(":", 1)[1].strip().startswith("on, as run"), said["run"]
    assert str(on_log) in said["run"] and "not verified" not in said["run"]
    assert said["differs"].split(":", 1)[1].strip().startswith("off, as run"), said["differs"]
    assert "on as asked" in said["differs"]
    assert "unknown" in said["nothing"] and "not verified" in said["nothing"]


def test_the_report_says_as_run_or_as_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`j0 bench report` of a J0-off setting measured with its server's log and a J0-on setting
    measured with `--j0 on` alone: the table's J0 says "off (as run)" for the first and "on (as
    asked, not verified)" for the second; report.json has it as j0_as."""
    with VllmStandIn(num_spec_tokens=5, seed=1) as server:
        (tmp_path / "k5-j0-off").mkdir()
        log = tmp_path / "k5-j0-off" / "server.log"
        log.write_text(article_log(noise=0, pool="(1, 1)"))
        off = tmp_path / "k5-j0-off" / "result.json"
        assert bench(server.url, off, "--j0", "off", "--log", str(log)) == 0
        (tmp_path / "k5-j0-on").mkdir()
        assert bench(server.url, tmp_path / "k5-j0-on" / "result.json", "--j0", "on") == 0
    capsys.readouterr()
    assert main(["bench", "report", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    rows: dict[str, str] = {}
    for line in text.splitlines():  # the first table: the settings
        if line.startswith("| k5-j0-"):
            rows.setdefault(line.split("|")[1].strip(), line.split("|")[3].strip())
    assert rows["k5-j0-off"] == "off (as run)", rows
    assert rows["k5-j0-on"] == "on (as asked, not verified)", rows
    summary = json.loads((tmp_path / "report.json").read_text())["settings"]
    assert (summary["k5-j0-off"]["j0_as"], summary["k5-j0-on"]["j0_as"]) == ("run", "asked")
