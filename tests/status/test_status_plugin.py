"""`j0 status` reading a plugin-route server's log (vLLM 0.34.0's image with j0's plugin): the
plugin's identity line, written by vLLM's logger from the plugin's file, gives the identity, the
variant and the seed; the J0 file's own DFLASH_CTX_NOISE line (its in-memory file reads as
speculator.py) gives J0's state; a line posing as the plugin's from another file is not
believed. The lines are typed here as vLLM 0.34 writes them (vllm/logger.py's format)."""

from __future__ import annotations

from j0.checks import FAIL, OK
from j0.engine.server.j0_state import j0_ran
from j0.engine.server.server_log import parse
from j0.pins import Pins
from j0.status import log_checks

BASE = "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


def plugin_log(pins: Pins, seed: int = 20261031, file: str = "dflash_j0.py") -> str:
    sha = pins.values["V0340_PATCHED_SHA256"]
    running = sha if seed == 20261031 else "ab" * 32
    return "\n".join(
        [
            "j0 serve: --speculative-config "
            '{"method":"dflash_j0","model":"/drafter","num_speculative_tokens":15,'
            '"kv_cache_dtype":"auto","speculator_options":{"j0":true}}',
            f"(EngineCore pid=77) INFO 12-07 17:00:01 [{file}:88] j0-plugin: vLLM 0.34.0 commit "
            f"62d4bc3c7 (method dflash_j0), {BASE}: speculator.py sha256={sha} "
            f"identity=article-0.34.0 variant=article j0=on seed={seed} running={running} "
            "patches=overlay/vllm-0.34.0/jetspec-j0.patch",
            "(EngineCore pid=77) INFO 12-07 17:00:01 [speculator.py:142] DFLASH_CTX_NOISE=1 "
            "pool=(4, 4096) dump=None/0",
            "(APIServer pid=1) INFO 12-07 17:00:40 [api_server.py:1] Starting vLLM server on "
            "http://0.0.0.0:8000",
        ]
    )


def test_the_plugin_line_gives_the_identity(pins: Pins) -> None:
    log = parse(plugin_log(pins), "server.log")
    assert (log.route, log.identity, log.variant, log.seed) == (
        "plugin",
        "article-0.34.0",
        "article",
        20261031,
    )
    assert (log.vllm_version, log.vllm_commit) == ("0.34.0", "62d4bc3c7")
    assert log.speculator_path == BASE
    assert (log.j0, log.pool_shape) == ("on", [4, 4096])
    speculator = log_checks.speculator(log, pins)
    assert speculator.check.status == OK, speculator
    assert "identity=article-0.34.0" in speculator.check.detail
    assert log_checks.spec_config(log).check.status == OK
    ran = j0_ran(log)
    assert (ran.ran, ran.identity) == ("on", "article-0.34.0")
    engine = log_checks.engine(log, pins)
    assert engine.check.status == FAIL  # vLLM 0.34.0 is not the article's engine


def test_another_seed_is_said(pins: Pins) -> None:
    log = parse(plugin_log(pins, seed=7), "server.log")
    found = log_checks.speculator(log, pins)
    assert found.check.status == FAIL
    assert "J0's seed is 7, not the article's 20261031" in found.reason


def test_the_line_from_another_file_is_not_believed(pins: Pins) -> None:
    log = parse(plugin_log(pins, file="api_server.py"), "server.log")
    assert log.identity is None and log.route is None
    assert log_checks.speculator(log, pins).check.status == FAIL
