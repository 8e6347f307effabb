"""The serving scenarios' sender (j0.engine_check.scenarios.sender), the results table over
several runs (j0.engine_check.scenarios.table) and scripts/engine-scenarios-h200.sh's checks, on
the CPU.

The sender runs against our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py:
completions with `return_token_ids`, prefix caching by 16-token blocks, /metrics as
prometheus_client writes vLLM's, `vllm:num_preemptions` included); no GPU server can be reached
here. The table is built from runs written by the test in the sender's format, with audit
records in the audited speculator.py's format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.engine_check.scenarios import sender, table
from servers.vllm.server import VllmStandIn

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "engine-scenarios-h200.sh"
RECORDED_METRICS = ROOT / "tests" / "data" / "engine-h200-graphs-k15" / "metrics-j0-off.txt"


def test_the_sender_runs_every_scenario_and_records_it(tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "audit-7.jsonl").write_text('{"record": "start"}\n')
    out = tmp_path / "run"
    with VllmStandIn(model="target", num_spec_tokens=7, seed=3, max_model_len=4096) as vllm:
        args = ["--url", vllm.url, "--model", "target", "--out", str(out), "--label", "x"]
        args += ["--file", "article", "--caching", "on", "--j0", "on", "--mode", "eager"]
        assert sender.main([*args, "--audit", str(audit), "--max-tokens", "8"]) == 0
        records = list(vllm.records)
    run = json.loads((out / "scenarios.json").read_text())
    assert [s["name"] for s in run["scenarios"]] == [s.name for s in sender.SCENARIOS]
    by_name = {s["name"]: s for s in run["scenarios"]}
    assert [len(s["requests"]) for s in run["scenarios"]] == [3, 1, 4, 4, 4]
    assert len(records) == 16 and all(r.max_tokens == 8 for r in records)
    assert by_name["concurrency-4"]["single_stream"] is False and by_name["prefix"]["single_stream"]
    # One at a time: A again is a prefix-cache hit, B is not.
    cached = [r["cached_tokens"] for r in by_name["prefix"]["requests"]]
    assert cached[0] == 0 and cached[2] == 0 and cached[1] == cached[3] > 0
    assert by_name["chunked"]["requests"][0]["prompt_tokens"] == 700
    assert all(r["output_token_ids"] for s in run["scenarios"] for r in s["requests"])
    # The stand-in never preempts: the counter is read, and did not move.
    assert {s["preemptions"] for s in run["scenarios"]} == {0.0}
    assert by_name["single"]["audit_lines"] == {"audit-7.jsonl": [1, 1]}


def test_preemptions_are_read_from_metrics() -> None:
    # vLLM's own /metrics text, recorded on the H200: the counter is there, at 0.
    assert sender.preemptions_in(RECORDED_METRICS.read_text()) == 0.0
    assert sender.preemptions_in("# TYPE other_total counter\nother_total 3.0\n") is None
    with VllmStandIn(model="target", num_spec_tokens=7) as vllm:
        vllm.engine.counters[0].preemptions = 3
        vllm.engine.counters[1].preemptions = 2
        assert sender.preemptions(vllm.url) == 5.0


# --- The table, from runs written here ---------------------------------------------------------


def _step(step: int, slots: list[int], bad: bool = False) -> str:
    n = len(slots)
    first = (
        [
            {
                "what": "draw",
                "request": 0,
                "slot": slots[0],
                "k": 1,
                "index": 2,
                "drawn": 5,
                "own": 6,
                "rows_holding_drawn": [1],
            }
        ]
        if bad
        else []
    )
    return json.dumps({
        "record": "step", "step": step, "requests": n, "req_ids": [f"r{s}" for s in slots],
        "slots": slots, "rows_checked": n, "positions_checked": 30 * n, "draws_checked": 7 * n,
        "row_mismatches": int(bad), "mismatched_positions": int(bad), "draw_mismatches": int(bad),
        "first": first,
    }) + "\n"  # fmt: skip


def _run(results: Path, label: str, file: str, caching: str, j0: str, mode: str,
         outputs: dict[str, list], bad_in: str | None = None) -> None:  # fmt: skip
    """One server run's folder: scenarios.json and, with J0 on, audit records per scenario."""
    folder = results / label
    folder.mkdir(parents=True)
    lines = ['{"record": "start", "ctx_noise": true}\n'] if j0 == "on" else []
    entries = []
    for s in sender.SCENARIOS:
        first = len(lines)
        if j0 == "on":
            slots = [0, 1, 2, 3] if s.concurrent else [3]
            lines += [_step(i, slots, bad=s.name == bad_in) for i in range(2)]
        requests = [
            {"name": f"{i}:{n}", "prompt_tokens": 10, "cached_tokens": 16 * (n == "A"),
             "output_token_ids": out}
            for i, (n, out) in enumerate(zip(s.prompts, outputs[s.name], strict=True))
        ]  # fmt: skip
        entries.append({
            "name": s.name, "forces": s.forces, "single_stream": s.single_stream,
            "requests": requests, "preemptions": 2.0 if s.name == "concurrency-4" else 0.0,
            "audit_lines": {"audit-1.jsonl": [first, len(lines)]} if j0 == "on" else {},
        })  # fmt: skip
    if j0 == "on":
        (folder / "audit").mkdir()
        (folder / "audit" / "audit-1.jsonl").write_text("".join(lines))
    run = {"label": label, "file": file, "caching": caching, "j0": j0, "mode": mode,
           "scenarios": entries}  # fmt: skip
    (folder / "scenarios.json").write_text(json.dumps(run))


def _outputs(change: str | None = None) -> dict[str, list]:
    made = {s.name: [[7, 8, 9] for _ in s.prompts] for s in sender.SCENARIOS}
    if change:
        made[change][0] = [7, 8, 10]
    return made


def test_the_table_gives_each_scenario_its_verdict(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _run(results, "article-nocache", "article", "off", "on", "eager", _outputs())
    _run(results, "article-cache", "article", "on", "on", "eager", _outputs("concurrency-4"),
         bad_in="prefix")  # fmt: skip
    _run(results, "prefix-safe-cache", "prefix-safe", "on", "on", "eager", _outputs("single"))
    _run(results, "j0off-nocache", "any", "off", "off", "eager", _outputs())
    _run(results, "j0off-cache", "any", "on", "off", "eager", _outputs())
    _run(results, "article-graphs", "article", "off", "on", "graphs", _outputs())
    assert table.main([str(results)]) == 0
    rows = json.loads((results / "table.json").read_text())
    cell = {(r["run"], r["scenario"]): r for r in rows}
    ok = cell[("article-nocache", "single")]
    assert ok["audit"]["verdict"] == "PASS" and ok["expected"] == "PASS"
    assert (ok["audit"]["rows"], ok["audit"]["draws"], ok["audit"]["mismatches"]) == (2, 14, 0)
    assert ok["outputs_vs_j0_off"] == "same"
    batched = cell[("article-nocache", "concurrency-4")]
    assert batched["audit"]["rows"] == 8 and batched["preemptions"] == 2.0
    assert batched["outputs_vs_j0_off"].startswith("WARN not comparable (same): concurrent")
    # Only the prefix scenario's own lines fail: its neighbours' records are clean.
    bad = cell[("article-cache", "prefix")]
    assert bad["audit"]["verdict"] == "FAIL" and bad["audit"]["mismatches"] == 4
    assert bad["expected"] == "FAIL (known defect)"
    assert cell[("article-cache", "chunked")]["audit"]["verdict"] == "PASS"
    assert cell[("article-cache", "chunked")]["expected"] == "PASS"
    assert cell[("article-cache", "concurrency-4")]["expected"].startswith("PASS, or the known")
    assert cell[("prefix-safe-cache", "concurrency-4")]["expected"] == "PASS"
    assert cell[("article-cache", "concurrency-4")]["outputs_vs_j0_off"].startswith(
        "WARN not comparable (differ)"
    )
    assert cell[("prefix-safe-cache", "single")]["outputs_vs_j0_off"] == "DIFFER"
    assert cell[("prefix-safe-cache", "prefix")]["expected"] == "PASS"
    graphs = cell[("article-graphs", "single")]["outputs_vs_j0_off"]
    assert graphs == "WARN not comparable: no J0-off run with caching off, graphs"
    off = cell[("j0off-cache", "prefix")]
    assert "audit" not in off and off["outputs_vs_j0_off"] == "-" and off["cached_tokens"] == 48
    markdown = (results / "table.md").read_text()
    assert (
        "| article-cache | article | on | on | eager | prefix | FAIL | FAIL (known defect) |"
        in markdown
    )
    assert "- `concurrency-4`: 4 streams at once" in markdown


def test_the_table_refuses_what_is_not_a_run(tmp_path: Path, capsys) -> None:
    assert table.main([str(tmp_path)]) == 2
    assert "no */scenarios.json" in capsys.readouterr().err
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "scenarios.json").write_text("{")
    assert table.main([str(tmp_path)]) == 2
    assert "x/scenarios.json: not JSON" in capsys.readouterr().err
    assert table.main([]) == 64


# --- The GPU script, as far as it goes without a GPU -------------------------------------------


def _script(*args: str, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SITE": str(site) if site else "/nonexistent-site"}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture
def fake_site(tmp_path: Path) -> Path:
    speculator = tmp_path / "site" / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
    speculator.parent.mkdir(parents=True)
    speculator.write_text("# a stand-in\n")
    return tmp_path / "site"


def test_the_script_plans_seven_servers_and_starts_none(tmp_path: Path, fake_site: Path) -> None:
    proc = _script(str(tmp_path / "r"), "--dry-run", site=fake_site)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 8 and lines[-1].startswith("dry run: 7 servers, 7 at once")
    plan = {line.split(":")[0]: line for line in lines[:-1]}
    assert "--enable-prefix-caching" in plan["prefix-safe-cache"]
    assert "--no-enable-prefix-caching" in plan["article-nocache"]
    assert "J0=off" in plan["j0off-cache"] and "audited=no" in plan["j0off-cache"]
    assert "--enforce-eager" not in plan["article-graphs"]
    # the graphs run's J0-off twin (issue 54, item 7): CUDA graphs too, J0 off, not audited
    twin = plan["j0off-graphs"]
    assert "--enforce-eager" not in twin and "J0=off" in twin and "audited=no" in twin
    assert "--no-enable-prefix-caching" in twin
    assert sum("--enforce-eager" in line for line in plan.values()) == 5
    assert all("--max-num-seqs 4" in line and "--num-gpu-blocks-override 80" in line
               for line in plan.values())  # fmt: skip
    # The speculative config as the article passed it (written here, not by j0's code).
    spec = '{"method":"dflash","model":"DRAFT","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'
    assert all(f"--speculative-config {spec} " in line for line in plan.values())
    assert not (tmp_path / "r").exists()


def test_the_roomy_variant_holds_four_requests(tmp_path: Path, fake_site: Path) -> None:
    """ROOMY=1 (issue 54, item 7): a seventh server whose KV cache holds four requests of 500
    prompt and 500 output tokens (4 x 1008 tokens <= 320 blocks of 16), sent the concurrency-4
    scenario alone; all eight start at once; the seven others as before."""
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "r"), "--dry-run"],
        capture_output=True,
        text=True,
        env={**os.environ, "SITE": str(fake_site), "ROOMY": "1"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 9 and lines[-1].startswith("dry run: 8 servers, 8 at once")
    plan = {line.split(":")[0]: line for line in lines[:-1]}
    roomy = plan["article-roomy"]
    assert "--num-gpu-blocks-override 320" in roomy and 4 * (500 + 500 + 8) <= 320 * 16
    assert roomy.endswith("scenarios: --only concurrency-4 --max-tokens 500")
    assert "J0=on" in roomy and "audited=yes" in roomy and "--no-enable-prefix-caching" in roomy
    others = [line for name, line in plan.items() if name != "article-roomy"]
    assert all("--num-gpu-blocks-override 80" in line for line in others)
    assert not any("scenarios:" in line for line in others)


@pytest.mark.parametrize(
    ("args", "code", "why"),
    [
        ((), 64, "usage"),
        (("R", "--wet"), 64, "usage"),
        (("R", "--dry-run", "extra"), 64, "usage"),
    ],
)
def test_the_script_refuses_bad_arguments(args: tuple[str, ...], code: int, why: str) -> None:
    proc = _script(*args)
    assert proc.returncode == code and why in proc.stderr


def test_the_script_never_writes_into_a_full_folder(tmp_path: Path, fake_site: Path) -> None:
    (tmp_path / "old.md").write_text("kept\n")
    proc = _script(str(tmp_path), "--dry-run", site=fake_site)
    assert proc.returncode == 2 and "is not empty" in proc.stderr
    assert (tmp_path / "old.md").read_text() == "kept\n"
    proc = _script(str(tmp_path / "old.md"), site=fake_site)
    assert proc.returncode == 2 and "is a file" in proc.stderr


def test_the_script_checks_its_settings(tmp_path: Path, fake_site: Path) -> None:
    env_proc = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "r"), "--dry-run"],
        capture_output=True,
        text=True,
        env={**os.environ, "SITE": str(fake_site), "BLOCKS": "0x10"},
        check=False,
    )
    assert env_proc.returncode == 64 and "'0x10'" in env_proc.stderr
    proc = _script(str(tmp_path / "r"), "--dry-run")
    assert proc.returncode == 2 and "/nonexistent-site holds no vllm/" in proc.stderr


FAKE_VLLM_MAIN = '''\
"""`vllm serve` stand-in for the script's test: our vLLM stand-in (tests/servers/vllm/server.py)
on the port the script gives; with J0 on and VLLM_DFLASH_AUDIT set it writes the audit's start
line, as the audited speculator.py does at start-up (no step: nothing a stand-in could check)."""
import json, os, sys
sys.path.insert(0, {tests!r})
from servers.vllm import server as vllm_server

args = sys.argv[sys.argv.index("serve") + 2:]
port = args[args.index("--port") + 1]
audit = os.environ.get("VLLM_DFLASH_AUDIT")
if audit and os.environ.get("VLLM_DFLASH_CTX_NOISE") == "1":
    os.makedirs(audit, exist_ok=True)
    with open(os.path.join(audit, f"audit-{{os.getpid()}}.jsonl"), "a") as f:
        f.write(json.dumps({{"record": "start", "ctx_noise": True}}) + "\\n")
own = ["--port", port, "--model", "target", "--num-spec-tokens", "7", "--max-model-len", "4096"]
own += ["--step-delay", os.environ.get("FAKE_STEP_DELAY", "0")]
if "--no-enable-prefix-caching" in args:
    own.append("--no-prefix-caching")
sys.exit(vllm_server.main(own))
'''


def _stand_in_site(base_bytes: bytes, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A site whose vLLM is vLLM 0.33.0's base speculator.py plus a `vllm serve` that starts our
    stand-in, and the script's environment for it."""
    site = tmp_path / "site"
    speculator = site / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
    speculator.parent.mkdir(parents=True)
    speculator.write_bytes(base_bytes)
    (site / "vllm" / "__init__.py").write_text("")
    cli = site / "vllm" / "entrypoints" / "cli"
    cli.mkdir(parents=True)
    (site / "vllm" / "entrypoints" / "__init__.py").write_text("")
    (cli / "__init__.py").write_text("")
    (cli / "main.py").write_text(FAKE_VLLM_MAIN.format(tests=str(ROOT / "tests")))
    models = tmp_path / "models"
    (models / "target").mkdir(parents=True)
    (models / "draft").mkdir()
    env = {
        **os.environ,
        "SITE": str(site),
        "WORK": str(tmp_path / "work"),
        "TARGET": str(models / "target"),
        "DRAFT": str(models / "draft"),
        "PORT": str(_free_port_base()),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "START_WAIT": "60",
        "PARALLEL": "4",  # two waves: 4 servers, then 3
        "SEND_WAIT": "120",
    }
    return speculator, env


@pytest.mark.slow
def test_the_whole_script_on_stand_in_servers(base_bytes: bytes, tmp_path: Path) -> None:
    """The script end to end without a GPU: a site whose vLLM is vLLM 0.33.0's base
    speculator.py plus a `vllm serve` that starts our stand-in; the four files are made and
    checked, seven servers start, every scenario is sent, and the table names each run. The audit
    verdicts are NOTHING TO JUDGE: a stand-in runs no draft step."""
    speculator, env = _stand_in_site(base_bytes, tmp_path)
    results = tmp_path / "results"
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(results)], env=env, capture_output=True, text=True, timeout=400
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "files made and checked: " in proc.stdout
    files = sorted(p.name for p in (tmp_path / "work" / "files").iterdir())
    assert files == ["article.py", "audit-article.py", "audit-prefix-safe.py", "prefix-safe.py"]
    rows = json.loads((results / "table.json").read_text())
    assert {r["run"] for r in rows} == {
        "article-nocache", "article-cache", "prefix-safe-cache", "j0off-nocache", "j0off-cache",
        "article-graphs", "j0off-graphs",
    }  # fmt: skip
    assert len(rows) == 7 * len(sender.SCENARIOS)
    on = [r for r in rows if r["j0"] == "on"]
    assert {r["audit"]["verdict"] for r in on} == {"NOTHING TO JUDGE"}
    single = {r["run"]: r["outputs_vs_j0_off"] for r in rows if r["scenario"] == "single"}
    assert single["article-cache"] in ("same", "DIFFER")
    assert single["article-graphs"] in ("same", "DIFFER")
    # Each audited server's tree held its own file; the site's file was never touched.
    assert speculator.read_bytes() == base_bytes
    log = (results / "prefix-safe-cache" / "server.log").read_text()
    assert "identity=audit" in log
    assert "identity=article" in (results / "j0off-cache" / "server.log").read_text()
    assert (results / "article-cache" / "audit.txt").read_text().startswith("NOTHING TO JUDGE")


def _free_port_base() -> int:
    """A port P with P..P+6 free on 127.0.0.1 (the script's seven servers). The search starts at a
    place of this process's own (its pid), so that two pytest-xdist workers asking at once do not
    both take the first free block: one's servers would then fail to bind, and a test waiting for
    them to come up would wait for its whole deadline (94 s seen in a loaded run). The blocks
    lie below the kernel's ephemeral range (ip_local_port_range, 32768 by default), from which
    every client connection and every server bound to port 0 takes its port: in a busy run one of
    those could take a port of the block between this search and the script's servers binding."""
    import socket

    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.is_file() else 32768
    bases = list(range(10000, max(low, 10000 + 97 * 8) - 7, 97))
    start = os.getpid() % len(bases)
    for base in bases[start:] + bases[:start]:
        sockets = []
        try:
            for port in range(base, base + 7):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no seven free ports")


@pytest.mark.slow
def test_a_terminated_run_stops_its_servers(base_bytes: bytes, tmp_path: Path) -> None:
    """SIGTERM to the script while its servers run (as a command time limit sends it): every
    server, each in a session of its own, is stopped on the way out, exit 143."""
    import signal
    import socket
    import time

    _, env = _stand_in_site(base_bytes, tmp_path)
    env["FAKE_STEP_DELAY"] = "0.2"  # the scenarios take a while: the signal comes meanwhile
    said = tmp_path / "said.txt"
    with said.open("w") as out:
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), str(tmp_path / "results")],
            env={**env, "PARALLEL": "6"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    port = int(env["PORT"])
    deadline = time.monotonic() + 120
    while "article-nocache up" not in said.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, said.read_text()[-2000:]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143
    deadline = time.monotonic() + 60
    open_ports = list(range(port, port + 6))
    while open_ports and time.monotonic() < deadline:
        still = []
        for p in open_ports:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", p)) == 0:
                    still.append(p)
        open_ports = still
        time.sleep(0.5)
    assert open_ports == []
    # Each stopped on its SIGTERM: none waited out the script's 30 s of grace for its SIGKILL. One
    # signalled while its subshell still printed its identity did (seen in loaded runs), before
    # the script signalled the subshell by its pid as well as by its session.
    assert "after SIGTERM; SIGKILL" not in said.read_text()
