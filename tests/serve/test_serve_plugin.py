"""`j0 serve` on the plugin route (`--speculative-config` with method dflash_j0): J0's switches
read from speculator_options by the plugin's own parser, refused as the plugin would refuse
them; the image route's environment switches said to be unread there; and the installed vLLM
judged by the plugin's version guard before vLLM starts (the test environment's 0.33.0 is
refused, 0.34.0 passes: tests/vllm_releases.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.serve import launch as serve_launch
from vllm_releases import env_with_vllm

ROOT = Path(__file__).resolve().parents[2]
CAUSAL_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 5,
    "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669},
}


def drafter(tmp_path: Path) -> Path:
    folder = tmp_path / "drafter"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CAUSAL_CONFIG))
    return folder


def args(folder: Path, options: object = None, method: str = "dflash_j0") -> list[str]:
    spec: dict[str, object] = {
        "method": method,
        "model": str(folder),
        "num_speculative_tokens": 15,
        "kv_cache_dtype": "auto",
    }
    if options is not None:
        spec["speculator_options"] = options
    return ["Qwen/Test", "--speculative-config", json.dumps(spec), "--max-num-seqs", "4"]


def test_the_options_are_the_plugins(tmp_path: Path) -> None:
    plan = serve_launch.plan_serve(
        args(drafter(tmp_path), {"variant": "prefix-safe", "seed": 7}),
        {"ENABLE_PREFIX_CACHING": "1", "VLLM_DFLASH_CTX_NOISE": "1"},
    )
    assert "plugin route: method dflash_j0, J0 on, variant prefix-safe, seed 7" in plan.facts
    assert "dumps: off" in plan.facts
    assert any("prefix caching with J0 on: safe with the prefix-safe" in f for f in plan.facts)
    assert plan.warnings == [
        "VLLM_DFLASH_CTX_NOISE=1 is not read on the plugin route (method dflash_j0): J0's "
        "switches are its speculator_options"
    ]


def test_the_article_variant_warns_under_prefix_caching(tmp_path: Path) -> None:
    plan = serve_launch.plan_serve(args(drafter(tmp_path), {}), {})
    assert "plugin route: method dflash_j0, J0 on, variant article, seed 20261031" in plan.facts
    assert serve_launch.PREFIX_CACHING_WITH_J0 in plan.warnings
    off = serve_launch.plan_serve(args(drafter(tmp_path), {"j0": False}), {})
    assert serve_launch.PREFIX_CACHING_WITH_J0 not in off.warnings


@pytest.mark.parametrize(
    ("options", "method", "said"),
    [
        ({"j0": "1"}, "dflash_j0", "speculator_options.j0='1': expected true"),
        ({"ctx_noise": 1}, "dflash_j0", "unknown key(s) ctx_noise"),
        ({"dump_dir": "/d"}, "dflash_j0", "give both"),
        ({"j0": True}, "dflash", "speculator_options with method 'dflash': vLLM refuses them"),
        (None, "dflash_j1", "expected 'dflash' (the image's J0 file) or 'dflash_j0'"),
    ],
)
def test_refused_before_vllm_starts(
    tmp_path: Path, options: object, method: str, said: str
) -> None:
    with pytest.raises(J0Error) as caught:
        serve_launch.plan_serve(args(drafter(tmp_path), options, method), {})
    assert said in str(caught.value)
    assert caught.value.exit_code == 64


def dry_run(tmp_path: Path, env: dict[str, str], options: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "j0", "serve", "--dry-run", "--", *args(drafter(tmp_path), options)],
        env={**env, "J0_SERVE_ARGS_READER": "table"},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def test_a_vllm_the_plugin_was_not_proven_on_is_refused(tmp_path: Path) -> None:
    """The test environment's vLLM is 0.33.0: vLLM would refuse method dflash_j0 there."""
    done = dry_run(tmp_path, dict(os.environ), {})
    assert done.returncode == 2, done.stderr
    assert "method dflash_j0: vLLM 0.33.0 with " in done.stderr
    assert "not a vLLM it was proven on (supported: vLLM 0.34.0" in done.stderr


@pytest.mark.slow
def test_vllm_0340_with_the_plugin_installed_passes(tmp_path: Path) -> None:
    done = dry_run(tmp_path, env_with_vllm(), {"dump_dir": str(tmp_path / "d"), "dump_steps": 3})
    assert done.returncode == 0, done.stderr
    assert "plugin route: vLLM 0.34.0 at " in done.stderr
    assert "is proven (sha256 0044839fe26b5701" in done.stderr
    assert "dumps: the first 3 single-request draft steps to" in done.stderr
