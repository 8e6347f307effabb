"""A value written into the server's log cannot forge a line that `j0 status` believes.

`j0 serve` writes every value on one line (line breaks escaped) and refuses arguments and knobs
that hold a line break or a marker of the log's grammar; the log reader believes each kind only
from its own writer's line (`j0 serve: ` lines give the speculative config only, `j0-entrypoint: `
lines the identity only). Real processes: `j0 serve --dry-run` in a subprocess, its stderr read
back by `j0 status --log` against our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.engine.server import server_log
from serve.test_serve_launch import drafter, serve_args
from servers.vllm.server import VllmStandIn
from status.status_logs import ARTICLE_SHA, INSTALLED, SPEC_15, article_log, status_json

ROOT = Path(__file__).resolve().parents[2]
# The identity line our entrypoint writes for the article's file, typed here.
FORGED_IDENTITY = (
    f"j0-entrypoint: vLLM 0.33.1.dev0+gc50aca144 commit c50aca144 (the pinned commit), "
    f"{INSTALLED}/speculator.py: speculator.py sha256={ARTICLE_SHA} identity=article"
)
FORGED_J0 = (
    "(EngineCore pid=71) INFO 11-30 12:00:53 [speculator.py:144] "
    "DFLASH_CTX_NOISE=1 pool=(4, 40960) dump=None/0"
)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def without(log: str, marker: str) -> str:
    return "\n".join(x for x in log.splitlines() if marker not in x) + "\n"


def j0_serve_dry_run(
    tmp_path: Path, args: list[str], env: dict[str, str], pythonpath: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "j0",
            "serve",
            "--dry-run",
            "--api-key-file",
            os.devnull,
            "--overlay-mount",
            str(tmp_path / "none"),
            "--",
            *args,
        ],
        env={
            "PATH": os.environ["PATH"],
            "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
            "PYTHONPATH": os.pathsep.join([*(pythonpath or []), str(ROOT / "scripts")]),
            "HF_HOME": str(tmp_path / "hf-home"),
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("model", "Qwen/Qwen3.8-27B\n" + FORGED_IDENTITY),
        ("model", "Qwen/x " + FORGED_J0),
        ("max-num-seqs", "4\rj0 serve: --speculative-config " + SPEC_15),
        ("VLLM_DFLASH_DUMP", "/dumps\n" + FORGED_J0),
        ("HF_HOME", "/hf " + FORGED_IDENTITY),
    ],
)
def test_serve_refuses_a_value_that_would_forge_a_log_line(
    tmp_path: Path, where: str, value: str
) -> None:
    """Before: the value went into a `j0 serve:` line as it was, a line break making a line of
    its own that the log reader took for the entrypoint's or the patch's."""
    folder = drafter(tmp_path)
    args, env = serve_args(folder), {"VLLM_DFLASH_DUMP_STEPS": "4"}
    if where == "model":
        args[0] = value
    elif where == "max-num-seqs":
        args[args.index("--max-num-seqs") + 1] = value
    else:
        env[where] = value
    result = j0_serve_dry_run(tmp_path, args, env)
    assert result.returncode == 64, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "refused, it would forge a line of the server's log" in line
    facts = server_log.parse(result.stderr, "stderr")
    assert (facts.identity, facts.j0, facts.speculative_config) == (None, None, None)


def test_what_serve_writes_stays_one_line_whatever_it_holds(tmp_path: Path, host: Host) -> None:
    """A value no check sees (here J0_HOME, named in the message of why the running file could
    not be identified) goes into the log with its line break escaped: the forged identity line
    it holds is not believed."""
    folder = drafter(tmp_path)
    home = f"/nowhere\n{FORGED_IDENTITY}"
    result = j0_serve_dry_run(tmp_path, serve_args(folder), {"J0_HOME": home})
    assert result.returncode == 0, result.stderr
    assert all(x.startswith("j0 serve: ") for x in result.stderr.splitlines()), result.stderr
    assert "J0_HOME=/nowhere\\nj0-entrypoint: vLLM" in result.stderr  # escaped, on its line
    facts = server_log.parse(result.stderr, "stderr")
    assert facts.identity is None and facts.lines.get("identity") is None


def test_status_does_not_believe_an_identity_inside_a_serve_line(
    tmp_path: Path, host: Host
) -> None:
    """The entrypoint could not identify the file (no identity line of its own); a `j0 serve`
    line holding the identity's text (as an older `j0 serve` wrote any value) is not one."""
    log = tmp_path / "server.log"
    text = without(article_log(), "j0-entrypoint")
    text += f"server-1  | j0 serve: target Qwen/x {FORGED_IDENTITY}\n"
    log.write_text(text)
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    value = json.loads(printed)
    assert value["identity"] is None and value["speculator_sha256"] is None
    assert value["article_setup"] is False and code != 0


def test_status_does_not_believe_j0_on_from_a_serve_line(tmp_path: Path, host: Host) -> None:
    """vLLM's unpatched file writes no DFLASH_CTX_NOISE line; one inside a `j0 serve` line (a dump
    folder's name, say) does not say J0 runs."""
    log = tmp_path / "server.log"
    text = without(article_log(), "DFLASH_CTX_NOISE=1 pool")
    text += f"server-1  | j0 serve: dumps: the first 4 steps to /d {FORGED_J0}/stepNNNN.pt\n"
    log.write_text(text)
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    value = json.loads(printed)
    assert value["j0"] is None and value["pool_shape"] is None
    assert value["article_setup"] is False and code != 0


def test_the_real_lines_are_still_read_with_and_without_composes_prefix() -> None:
    plain = "\n".join(x.removeprefix("server-1  | ") for x in article_log().splitlines())
    for text in (article_log(), plain):
        facts = server_log.parse(text, "log")
        assert (facts.identity, facts.speculator_sha256) == ("article", ARTICLE_SHA)
        assert facts.j0 == "on" and facts.speculative_config == json.loads(SPEC_15)


def test_log_safe_writes_one_line() -> None:
    assert server_log.log_safe("a\nb\r\u2028c\\d\x1b") == "a\\nb\\r\\u2028c\\\\d\\x1b"
    assert server_log.log_safe("Qwen/Qwen3.8-27B é") == "Qwen/Qwen3.8-27B é"
    assert server_log.forged_marker("Qwen/Qwen3.8-27B") is None
    assert server_log.forged_marker("x\u2028y") == "a line break or control character"
