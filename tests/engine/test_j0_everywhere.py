"""One J0 rule, every command: the same server logs (the committed ones: the real engine's on the
patched-file route, J0 on, off, the prefix-safe variant, a log without an identity line and one
of the audit instrument; the plugin route's, J0 on, off, and a start-up whose plugin line and J0
file disagree) fed to each command that labels J0, each through its own reading path, give the
same answer: `j0 status --log` (its verdict line), `j0 bench run --log` and `--status-json` (the
result's manifest), `j0 bench report` (the setting's label), `j0 bench matrix` (matrix.json's
entry, written and read back), `j0 mini run` (setting.json) and `j0 dumps check --log`.

Before the one rule, `j0 status` said "J0 on" from the patch line alone where the others said
"J0 unknown": the real engine's log without an identity line, the audit instrument's, and the
plugin route's contradicting one. The expected answers are written here by hand, from each
log's identity and DFLASH_CTX_NOISE lines."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.bench.matrix.layout import PointEntry, PointRun, judge_ran
from j0.bench.report.results_folder import find_settings
from j0.cli import main
from j0.compose.server import MatrixPoint
from j0.dumps.check.own_prefix import log_read
from j0.engine.server.j0_state import J0State
from j0.engine.server.server_log import parse
from j0.mini.run.setting import PointOutcome, PointPlan, ran_as_asked
from j0.mini.run.setting_record import PointRecord
from j0.serve import launch
from servers.vllm.server import VllmStandIn
from status.status_logs import ARTICLE_SHA, article_log

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
DATA = ROOT / "tests" / "data"

LOGS = {
    "article-on": (RESULTS / "engine-check-h200" / "graphs15-server-j0-on.log", "on"),
    "article-off": (RESULTS / "engine-scenarios-h200" / "j0off-nocache" / "server.log", "off"),
    "prefix-safe-on": (RESULTS / "prefix-safe-h200" / "prefix-safe" / "server.log", "on"),
    "no-identity": (DATA / "engine-h200-graphs-k15" / "server-j0-on.log", "unknown"),
    "audit": (RESULTS / "engine-scenarios-h200" / "article-cache" / "server.log", "unknown"),
    "plugin-on": (DATA / "plugin-0.34.0" / "server-j0-on.log", "on"),
    "plugin-off": (DATA / "plugin-0.34.0" / "server-j0-off.log", "off"),
    "plugin-contradicts": (DATA / "plugin-0.34.0" / "server-j0-contradicts.log", "unknown"),
}
MODES = {"J0 on": "on", "J0 off (the baseline)": "off", "J0 unknown": "unknown"}


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def run(*argv: str) -> tuple[int, str]:
    """`j0 ARGV` in this process: its exit code and what it printed (stdout, then stderr)."""
    printed, said = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
        code = main(list(argv))
    return code, printed.getvalue() + said.getvalue()


def status_says(url: str, log: Path) -> str:
    """`j0 status --log`'s verdict line: "J0 on", "J0 off (the baseline)" or "J0 unknown"."""
    _, text = run("status", "--url", url, "--log", str(log), "--no-probe")
    verdict = text.splitlines()[-1]  # the verdict: the last line
    found = re.search(r"J0 on|J0 off \(the baseline\)|J0 unknown", verdict)
    assert found, verdict
    return MODES[found[0]]


def bench_says(url: str, out: Path, *given: str) -> str:
    code, said = run(
        "bench", "run", "--url", url, "--out", str(out), "--requests", "1", "--max-tokens", "4",
        "--no-progress", *given,
    )  # fmt: skip
    assert code == 0, said
    return str(json.loads(out.read_text())["manifest"]["j0"])


def matrix_says(text: str) -> str:
    """matrix.json's entry for a J0-on setting whose server wrote `text`, written and read back."""
    entry = PointRun(MatrixPoint(15, True))
    entry.entry.status = "ok"
    judge_ran(entry, [text])
    written = json.loads(json.dumps(entry.to_json()))
    read = PointEntry.from_json(written, "matrix.json: settings[0]")
    assert read.state is not None and read.state.ran == written["j0_ran"]
    return str(written["j0_ran"])


def mini_says(folder: Path, text: str) -> str:
    """setting.json's J0 for a J0-on setting of `j0 mini run` whose server wrote `text`."""
    folder.mkdir(parents=True)
    (folder / "server.log").write_text(text)
    plan = PointPlan(drafter="j0", tokens=15, j0=True, max_model_len=2048, folder=folder)
    outcome = PointOutcome(summary={"kind": "dflash"})
    ran_as_asked(plan, outcome)
    record = PointRecord.checked(json.loads(json.dumps(outcome.summary)), "setting.json")
    assert record.state().ran == record.j0
    return str(record.j0)


@pytest.mark.parametrize("name", list(LOGS))
def test_every_command_reads_the_same_j0_from_the_same_log(
    name: str, host: Host, tmp_path: Path
) -> None:
    log, expected = LOGS[name]
    text = log.read_text(errors="replace")
    # the stand-in drafts as many tokens as the log's server did (`bench run --status-json`
    # refuses a status file of another server)
    tokens = (parse(text, "log").speculative_config or {})["num_speculative_tokens"]
    with VllmStandIn(num_spec_tokens=tokens, seed=1) as server:
        said = everyone(server, log, text, tmp_path)
    assert said == dict.fromkeys(said, expected)


def everyone(server: VllmStandIn, log: Path, text: str, tmp_path: Path) -> dict[str, str]:
    """What each command says of J0 for `log` (`text`)."""
    status_file = tmp_path / "status.json"
    _, printed = run("status", "--url", server.url, "--log", str(log), "--no-probe", "--json")
    status_file.write_text(printed)  # --json: stderr holds nothing
    (tmp_path / "report" / "setting").mkdir(parents=True)
    said = {
        "j0 status": status_says(server.url, log),
        "j0 status --json": J0State.from_json(json.loads(printed), "status").ran,
        "j0 bench run --log": bench_says(
            server.url, tmp_path / "report" / "setting" / "result.json", "--log", str(log)
        ),
        "j0 bench run --status-json": bench_says(
            server.url, tmp_path / "by-status.json", "--status-json", str(status_file)
        ),
        "j0 bench matrix": matrix_says(text),
        "j0 mini run": mini_says(tmp_path / "mini" / "k15-j0-on", text),
        "j0 dumps check --log": log_read(log).state.ran,
    }
    said["j0 bench report"] = find_settings(tmp_path / "report")[0].j0
    return said


DRAFTER_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669},
}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("article", "on"), ("prefix-safe", "on"), ("base", "off"), ("other", "unknown")],
)
def test_j0_serve_says_what_the_log_of_its_server_will(
    kind: str, expected: str, tmp_path: Path
) -> None:
    """`j0 serve` with VLLM_DFLASH_CTX_NOISE=1 and the speculator.py vLLM will import of each
    identity: its J0 (plan.j0, the line it logs) is what every command reads from the log that
    server writes (its identity line, the patch's DFLASH_CTX_NOISE=1 line where the file has the
    patch)."""
    (tmp_path / "config.json").write_text(json.dumps(DRAFTER_CONFIG))
    spec = json.dumps({"method": "dflash", "model": str(tmp_path), "num_speculative_tokens": 15})
    args = ["Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4"]
    plan = launch.plan_serve(args, {"VLLM_DFLASH_CTX_NOISE": "1"})
    assert plan.j0 is not None and (plan.j0.asked, plan.j0.ran) == ("on", "unknown")
    path = tmp_path / "speculator.py"
    launch.confirm_j0(plan, path, kind)
    assert (plan.j0.asked, plan.j0.ran, plan.j0.identity) == ("on", expected, kind)
    line = next(f for f in plan.facts if f.startswith("VLLM_DFLASH_CTX_NOISE=1"))
    assert str(path) in line and ("J0 is absent" in line) == (expected == "off")
    lines = article_log(sha=ARTICLE_SHA, kind=kind).splitlines()
    if kind == "base":  # vLLM's unpatched file writes no DFLASH_CTX_NOISE line
        lines = [x for x in lines if "DFLASH_CTX_NOISE=" not in x or "j0 serve" in x]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines))
    with VllmStandIn(num_spec_tokens=15, seed=1) as server:
        said = everyone(server, log, log.read_text(), tmp_path)
    assert said == dict.fromkeys(said, expected)
