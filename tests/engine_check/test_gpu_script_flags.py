"""The GPU scripts print their servers' flags from j0's ServerSetting (j0.article.server_flags)
instead of writing vLLM's command line themselves: their dry runs name the same flags, and the
same speculative config, as the scripts wrote before (typed here from them), and what they print
reads back as one ServerSetting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.article.server_setting import ServerSetting

ROOT = Path(__file__).resolve().parents[2]


def pairs(words: list[str]) -> set[tuple[str, ...]]:
    """Each option with its value (a word that does not start with --), or alone."""
    found: set[tuple[str, ...]] = set()
    i = 0
    while i < len(words):
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            found.add((words[i], words[i + 1]))
            i += 2
        else:
            found.add((words[i],))
            i += 1
    return found


def dry_run(script: str, tmp_path: Path, **env: str) -> dict[str, list[str]]:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / script), str(tmp_path / "r"), "--dry-run"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **env},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plan = {}
    for line in (
        done.stdout.splitlines()[:-1] if script.startswith("engine") else done.stdout.splitlines()
    ):
        name, _, rest = line.partition(": ")
        words = rest.partition("vllm serve TARGET ")[2].split(" scenarios:")[0].split()
        plan[name] = words
    return plan


def test_the_engine_scenarios_flags_are_the_ones_it_wrote(tmp_path: Path) -> None:
    site = tmp_path / "site" / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
    site.parent.mkdir(parents=True)
    site.write_text("# a stand-in\n")
    plan = dry_run("engine-scenarios-h200.sh", tmp_path, SITE=str(tmp_path / "site"))
    spec = '{"method":"dflash","model":"DRAFT","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'
    for port, name in enumerate(plan, start=8021):
        words = plan[name]
        caching = "on" if "-cache" in name else "off"
        # What the script's own echo wrote before (typed from it), for this run.
        wrote = (
            f"--served-model-name target --speculative-config {spec} --max-num-seqs 4 "
            "--max-model-len 1024 --max-num-batched-tokens 256 --num-gpu-blocks-override 80 "
            "--kv-cache-memory-bytes 2147483648 --gpu-memory-utilization 0.1 --host 127.0.0.1 "
            f"--port {port} --enable-prompt-tokens-details "
            + ("--enable-prefix-caching" if caching == "on" else "--no-enable-prefix-caching")
            + ("" if name.endswith("-graphs") else " --enforce-eager")
        ).split()
        assert pairs(words) == pairs(wrote), name
        assert ServerSetting.from_args(["TARGET", *words]).args()[1:] == words


@pytest.mark.parametrize("audit", [True, False])
def test_the_plugin_scenarios_flags_are_the_ones_it_wrote(tmp_path: Path, audit: bool) -> None:
    """Its speculative config is compact JSON now (it was json.dumps's default spacing)."""
    plan = dry_run("plugin-scenarios-gpu.sh", tmp_path)
    assert len(plan) == 6  # the J0-off runs too: the dry run ended at the first before
    name = "prefix-safe-cache-eager" if audit else "j0off-cache-eager"
    words = plan[name]
    server = ServerSetting.from_args(["TARGET", *words])
    assert server.spec is not None
    options = {"j0": audit, "variant": "prefix-safe" if audit else "article"}
    if audit:
        options["audit_dir"] = f"RESULTS/{name}/audit"
    assert json.loads(server.spec.to_json()) == {
        "method": "dflash_j0",
        "model": "DRAFT",
        "num_speculative_tokens": 7,
        "kv_cache_dtype": "auto",
        "speculator_options": options,
    }
    port = 8041 + list(plan).index(name)
    wrote = (
        "--served-model-name target --max-num-seqs 4 --max-model-len 1024 "
        "--max-num-batched-tokens 256 --num-gpu-blocks-override 80 "
        "--kv-cache-memory-bytes 2147483648 --gpu-memory-utilization 0.1 --host 127.0.0.1 "
        f"--port {port} --enable-prompt-tokens-details --enable-prefix-caching --enforce-eager"
    ).split()
    spec_at = words.index("--speculative-config")
    assert pairs(words[:spec_at] + words[spec_at + 2 :]) == pairs(wrote)
