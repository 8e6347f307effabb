"""compose.yaml: the article's serving setup, rendered by the real `docker compose config`, and
`docker compose up` of the whole wiring on the stand-in image without a GPU.

Rendering needs the docker CLI with the compose plugin, not an engine; the `up` test needs an
engine (tests/standin/build.py makes the base image locally) and runs the drafter service against
our Hub-like server (tests/servers/hub_server.py) on 127.0.0.1, with compose.ci.yaml putting a
check (tests/compose/bin/vllm) in the place of `vllm serve`. Without the compose plugin or an
engine these tests skip, except with J0_REQUIRE_DOCKER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from j0 import serve_command
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILES = ("compose.yaml", "compose.serve.yaml", "compose.ci.yaml")
# Every variable the compose files read; the shell's values must not leak into the tests.
KNOBS = (
    "TARGET_MODEL",
    "VLLM_IMAGE",
    "DRAFTER_REPO",
    "DRAFTER_REVISION",
    "J0_IMAGE",
    "NUM_SPEC_TOKENS",
    "MAX_MODEL_LEN",
    "KV_CACHE_DTYPE",
    "GPU_MEMORY_UTILIZATION",
    "PORT",
    "VLLM_DFLASH_CTX_NOISE",
    "VLLM_DFLASH_DUMP",
    "VLLM_DFLASH_DUMP_STEPS",
    "J0_OVERLAY",
    "DRAFTER_DIR",
    "HF_HOME",
    "HF_TOKEN",
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


def require_compose() -> None:
    """Skip without `docker compose` (fail where J0_REQUIRE_DOCKER=1): rendering needs no engine."""
    reason = ""
    if shutil.which("docker") is None:
        reason = "no docker CLI"
    else:
        result = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            reason = f"no compose plugin: {result.stderr.strip()}"
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


@pytest.fixture
def render(tmp_path: Path):  # type: ignore[no-untyped-def]
    """render(**knobs) -> the project as `docker compose config --format json` prints it."""
    require_compose()
    home = tmp_path / "home"
    home.mkdir()

    def _render(
        files: tuple[str, ...] = ("compose.yaml",), env_file: Path | None = None, **knobs: str
    ) -> dict[str, Any]:
        result = compose(
            ["config", "--format", "json"], compose_env(home, **knobs), files, env_file
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    _render.home = home  # type: ignore[attr-defined]
    return _render


def after(command: list[str], flag: str) -> str:
    """The value that follows `flag` in a command list (exactly one occurrence)."""
    assert command.count(flag) == 1, command
    return command[command.index(flag) + 1]


def volume(service: dict[str, Any], target: str) -> dict[str, Any]:
    found = [v for v in service["volumes"] if v["target"] == target]
    assert len(found) == 1, service["volumes"]
    return found[0]


# --- rendered configurations ------------------------------------------------------------------


def test_default_is_the_articles_run(render, pins: Pins) -> None:  # type: ignore[no-untyped-def]
    project = render()
    server = project["services"]["server"]
    command = server["command"]
    assert command[0] == pins.target_model
    assert after(command, "--speculative-config") == SPEC_15
    assert after(command, "--max-num-seqs") == "4"
    assert after(command, "--max-model-len") == "auto"
    assert after(command, "--kv-cache-dtype") == "auto"
    assert after(command, "--gpu-memory-utilization") == "0.90"
    assert server["entrypoint"] == ["j0", "serve", "--"]
    assert server["build"]["context"] == str(ROOT)
    assert server["build"]["dockerfile"] == "docker/Dockerfile"
    assert server["build"]["args"] == {"VLLM_IMAGE": pins.vllm_image}
    assert server["environment"]["VLLM_DFLASH_CTX_NOISE"] == "1"
    assert server["environment"]["VLLM_DFLASH_DUMP"] == ""
    assert server["environment"]["VLLM_DFLASH_DUMP_STEPS"] == "0"
    assert server["ipc"] == "host"
    assert server["depends_on"]["drafter"]["condition"] == "service_completed_successfully"


def test_gpu_reservation(render) -> None:  # type: ignore[no-untyped-def]
    devices = render()["services"]["server"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]


def test_ports_are_published_on_loopback_only(render) -> None:  # type: ignore[no-untyped-def]
    ports = render()["services"]["server"]["ports"]
    assert [(p["host_ip"], p["published"], p["target"]) for p in ports] == [
        ("127.0.0.1", "8000", 8000)
    ]
    ports = render(PORT="9123")["services"]["server"]["ports"]
    assert [(p["host_ip"], p["published"], p["target"]) for p in ports] == [
        ("127.0.0.1", "9123", 8000)
    ]
    assert "ports" not in render()["services"]["drafter"]


def test_healthcheck_waits_long_enough_for_a_27b_load(render) -> None:  # type: ignore[no-untyped-def]
    check = render()["services"]["server"]["healthcheck"]
    assert "http://127.0.0.1:8000/health" in " ".join(check["test"])
    minutes = re.fullmatch(r"(\d+)m0s", check["start_period"])
    assert minutes and int(minutes.group(1)) >= 20, check["start_period"]


def test_seven_draft_tokens(render) -> None:  # type: ignore[no-untyped-def]
    command = render(NUM_SPEC_TOKENS="7")["services"]["server"]["command"]
    assert after(command, "--speculative-config") == SPEC_7
    assert after(command, "--max-num-seqs") == "4"


def test_every_rendered_speculative_config_passes_j0_serve(render) -> None:  # type: ignore[no-untyped-def]
    for n in ("15", "7", "3"):
        raw = after(
            render(NUM_SPEC_TOKENS=n)["services"]["server"]["command"], "--speculative-config"
        )
        spec = serve_command.parse_speculative_config(raw)
        assert spec.num_speculative_tokens == int(n) and spec.model == "/drafter"


def test_j0_off(render) -> None:  # type: ignore[no-untyped-def]
    server = render(VLLM_DFLASH_CTX_NOISE="0")["services"]["server"]
    assert server["environment"]["VLLM_DFLASH_CTX_NOISE"] == "0"
    assert after(server["command"], "--speculative-config") == SPEC_15


def test_dumps_on(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dumps = tmp_path / "my-dumps"
    server = render(VLLM_DFLASH_DUMP=str(dumps), VLLM_DFLASH_DUMP_STEPS="32")["services"]["server"]
    assert server["environment"]["VLLM_DFLASH_DUMP"] == "/dumps"
    assert server["environment"]["VLLM_DFLASH_DUMP_STEPS"] == "32"
    assert volume(server, "/dumps")["source"] == str(dumps)
    # Off, ./dumps is still mounted (compose has no optional mounts), and nothing is written.
    server = render()["services"]["server"]
    assert volume(server, "/dumps")["source"] == str(ROOT / "dumps")


def test_overlay_swap(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    swap = tmp_path / "speculator.py"
    swap.write_text("# another speculator.py\n")
    server = render(J0_OVERLAY=str(swap))["services"]["server"]
    mount = volume(server, str(serve_command.DEFAULT_OVERLAY_MOUNT))
    assert mount["source"] == str(swap) and mount["read_only"] is True
    assert mount["type"] == "bind"
    assert "build" in server  # no rebuild needed: the image is the same
    # Unset: /dev/null at an unused path, nothing over the image's file.
    server = render()["services"]["server"]
    mount = volume(server, "/opt/j0/speculator")
    assert mount["source"] == "/dev/null" and mount["read_only"] is True
    assert not [v for v in server["volumes"] if v["target"].endswith(".py")]


def test_mounts_drafter_and_hf_cache(render, pins: Pins) -> None:  # type: ignore[no-untyped-def]
    project = render()
    server, drafter = project["services"]["server"], project["services"]["drafter"]
    assert volume(server, "/drafter")["source"] == str(ROOT / "drafter")
    assert volume(server, "/drafter")["read_only"] is True
    assert volume(drafter, "/drafter")["source"] == str(ROOT / "drafter")
    assert not volume(drafter, "/drafter").get("read_only")
    hf = volume(server, "/root/.cache/huggingface")
    assert hf["source"] == str(render.home / ".cache" / "huggingface")
    assert server["environment"]["HF_HOME"] == "/root/.cache/huggingface"
    assert drafter["command"] == [
        "drafter",
        "fetch",
        "--repo-id",
        pins.drafter_repo,
        "--revision",
        pins.drafter_revision,
        "--dir",
        "/drafter",
    ]
    assert drafter["entrypoint"] == ["j0"]
    assert drafter["image"] == server["image"]
    server = render(HF_HOME="/data/hf", DRAFTER_DIR="/data/drafter")["services"]["server"]
    assert volume(server, "/root/.cache/huggingface")["source"] == "/data/hf"
    assert volume(server, "/drafter")["source"] == "/data/drafter"


def test_tokens_are_secrets_never_plain_environment(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    token = tmp_path / "hf_token"
    token.write_text("hf_SeCrEtToKeN123\n")
    key = tmp_path / "api_key"
    key.write_text("api-SeCrEt-456\n")
    project = render(HF_TOKEN_FILE=str(token), API_KEY_FILE=str(key), HF_TOKEN="hf_FromTheShell")
    text = json.dumps(project)
    for secret in ("hf_SeCrEtToKeN123", "api-SeCrEt-456", "hf_FromTheShell"):
        assert secret not in text
    assert project["secrets"]["hf_token"]["file"] == str(token)
    assert project["secrets"]["api_key"]["file"] == str(key)
    for name, service in project["services"].items():
        env = service.get("environment") or {}
        assert "HF_TOKEN" not in env and "VLLM_API_KEY" not in env, name
        assert env["HF_TOKEN_PATH"] == "/run/secrets/hf_token", name
        assert "hf_token" in [s["source"] for s in service["secrets"]], name
    assert "api_key" in [s["source"] for s in project["services"]["server"]["secrets"]]
    # Unset: empty files, so no token and no API key.
    assert {s["file"] for s in render()["secrets"].values()} == {"/dev/null"}


def test_knobs_reach_the_command(render) -> None:  # type: ignore[no-untyped-def]
    project = render(
        TARGET_MODEL="org/other-model",
        MAX_MODEL_LEN="65536",
        KV_CACHE_DTYPE="fp8",
        GPU_MEMORY_UTILIZATION="0.85",
        VLLM_IMAGE="registry.example/vllm/vllm-openai:v0.33.0@sha256:" + "a" * 64,
        J0_IMAGE="j0/test:knobs",
    )
    server = project["services"]["server"]
    command = server["command"]
    assert command[0] == "org/other-model"
    assert after(command, "--max-model-len") == "65536"
    assert after(command, "--kv-cache-dtype") == "fp8"
    assert after(command, "--gpu-memory-utilization") == "0.85"
    assert after(command, "--speculative-config") == SPEC_15  # the draft's cache stays "auto"
    assert server["build"]["args"]["VLLM_IMAGE"].endswith("@sha256:" + "a" * 64)
    assert server["image"] == project["services"]["drafter"]["image"] == "j0/test:knobs"


def test_dot_env_beats_the_pins_and_the_shell_beats_dot_env(
    render, tmp_path: Path, pins: Pins
) -> None:  # type: ignore[no-untyped-def]
    dot_env = tmp_path / "dot.env"
    dot_env.write_text("TARGET_MODEL=from/dot-env\nNUM_SPEC_TOKENS=7\n")
    command = render(env_file=dot_env)["services"]["server"]["command"]
    assert command[0] == "from/dot-env" and after(command, "--speculative-config") == SPEC_7
    command = render(env_file=dot_env, TARGET_MODEL="from/shell")["services"]["server"]["command"]
    assert command[0] == "from/shell"
    assert render()["services"]["server"]["command"][0] == pins.target_model


def test_ci_override_drops_gpu_ports_and_healthcheck(render) -> None:  # type: ignore[no-untyped-def]
    project = render(files=("compose.yaml", "compose.ci.yaml"))
    server = project["services"]["server"]
    assert "deploy" not in server and "ports" not in server and "healthcheck" not in server
    assert server["network_mode"] == project["services"]["drafter"]["network_mode"] == "host"
    assert server["environment"]["PATH"].startswith("/opt/j0-ci/bin:")
    assert volume(server, "/opt/j0-ci/bin")["source"] == str(ROOT / "tests" / "compose" / "bin")
    # Everything else is the article's run.
    assert after(server["command"], "--speculative-config") == SPEC_15
    assert server["environment"]["VLLM_DFLASH_CTX_NOISE"] == "1"


# --- the files themselves ----------------------------------------------------------------------


def compose_variables() -> set[str]:
    names: set[str] = set()
    for name in COMPOSE_FILES:
        lines = (ROOT / name).read_text().splitlines()
        code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", code))
    return names


def test_env_example_documents_every_variable() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", text, re.MULTILINE))
    used = compose_variables() | {"HF_ENDPOINT", "HF_HUB_OFFLINE"}
    assert used - documented == set()
    assert documented - used == set()


def test_no_pinned_value_is_repeated(pins: Pins) -> None:
    """overlay/pins.env is the one place; compose reads it through `include: env_file`."""
    values = [
        pins.vllm_commit,
        pins.vllm_image,
        pins.vllm_image_fallback,
        pins.base_sha256,
        pins.patched_sha256,
        pins.drafter_repo,
        pins.drafter_revision,
        pins.target_model,
    ]
    for name in (*COMPOSE_FILES, ".env.example"):
        text = (ROOT / name).read_text()
        for value in values:
            assert value not in text, f"{name} repeats the pin {value}"


def test_compose_yaml_includes_the_services_with_the_pins() -> None:
    text = (ROOT / "compose.yaml").read_text()
    assert re.search(
        r"^include:\n  - path: compose\.serve\.yaml\n    env_file: overlay/pins\.env$",
        text,
        re.MULTILINE,
    )
