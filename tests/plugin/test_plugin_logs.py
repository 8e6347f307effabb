"""What the commands read from a plugin-route server's log (typed here as vLLM 0.34 writes it,
vllm/logger.py's format): `j0 bench run --log` labels J0 on or off from the plugin's identity and
the J0 file's DFLASH_CTX_NOISE line, and `j0 dumps check --log` takes the variant (its release
stripped) and the seed from the plugin's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.bench.result.manifest import read_log
from j0.dumps.check.own_prefix import seed_from_log, variant_from_log
from j0.pins import Pins

BASE = "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


def write_log(path: Path, sha: str, *, kind: str, variant: str, j0: str, seed: int) -> Path:
    noise = "1" if j0 == "on" else "0"
    path.write_text(
        f"(EngineCore pid=9) INFO 12-07 18:00:00 [dflash_j0.py:88] j0-plugin: vLLM 0.34.0 commit "
        f"62d4bc3c7 (method dflash_j0), {BASE}: speculator.py sha256={sha} identity={kind} "
        f"variant={variant} j0={j0} seed={seed} running={sha} "
        "patches=overlay/vllm-0.34.0/jetspec-j0.patch\n"
        f"(EngineCore pid=9) INFO 12-07 18:00:00 [speculator.py:142] DFLASH_CTX_NOISE={noise} "
        "pool=(4, 1024) dump=None/0\n"
        "(APIServer pid=1) INFO 12-07 18:00:30 [api_server.py:1] Starting vLLM server on "
        "http://127.0.0.1:8000\n"
    )
    return path


@pytest.mark.parametrize("j0", ["on", "off"])
def test_bench_labels_j0_as_the_plugin_ran_it(tmp_path: Path, pins: Pins, j0: str) -> None:
    log = write_log(
        tmp_path / "server.log",
        pins.values["V0340_PATCHED_SHA256"],
        kind="article-0.34.0",
        variant="article",
        j0=j0,
        seed=20261031,
    )
    seen = read_log(log)
    assert seen.ran.ran == j0
    assert seen.overlay_identity == "article-0.34.0"
    assert seen.vllm_commit == "62d4bc3c7"


def test_dumps_check_takes_the_variant_and_seed(tmp_path: Path, pins: Pins) -> None:
    log = write_log(
        tmp_path / "server.log",
        pins.values["V0340_PREFIX_SAFE_SHA256"],
        kind="prefix-safe-0.34.0",
        variant="prefix-safe",
        j0="on",
        seed=7,
    )
    assert variant_from_log(log) == "prefix-safe"
    assert seed_from_log(log) == 7
