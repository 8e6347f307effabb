"""compose.yaml: the article's serving setup, rendered by the real `docker compose config`
(the docker CLI with the compose plugin; no engine needed), and the compose files themselves
(every variable documented in .env.example, no pinned value repeated). Without the compose plugin
these tests skip, except with J0_REQUIRE_DOCKER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from compose_cli import (
    COMPOSE_FILES,
    ROOT,
    ROUTE_FILES,
    SPEC_7,
    SPEC_15,
    Renderer,
    after,
    require_compose,
    volume,
)

from j0.article import serving
from j0.errors import J0Error
from j0.pins import Pins
from j0.serve import launch as serve_launch


@pytest.fixture
def render(tmp_path: Path) -> Renderer:
    require_compose()
    home = tmp_path / "home"
    home.mkdir()
    return Renderer(home)


# --- rendered configurations ------------------------------------------------------------------


def test_default_is_the_articles_run(render: Renderer, pins: Pins) -> None:
    project = render()
    server = project["services"]["server"]
    command = server["command"]
    assert command[0] == pins.target_model
    assert after(command, "--speculative-config") == SPEC_15
    assert after(command, "--max-num-seqs") == "4"
    assert after(command, "--max-model-len") == "auto"
    assert after(command, "--kv-cache-dtype") == "auto"
    assert after(command, "--gpu-memory-utilization") == "0.90"
    # what `j0 bench run` reads: per-step acceptance and cached prompt tokens per request
    assert after(command, "--per-request-spec-decode-metrics") == "detailed"
    assert "--enable-prompt-tokens-details" in command
    assert server["environment"]["ENABLE_PREFIX_CACHING"] == "1"  # vLLM's default: on
    assert server["entrypoint"] == ["j0", "serve", "--"]
    assert server["build"]["context"] == str(ROOT)
    assert server["build"]["dockerfile"] == "docker/Dockerfile"
    # The wheel route by default: the release image, VLLM_COMMIT's wheel from the pinned index.
    assert server["build"]["args"] == {
        "VLLM_ENGINE": "wheel",
        "VLLM_IMAGE": pins.vllm_image_fallback,
        "WHEEL_INDEX": "",
        "J0_VARIANT": "article",  # the article's speculator.py unless J0_VARIANT says otherwise
    }
    assert server["environment"]["VLLM_DFLASH_CTX_NOISE"] == "1"
    assert server["environment"]["VLLM_DFLASH_DUMP"] == ""
    assert server["environment"]["VLLM_DFLASH_DUMP_STEPS"] == "0"
    assert "ipc" not in server  # the host's IPC namespace stays the host's (shm_size instead)
    assert server["depends_on"]["drafter"]["condition"] == "service_completed_successfully"


def test_j0_variant_picks_the_speculator_file_the_image_builds(render: Renderer) -> None:
    """J0_VARIANT=prefix-safe reaches the build (docker/Dockerfile's J0_VARIANT arg); the rest of
    the build args stay those of the default."""
    default = render()["services"]["server"]["build"]["args"]
    args = render(J0_VARIANT="prefix-safe")["services"]["server"]["build"]["args"]
    assert args == {**default, "J0_VARIANT": "prefix-safe"}


def test_the_engine_routes_render_their_base(render: Renderer, pins: Pins) -> None:
    """VLLM_ENGINE picks overlay/route-<route>.env: wheel (default, = VLLM_ENGINE of the pins)
    builds on the release with the wheel; image on VLLM_IMAGE (the nightly tag, or a digest, or
    the release itself); another value stops compose naming the missing route file."""
    from compose_cli import compose, compose_env

    assert pins.vllm_engine == "wheel"
    args = render(VLLM_ENGINE="wheel")["services"]["server"]["build"]["args"]
    assert args == render()["services"]["server"]["build"]["args"]
    args = render(VLLM_ENGINE="image")["services"]["server"]["build"]["args"]
    assert args == {
        "VLLM_ENGINE": "image",
        "VLLM_IMAGE": pins.vllm_image,
        "WHEEL_INDEX": "",
        "J0_VARIANT": "article",
    }
    release = render(VLLM_ENGINE="image", VLLM_IMAGE=pins.vllm_image_fallback)
    assert release["services"]["server"]["build"]["args"]["VLLM_IMAGE"] == pins.vllm_image_fallback
    mirror = "http://127.0.0.1:9/{commit}/"
    args = render(WHEEL_INDEX=mirror)["services"]["server"]["build"]["args"]
    assert args["VLLM_ENGINE"] == "wheel" and args["WHEEL_INDEX"] == mirror
    digest = pins.vllm_image_fallback + "@sha256:" + "b" * 64
    args = render(VLLM_IMAGE_FALLBACK=digest)["services"]["server"]["build"]["args"]
    assert args["VLLM_IMAGE"] == digest
    result = compose(["config"], compose_env(render.home, VLLM_ENGINE="nightly"))
    assert result.returncode != 0 and "route-nightly.env" in result.stderr


def test_the_route_files_type_no_pinned_value(pins: Pins) -> None:
    for name in ROUTE_FILES:
        text = (ROOT / name).read_text()
        for value in (pins.vllm_image, pins.vllm_image_fallback, pins.vllm_commit):
            assert value not in text, f"{name} repeats the pin {value}"


def test_both_containers_are_hardened(render: Renderer) -> None:
    """No capability but DAC_OVERRIDE (root writing into host folders that are the user's), no
    privilege gain, /dev/shm sized as vLLM's Docker guide allows instead of the host's IPC, and
    the drafter's root filesystem read-only with its writable paths in memory."""
    services = render()["services"]
    for name in ("drafter", "server"):
        service = services[name]
        assert service["cap_drop"] == ["ALL"], name
        assert service["cap_add"] == ["DAC_OVERRIDE"], name
        assert service["security_opt"] == ["no-new-privileges:true"], name
        assert "ipc" not in service and "privileged" not in service, name
    assert services["server"]["shm_size"] == str(16 * 1024**3)
    assert services["drafter"]["read_only"] is True
    assert services["drafter"]["tmpfs"] == ["/tmp", "/root/.cache/huggingface/xet"]
    assert "read_only" not in services["server"]  # the overlay swap writes into the image


def test_gpu_reservation(render: Renderer) -> None:
    devices = render()["services"]["server"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]


def test_ports_are_published_on_loopback_only(render: Renderer) -> None:
    ports = render()["services"]["server"]["ports"]
    assert [(p["host_ip"], p["published"], p["target"]) for p in ports] == [
        ("127.0.0.1", "8000", 8000)
    ]
    ports = render(PORT="9123")["services"]["server"]["ports"]
    assert [(p["host_ip"], p["published"], p["target"]) for p in ports] == [
        ("127.0.0.1", "9123", 8000)
    ]
    assert "ports" not in render()["services"]["drafter"]


def test_healthcheck_waits_long_enough_for_a_27b_load(render: Renderer) -> None:
    check = render()["services"]["server"]["healthcheck"]
    assert "http://127.0.0.1:8000/health" in " ".join(check["test"])
    minutes = re.fullmatch(r"(\d+)m0s", check["start_period"])
    assert minutes and int(minutes.group(1)) >= 20, check["start_period"]


def test_seven_draft_tokens(render: Renderer) -> None:
    command = render(NUM_SPEC_TOKENS="7")["services"]["server"]["command"]
    assert after(command, "--speculative-config") == SPEC_7
    assert after(command, "--max-num-seqs") == "4"


def test_every_rendered_speculative_config_passes_j0_serve(render: Renderer) -> None:
    for n in ("15", "7", "3"):
        raw = after(
            render(NUM_SPEC_TOKENS=n)["services"]["server"]["command"], "--speculative-config"
        )
        spec = serving.parse_speculative_config(raw)
        assert spec.config.tokens == int(n) and spec.config.drafter == "/drafter"


@pytest.mark.parametrize(
    ("tokens", "j0", "caching"), [(15, True, True), (7, False, False), (3, True, False)]
)
def test_compose_and_the_server_setting_write_one_command_line(
    render: Renderer, pins: Pins, tokens: int, j0: bool, caching: bool
) -> None:
    """vLLM's command line is written in two places, compose.serve.yaml and ServerSetting
    (j0.article.server_setting, which the matrix, the manifests and the launcher use): held
    equal here, and what compose renders reads back as the same setting."""
    from j0.article.server_setting import ServerSetting
    from j0.compose.server import MatrixPoint, ServerKnobs, compose_switches, server_setting

    setting = MatrixPoint(tokens, j0, caching)
    server = render(**compose_switches(setting))["services"]["server"]
    ours = server_setting(setting, ServerKnobs(pins.target_model))
    assert server["command"] == ours.args()
    rendered_env = {k: v for k, v in server["environment"].items() if k in ours.env()}
    assert rendered_env == ours.env()
    assert ServerSetting.from_args(server["command"], rendered_env) == ours


def test_j0_off(render: Renderer) -> None:
    server = render(VLLM_DFLASH_CTX_NOISE="0")["services"]["server"]
    assert server["environment"]["VLLM_DFLASH_CTX_NOISE"] == "0"
    assert after(server["command"], "--speculative-config") == SPEC_15


def test_prefix_caching_knob_reaches_j0_serve(render: Renderer, tmp_path: Path) -> None:
    """ENABLE_PREFIX_CACHING becomes vLLM's flag in `j0 serve`, which warns only for J0 on with
    prefix caching on (the rendered command and environment, checked by j0 serve's planner)."""
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"num_hidden_layers": 5, "dflash_config": {"causal_head": True, "causal": True}})
    )
    for knob, noise, flag, warned in (
        (None, None, "--enable-prefix-caching", True),
        ("0", None, "--no-enable-prefix-caching", False),
        ("1", "0", "--enable-prefix-caching", False),
    ):
        switches = {
            k: v
            for k, v in (("ENABLE_PREFIX_CACHING", knob), ("VLLM_DFLASH_CTX_NOISE", noise))
            if v is not None
        }
        server = render(**switches)["services"]["server"]
        args = [a.replace('"/drafter"', json.dumps(str(folder))) for a in server["command"]]
        env = {k: v for k, v in server["environment"].items() if v is not None}
        plan = serve_launch.plan_serve(args, env, api_key_file=None)
        assert plan.args[-1] == flag
        assert any("prefix caching is on with J0 on" in w for w in plan.warnings) is warned


def test_dumps_on(render: Renderer, tmp_path: Path) -> None:
    dumps = tmp_path / "my-dumps"
    server = render(VLLM_DFLASH_DUMP=str(dumps), VLLM_DFLASH_DUMP_STEPS="32")["services"]["server"]
    assert server["environment"]["VLLM_DFLASH_DUMP"] == "/dumps"
    assert server["environment"]["VLLM_DFLASH_DUMP_STEPS"] == "32"
    assert volume(server, "/dumps")["source"] == str(dumps)
    # Off, /dev/null is mounted (compose has no optional mounts): no folder is made on the host.
    server = render()["services"]["server"]
    assert volume(server, "/dumps")["source"] == "/dev/null"


def test_overlay_swap(render: Renderer, tmp_path: Path) -> None:
    swap = tmp_path / "speculator.py"
    swap.write_text("# another speculator.py\n")
    server = render(J0_OVERLAY=str(swap))["services"]["server"]
    mount = volume(server, str(serve_launch.DEFAULT_OVERLAY_MOUNT))
    assert mount["source"] == str(swap) and mount["read_only"] is True
    assert mount["type"] == "bind"
    assert "build" in server  # no rebuild needed: the image is the same
    # Unset: /dev/null at an unused path, nothing over the image's file.
    server = render()["services"]["server"]
    mount = volume(server, "/opt/j0/speculator")
    assert mount["source"] == "/dev/null" and mount["read_only"] is True
    assert not [v for v in server["volumes"] if v["target"].endswith(".py")]


def test_mounts_drafter_and_hf_cache(render: Renderer, pins: Pins) -> None:
    project = render()
    server, drafter = project["services"]["server"], project["services"]["drafter"]
    folder = str(ROOT / "drafter" / pins.drafter_revision)
    assert volume(server, "/drafter")["source"] == folder
    assert volume(server, "/drafter")["read_only"] is True
    assert volume(drafter, "/drafter")["source"] == folder
    assert not volume(drafter, "/drafter").get("read_only")
    hf = volume(server, "/root/.cache/huggingface/hub")
    assert hf["source"] == str(render.home / ".cache" / "huggingface" / "hub")
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
    # The merge patch is in the image (/opt/j0/drafter-config), built from this checkout.
    assert [v["target"] for v in drafter["volumes"]] == ["/drafter"]
    assert drafter["image"] == server["image"]
    server = render(HF_HOME="/data/hf", DRAFTER_DIR="/data/drafter")["services"]["server"]
    assert volume(server, "/root/.cache/huggingface/hub")["source"] == "/data/hf/hub"
    assert volume(server, "/drafter")["source"] == "/data/drafter"
    server = render(HF_HOME="/data/hf", HF_HUB_CACHE="/fast/hub")["services"]["server"]
    assert volume(server, "/root/.cache/huggingface/hub")["source"] == "/fast/hub"


def test_tokens_are_secrets_never_plain_environment(render: Renderer, tmp_path: Path) -> None:
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
        assert not {"HF_TOKEN", "HF_TOKEN_PATH", "VLLM_API_KEY"} & set(env), name
        assert env["HF_HOME"] == "/root/.cache/huggingface", name
        # huggingface_hub's default token file, $HF_HOME/token, is the secret.
        assert {"source": "hf_token", "target": "/root/.cache/huggingface/token"} in service[
            "secrets"
        ], name
    assert "api_key" in [s["source"] for s in project["services"]["server"]["secrets"]]
    # Unset: empty files, so no token and no API key.
    assert {s["file"] for s in render()["secrets"].values()} == {"/dev/null"}


def test_knobs_reach_the_command(render: Renderer) -> None:
    project = render(
        TARGET_MODEL="org/other-model",
        MAX_MODEL_LEN="65536",
        KV_CACHE_DTYPE="fp8",
        GPU_MEMORY_UTILIZATION="0.85",
        VLLM_ENGINE="image",
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
    render: Renderer, tmp_path: Path, pins: Pins
) -> None:
    dot_env = tmp_path / "dot.env"
    dot_env.write_text("TARGET_MODEL=from/dot-env\nNUM_SPEC_TOKENS=7\n")
    command = render(env_file=dot_env)["services"]["server"]["command"]
    assert command[0] == "from/dot-env" and after(command, "--speculative-config") == SPEC_7
    command = render(env_file=dot_env, TARGET_MODEL="from/shell")["services"]["server"]["command"]
    assert command[0] == "from/shell"
    assert render()["services"]["server"]["command"][0] == pins.target_model


def test_ci_override_drops_gpu_ports_and_healthcheck(render: Renderer) -> None:
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
    for name in (*COMPOSE_FILES, *ROUTE_FILES):
        lines = (ROOT / name).read_text().splitlines()
        code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", code))
    return names


def env_example_defaults() -> dict[str, str]:
    """The `# KEY=VALUE` lines of .env.example: each claims to hold the default."""
    text = (ROOT / ".env.example").read_text()
    return dict(re.findall(r"^# ([A-Z][A-Z0-9_]*)=(.*)$", text, re.MULTILINE))


def test_env_example_documents_every_variable() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = set(env_example_defaults())
    for names in re.findall(r"^# ((?:[A-Z][A-Z0-9_]*, )*[A-Z][A-Z0-9_]*): ", text, re.MULTILINE):
        documented |= set(names.split(", "))
    used = compose_variables() | {"HF_ENDPOINT", "HF_HUB_OFFLINE"}
    assert used - documented == set()
    assert documented - used == set()


def test_env_example_default_lines_change_nothing(render: Renderer, tmp_path: Path) -> None:
    """Uncommenting `# KEY=VALUE` lines of .env.example as they stand must render the project
    exactly as with no .env at all (an example there, such as `VLLM_IMAGE=`, breaks the build)."""
    defaults = env_example_defaults()
    assert len(defaults) >= 10, defaults
    baseline = render()

    def rendered(lines: dict[str, str]) -> dict[str, Any]:
        dot_env = tmp_path / "dot.env"
        dot_env.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return render(env_file=dot_env)

    if rendered(defaults) != baseline:
        differ = [k for k, v in defaults.items() if rendered({k: v}) != baseline]
        pytest.fail(f".env.example lines that are not the default: {differ}")


def test_folder_knobs_are_folders_of_the_project_never_named_volumes(
    render: Renderer, pins: Pins
) -> None:
    """Short syntax would turn `DRAFTER_DIR=mydrafter` (no ./) into a named volume."""
    project = render(DRAFTER_DIR="mydrafter", VLLM_DFLASH_DUMP="mydumps", HF_HUB_CACHE="myhub")
    assert "volumes" not in project  # no named volume anywhere
    server, drafter = project["services"]["server"], project["services"]["drafter"]
    for service, target, folder in (
        (drafter, "/drafter", "mydrafter"),
        (server, "/drafter", "mydrafter"),
        (server, "/dumps", "mydumps"),
        (server, "/root/.cache/huggingface/hub", "myhub"),
    ):
        mount = volume(service, target)
        assert mount["type"] == "bind" and mount["source"] == str(ROOT / folder), mount
        if not mount.get("read_only"):
            assert mount["bind"]["create_host_path"] is True, mount


def test_the_default_drafter_folder_is_the_one_j0_drafter_fetch_uses(
    render: Renderer, pins: Pins
) -> None:
    """`j0 drafter fetch` on the host (from the checkout) and `docker compose up` share one
    download of the pinned drafter."""
    from j0.drafter import fetch as drafter_fetch

    drafter = render()["services"]["drafter"]
    expected = ROOT / drafter_fetch.default_dir(pins.drafter_revision)
    assert volume(drafter, "/drafter")["source"] == str(expected)


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
        r"^include:\n  - path: compose\.serve\.yaml\n    env_file:\n      - overlay/pins\.env\n"
        r"      - overlay/route-\$\{VLLM_ENGINE:-wheel\}\.env$",
        text,
        re.MULTILINE,
    )


# --- compose.plugin.yaml: the plugin route ----------------------------------------------------


def test_the_plugin_route_serves_vllms_release_with_the_switches(
    render: Renderer, pins: Pins
) -> None:
    """vLLM's own release image (V0340_IMAGE) with j0 installed, method dflash_j0, J0 on and the
    article's variant by default; J0_ON and J0_VARIANT land in speculator_options."""
    server = render(files=("compose.plugin.yaml",))["services"]["server"]
    assert server["build"]["dockerfile"] == "docker/plugin.Dockerfile"
    assert server["build"]["args"] == {"VLLM_IMAGE": pins.values["V0340_IMAGE"]}
    assert server["entrypoint"] == [
        "j0",
        "serve",
        "--then",
        "/usr/local/bin/j0-plugin-entrypoint",
        "--",
    ]
    spec = json.loads(after(server["command"], "--speculative-config"))
    assert spec == {
        "method": "dflash_j0",
        "model": "/drafter",
        "num_speculative_tokens": 15,
        "kv_cache_dtype": "auto",
        "speculator_options": {"j0": True, "variant": "article"},
    }
    assert not any(k.startswith("VLLM_DFLASH") for k in server["environment"])
    off = render(files=("compose.plugin.yaml",), J0_ON="false", J0_VARIANT="prefix-safe")
    spec = json.loads(after(off["services"]["server"]["command"], "--speculative-config"))
    assert spec["speculator_options"] == {"j0": False, "variant": "prefix-safe"}


def test_a_j0_on_that_is_not_a_json_boolean_is_refused_by_j0_serve(
    render: Renderer, tmp_path: Path
) -> None:
    server = render(files=("compose.plugin.yaml",), J0_ON="1")["services"]["server"]
    raw = after(server["command"], "--speculative-config")
    spec = json.loads(raw)
    spec["model"] = str(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"dflash_config": {"causal": True}}))
    with pytest.raises(J0Error, match=r"speculator_options\.j0=1: expected true"):
        serve_launch.plan_serve(["Qwen/Test", "--speculative-config", json.dumps(spec)], {})
