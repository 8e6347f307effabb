"""Nothing `j0 bench run` finished is lost, and nothing the user had is overwritten: the result
file after every finished request (atomically), on SIGINT/SIGTERM before exiting 130/143; an
existing --out refused unless --force; no output that is one of the command's own inputs
(`bench run` and `bench report`); option values checked as usage errors (exit 64).

The servers are our vLLM stand-in and its hostile variant (tests/servers/vllm/server.py,
vllm/hostile_server.py) on 127.0.0.1; `j0 bench run` runs as the real command, in a subprocess where
a signal is sent to it.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from j0.bench.run.options import RunOptions, check_options
from j0.cli import main
from j0.errors import USAGE, J0Error
from servers.vllm.hostile_server import HostileVllm
from servers.vllm.server import VllmStandIn

DEAD_URL = "http://127.0.0.1:9"  # nothing is asked: the checks come first


def bench(url: str, out: Path, *extra: str) -> int:
    return main(["bench", "run", "--url", url, "--out", str(out), "--no-progress", *extra])


def started_bench(url: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "j0", "bench", "run", "--url", url, "--out", str(out),
         "--no-progress", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for(condition: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def entries_in(out: Path) -> int:
    try:
        return len(json.loads(out.read_text())["requests"])
    except (FileNotFoundError, json.JSONDecodeError):
        return -1


def test_every_finished_request_is_in_the_file_at_once(tmp_path: Path) -> None:
    """Requests 0 and 1 finish in a few ms, request 2 never ends (keep-alive comments). While
    it hangs the file already holds both finished requests; kill -9 then leaves them there.
    Before: the file was written at most every 5 s, so it held the first request only."""
    out = tmp_path / "r.json"
    with HostileVllm("comments", bad={2}, num_spec_tokens=7, seed=3) as server:
        proc = started_bench(server.url, out, "--requests", "4", "--max-tokens", "30")
        try:
            wait_for(lambda: server.generation_requests >= 3 or proc.poll() is not None)
            time.sleep(0.5)
            proc.kill()
            proc.wait(timeout=30)
        finally:
            proc.kill()
    doc = json.loads(out.read_text())
    assert [e["index"] for e in doc["requests"]] == [0, 1]
    assert all(e["ok"] for e in doc["requests"])
    assert doc["complete"] is False


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_writes_what_finished_and_exits_128_plus_it(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Before: SIGTERM killed the process (exit -15) and SIGINT gave a traceback-free 130, but
    the requests finished since the last 5-s checkpoint were lost and the file said nothing
    of the signal."""
    out = tmp_path / "r.json"
    with HostileVllm("comments", bad={2}, num_spec_tokens=7, seed=3) as server:
        proc = started_bench(server.url, out, "--requests", "4", "--max-tokens", "30")
        try:
            wait_for(lambda: server.generation_requests >= 3 or proc.poll() is not None)
            time.sleep(0.3)
            proc.send_signal(sig)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == code, stderr
    assert f"stopped by {sig.name}: 2 finished requests kept in {out}" in stderr
    assert "Traceback" not in stderr
    doc = json.loads(out.read_text())
    assert [e["index"] for e in doc["requests"]] == [0, 1]
    assert doc["complete"] is False
    assert doc["error"] == f"stopped by {sig.name} after 2 of 4 requests"


def test_a_signal_before_the_measured_requests_writes_nothing(tmp_path: Path) -> None:
    """The warm-up request never ends; SIGTERM: exit 143, a message that says nothing was
    written (nothing had finished), no file."""
    out = tmp_path / "r.json"
    with HostileVllm("comments", num_spec_tokens=7, seed=3) as server:
        proc = started_bench(server.url, out, "--requests", "2", "--warmup", "1")
        try:
            wait_for(lambda: server.generation_requests >= 1 or proc.poll() is not None)
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM: before the measured requests; nothing was written" in stderr
    assert not out.exists()


def test_the_exit_code_table_lists_the_signals() -> None:
    from j0.errors import EXIT_CODE_TABLE

    assert "  130 interrupted (SIGINT, Ctrl-C)" in EXIT_CODE_TABLE
    assert "  143 terminated (SIGTERM" in EXIT_CODE_TABLE


def test_an_existing_out_is_refused_unless_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    out.write_text("the user's own file\n")
    with VllmStandIn(num_spec_tokens=7, seed=3) as server:
        assert bench(server.url, out, "--requests", "1", "--max-tokens", "10") == USAGE
        assert out.read_text() == "the user's own file\n"
        assert f"--out {out}: exists; give --force" in capsys.readouterr().err
        assert server.records == []  # refused before anything was sent
        assert bench(server.url, out, "--requests", "1", "--max-tokens", "10", "--force") == 0
    assert json.loads(out.read_text())["complete"] is True


def _inputs(tmp_path: Path) -> dict[str, tuple[list[str], Path]]:
    """flag -> (the arguments that name an input, the input), each file written."""
    data = tmp_path / "prompts.jsonl"
    data.write_text(json.dumps({"prompt": "one two three"}) + "\n")
    local = tmp_path / "local.parquet"
    local.write_bytes(b"PAR1")
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"j0": "on"}))
    system = tmp_path / "system.txt"
    system.write_text("be brief\n")
    return {
        "--dataset": (["--dataset", str(data)], data),
        "--dataset-files": (["--dataset", "math500", "--dataset-files", str(local)], local),
        "--status-json": (["--status-json", str(status)], status),
        "--system-prompt @": (["--system-prompt", f"@{system}"], system),
    }


@pytest.mark.parametrize(
    "flag", ["--dataset", "--dataset-files", "--status-json", "--system-prompt @"]
)
@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
def test_out_that_is_one_of_the_inputs_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, how: str
) -> None:
    """Before: `--out` equal to `--dataset` replaced the dataset with the result."""
    args, path = _inputs(tmp_path)[flag]
    before = path.read_bytes()
    out = path
    if how == "symlink":
        out = tmp_path / "link.json"
        out.symlink_to(path)
    elif how == "hard link":
        out = tmp_path / "hard.json"
        os.link(path, out)
    assert bench(DEAD_URL, out, *args, "--force") == USAGE
    err = capsys.readouterr().err
    # the entry point's one rule names the option, not how its value was written (@FILE)
    assert f"--out {out} is the same file as {flag.split()[0]} {path}" in err
    assert path.read_bytes() == before


def test_json_is_the_result_files_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json alone: FILE.json's bytes on stdout (the lines stay on stderr); --json OUT: the same
    bytes in OUT, a run that stopped early included (exit 1, the finished requests in both)."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3) as server:
        assert bench(server.url, out, "--requests", "2", "--max-tokens", "20", "--json") == 0
    printed = capsys.readouterr()
    assert printed.out == out.read_text()
    assert "acceptance" in printed.err  # the summary, where it always was
    out, said = tmp_path / "dies.json", tmp_path / "said.json"
    with VllmStandIn(num_spec_tokens=7, seed=3, die_after=1) as server:
        code = bench(server.url, out, "--requests", "3", "--max-tokens", "20", "--json", str(said))
    assert code == 1
    assert said.read_bytes() == out.read_bytes()
    assert json.loads(said.read_text())["complete"] is False


@pytest.mark.parametrize("flag", ["--out", "--dataset"])
def test_json_out_that_is_the_out_or_an_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    args, path = _inputs(tmp_path)["--dataset"]
    before = path.read_bytes()
    out = tmp_path / "r.json"
    json_out = out if flag == "--out" else path
    assert bench(DEAD_URL, out, *args, "--json", str(json_out)) == USAGE
    assert f"--json {json_out} is the same file as {flag} " in capsys.readouterr().err
    assert path.read_bytes() == before and not out.exists()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "0"),
        ("--timeout", "-5"),
        ("--request-deadline", "nan"),
        ("--request-deadline", "0"),
        ("--request-deadline", "-1"),
        ("--temperature", "nan"),
        ("--temperature", "inf"),
        ("--temperature", "-0.5"),
        ("--requests", "0"),
        ("--concurrency", "0"),
        ("--max-tokens", "-3"),
    ],
)
def test_bad_option_values_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    """Before: --timeout nan, --temperature nan (and inf, -0.5) were taken and the run went
    on to the server."""
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as done:
        bench(DEAD_URL, out, f"{flag}={value}")
    assert done.value.code == USAGE
    err = capsys.readouterr().err
    assert f"argument {flag}: {value}" in err or f"argument {flag}: '{value}'" in err, err
    assert "expected" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("timeout_s", math.nan, "--timeout"),
        ("timeout_s", 0.0, "--timeout"),
        ("request_deadline_s", math.inf, "--request-deadline"),
        ("temperature", -1.0, "--temperature"),
        ("temperature", math.nan, "--temperature"),
    ],
)
def test_options_built_by_callers_are_checked_the_same_way(
    tmp_path: Path, field: str, value: float, flag: str
) -> None:
    opts = RunOptions(url=DEAD_URL, out=tmp_path / "r.json")
    setattr(opts, field, value)
    with pytest.raises(J0Error) as raised:
        check_options(opts)
    assert raised.value.exit_code == USAGE
    assert str(raised.value).startswith(f"{flag} {value}: expected a finite number")


# --- bench report ----------------------------------------------------------------------------


def _results_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    (folder / "k7-j0-off").mkdir(parents=True)
    with VllmStandIn(num_spec_tokens=7, seed=3) as server:
        out = folder / "k7-j0-off" / "result.json"
        assert bench(server.url, out, "--requests", "2", "--max-tokens", "30", "--j0", "off") == 0
    return folder


def test_report_never_writes_into_the_result_files_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A setting's result.json that is (a symlink to) the folder's report.json: before, the
    report replaced it with itself; now refused, exit 64, the result untouched."""
    folder = _results_folder(tmp_path)
    result = folder / "k7-j0-off" / "result.json"
    moved = folder / "report.json"
    result.rename(moved)
    result.symlink_to(moved)
    before = moved.read_bytes()
    assert main(["bench", "report", str(folder)]) == USAGE
    assert "is the same file as the result file" in capsys.readouterr().err
    assert moved.read_bytes() == before


def test_report_never_writes_into_its_weights_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _results_folder(tmp_path)
    index = tmp_path / "elsewhere" / "report.md"
    index.parent.mkdir()
    index.write_text(json.dumps({"metadata": {"total_size": 1000}}))
    code = main(["bench", "report", str(folder), "--out", str(index.parent),
                 "--weights-index", str(index), "--bandwidth", "4.8"])  # fmt: skip
    assert code == USAGE
    assert "is the same file as --weights-index" in capsys.readouterr().err
    assert json.loads(index.read_text()) == {"metadata": {"total_size": 1000}}


def test_report_still_writes_into_the_results_folder(tmp_path: Path) -> None:
    folder = _results_folder(tmp_path)
    assert main(["bench", "report", str(folder)]) == 0
    assert (folder / "report.md").is_file() and (folder / "report.json").is_file()
