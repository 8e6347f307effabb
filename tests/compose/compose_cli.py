"""Running the real `docker compose` on the project's compose files for tests/compose: the knobs
the files read (kept out of the tests' environment), `compose(...)`, `Renderer` (the project as
`docker compose config` renders it), and small readers of a rendered service. Rendering needs the
docker CLI with the compose plugin, not an engine; without it tests skip (fail with
J0_REQUIRE_DOCKER=1).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILES = (
    "compose.yaml",
    "compose.serve.yaml",
    "compose.ci.yaml",
    "compose.plugin.yaml",
    "compose.plugin.serve.yaml",
)
# The env files compose.yaml includes after the pins, one per engine route (VLLM_ENGINE).
ROUTE_FILES = ("overlay/route-wheel.env", "overlay/route-image.env")
# Every variable the compose files read; the shell's values must not leak into the tests.
KNOBS = (
    "TARGET_MODEL",
    "VLLM_IMAGE",
    "VLLM_IMAGE_FALLBACK",
    "VLLM_ENGINE",
    "WHEEL_INDEX",
    "J0_ROUTE",
    "J0_ROUTE_BASE",
    "DRAFTER_REPO",
    "DRAFTER_REVISION",
    "J0_IMAGE",
    "J0_ON",
    "J0_PLUGIN_IMAGE",
    "J0_VARIANT",
    "V0340_IMAGE",
    "NUM_SPEC_TOKENS",
    "MAX_MODEL_LEN",
    "KV_CACHE_DTYPE",
    "GPU_MEMORY_UTILIZATION",
    "PORT",
    "VLLM_DFLASH_CTX_NOISE",
    "ENABLE_PREFIX_CACHING",
    "VLLM_DFLASH_DUMP",
    "VLLM_DFLASH_DUMP_STEPS",
    "J0_OVERLAY",
    "DRAFTER_DIR",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_TOKEN",
    "HF_TOKEN_PATH",
    "HF_TOKEN_FILE",
    "API_KEY_FILE",
    "HF_ENDPOINT",
    "HF_HUB_OFFLINE",
    "COMPOSE_FILE",
    "COMPOSE_PROJECT_NAME",
    "COMPOSE_PROFILES",
)
# The seed's serving flag, typed here rather than taken from the code under test.
SPEC_15 = (
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
)
SPEC_7 = '{"method":"dflash","model":"/drafter","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def compose_missing() -> str:
    """Why `docker compose` cannot render here ("" where it can): asked once per test process,
    not once per test (`docker compose version` is about 0.07 s of CPU, and about 30 tests of a
    fast run asked it, each in its own set-up)."""
    if shutil.which("docker") is None:
        return "no docker CLI"
    result = subprocess.run(
        ["docker", "compose", "version"], capture_output=True, text=True, check=False
    )
    return f"no compose plugin: {result.stderr.strip()}" if result.returncode != 0 else ""


def require_compose() -> None:
    """Skip without `docker compose` (fail where J0_REQUIRE_DOCKER=1): rendering needs no engine."""
    reason = compose_missing()
    if reason:
        if os.environ.get("J0_REQUIRE_DOCKER") == "1":
            pytest.fail(f"J0_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)


def compose_env(home: Path, **knobs: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KNOBS}
    env["HOME"] = str(home)
    env.update(knobs)
    return env


def compose(
    args: list[str],
    env: dict[str, str],
    files: tuple[str, ...] = ("compose.yaml",),
    env_file: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    cmd = ["docker", "compose", "--env-file", str(env_file or os.devnull)]
    for name in files:
        cmd += ["-f", str(ROOT / name)]
    return subprocess.run(
        [*cmd, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


@dataclass
class Renderer:
    """render(**knobs) -> the project as `docker compose config --format json` prints it, with
    only the given knobs set (HOME is a fresh folder, the shell's knobs and .env are left out)."""

    home: Path

    def __call__(
        self, files: tuple[str, ...] = ("compose.yaml",), env_file: Path | None = None, **knobs: str
    ) -> dict[str, Any]:
        env = compose_env(self.home, **knobs)
        result = compose(["config", "--format", "json"], env, files, env_file)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


def after(command: list[str], flag: str) -> str:
    """The value that follows `flag` in a command list (exactly one occurrence)."""
    assert command.count(flag) == 1, command
    return command[command.index(flag) + 1]


def volume(service: dict[str, Any], target: str) -> dict[str, Any]:
    found = [v for v in service["volumes"] if v["target"] == target]
    assert len(found) == 1, service["volumes"]
    return found[0]
