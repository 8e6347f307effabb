"""`j0 bench matrix` with the compose backend: settings, the results folder, and the whole matrix on
the stand-in image with compose.

The docker tests run compose.yaml + compose.ci.yaml (stand-in image B, no GPU, host networking,
the drafter fetched from tests/servers/hub/server.py on 127.0.0.1) and
tests/bench/compose.matrix-ci.yaml, which makes the server's `vllm` our vLLM stand-in
(tests/servers/vllm/server.py via tests/bench/matrix_bin/vllm) on the host's 127.0.0.1:PORT;
`j0 bench run` is the real one. Without an engine or the compose plugin they skip, except with
J0_REQUIRE_DOCKER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from compose.compose_cli import require_compose
from conftest import OwnImages
from j0.bench.matrix.compose.project import rendered_setting
from j0.bench.matrix.settings import matrix_settings
from j0.cli import main as j0_main
from j0.compose.server import MatrixPoint
from j0.errors import J0Error
from j0.pins import Pins
from servers.base import free_port
from servers.local import HubProcess

ROOT = Path(__file__).resolve().parents[2]
CI_FILES = ("compose.yaml", "compose.ci.yaml", "tests/bench/compose.matrix-ci.yaml")
# Compose knobs that the shell must not leak into these tests (compose/compose_cli.py's and ours).
KNOBS = (
    "TARGET_MODEL VLLM_IMAGE DRAFTER_REPO DRAFTER_REVISION J0_IMAGE NUM_SPEC_TOKENS MAX_MODEL_LEN "
    "KV_CACHE_DTYPE GPU_MEMORY_UTILIZATION PORT VLLM_DFLASH_CTX_NOISE VLLM_DFLASH_DUMP "
    "VLLM_DFLASH_DUMP_STEPS J0_OVERLAY DRAFTER_DIR HF_HOME HF_HUB_CACHE HF_TOKEN HF_TOKEN_PATH "
    "HF_TOKEN_FILE API_KEY_FILE HF_ENDPOINT HF_HUB_OFFLINE ENABLE_PREFIX_CACHING COMPOSE_FILE "
    "COMPOSE_PROJECT_NAME COMPOSE_PROFILES J0_TEST_STANDIN_SERVER VLLM_ENGINE WHEEL_INDEX"
).split()


def clean_env(monkeypatch: pytest.MonkeyPatch, home: Path, **knobs: str) -> None:
    for name in KNOBS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    for name, value in knobs.items():
        monkeypatch.setenv(name, value)


def load(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text())
    return value


# --- settings and usage -------------------------------------------------------------------------


def test_settings_are_tokens_by_j0_in_the_order_given() -> None:
    names = [s.name for s in matrix_settings("15,7", "off,on", False)]
    assert names == ["k15-j0-off", "k15-j0-on", "k7-j0-off", "k7-j0-on"]
    assert [s.name for s in matrix_settings("7", "on", True)] == ["k7-j0-on"]
    assert matrix_settings("7", "on", True)[0].prefix_caching is True
    with_baseline = matrix_settings("7", "off,on", False, baseline=True)
    assert [s.name for s in with_baseline] == ["baseline", "k7-j0-off", "k7-j0-on"]
    assert with_baseline[0].to_json()["baseline"] is True


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--tokens", "15,x", "'x' is not a positive integer"),
        ("--tokens", "0", "'0' is not a positive integer"),
        ("--tokens", "15,15", "given twice"),
        ("--j0", "off,maybe", "'maybe' is neither 'off' nor 'on'"),
        ("--j0", "on,", "without empty items"),
    ],
)
def test_bad_settings_are_usage_errors(
    flag: str, value: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = j0_main(["bench", "matrix", "--out", str(tmp_path / "o"), flag, value])
    assert code == 64
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_shards_need_the_k8s_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert j0_main(["bench", "matrix", "--out", str(tmp_path / "o"), "--shards", "2"]) == 64
    assert "--backend k8s" in capsys.readouterr().err


def test_a_finished_matrix_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "matrix.json").write_text("{}\n")
    assert j0_main(["bench", "matrix", "--out", str(tmp_path), "--dry-run"]) == 64
    assert "choose another --out" in capsys.readouterr().err
    assert (tmp_path / "matrix.json").read_text() == "{}\n"


# --- what compose renders -------------------------------------------------------------------------


def test_rendered_setting_reads_the_server_service() -> None:
    spec = (
        '{"method":"dflash","model":"/drafter","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'
    )
    project = {
        "services": {
            "server": {
                "command": ["m", "--speculative-config", spec, "--no-enable-prefix-caching"],
                "environment": {"VLLM_DFLASH_CTX_NOISE": "1", "HF_HOME": "/x"},
            }
        }
    }
    setting, command, env = rendered_setting(project)
    assert setting == MatrixPoint(7, True, False)
    assert command[0] == "m" and env == {"VLLM_DFLASH_CTX_NOISE": "1"}
    project["services"]["server"]["environment"]["VLLM_DFLASH_CTX_NOISE"] = "yes"
    with pytest.raises(J0Error, match="VLLM_DFLASH_CTX_NOISE='yes'"):
        rendered_setting(project)


def test_dry_run_renders_every_setting_through_compose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No engine needed: `docker compose config` per setting, recorded in matrix.json."""
    require_compose()
    clean_env(monkeypatch, tmp_path)
    out = tmp_path / "out"
    assert j0_main(["bench", "matrix", "--out", str(out), "--dry-run", "--requests", "2"]) == 0
    record = load(out / "matrix.json")
    assert record["backend"] == "compose" and record["prefix_caching"] is False
    assert record["requests"] == 2 and record["dataset"] == "synthetic"
    assert len((out / "prompts.jsonl").read_text().splitlines()) == 2
    for setting in record["settings"]:
        assert setting["status"] == "rendered", setting
        n = setting["num_speculative_tokens"]
        assert f'"num_speculative_tokens":{n},' in " ".join(setting["server_args"])
        assert setting["server_env"]["VLLM_DFLASH_CTX_NOISE"] == ("1" if setting["j0"] else "0")
        assert setting["server_env"]["ENABLE_PREFIX_CACHING"] == "0"
        assert "--per-request-spec-decode-metrics" in setting["server_args"]


def test_a_project_that_ignores_a_switch_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compose file that pins J0 on: the J0-off settings would run with J0; they are refused."""
    require_compose()
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text("services:\n  server:\n    environment:\n      - VLLM_DFLASH_CTX_NOISE=1\n")
    clean_env(monkeypatch, tmp_path, COMPOSE_FILE=f"{ROOT / 'compose.yaml'}{os.pathsep}{pinned}")
    out = tmp_path / "out"
    code = j0_main(
        ["bench", "matrix", "--out", str(out), "--dry-run", "--requests", "1", "--prefix-caching"]
    )
    assert code == 1
    status = {s["name"]: s for s in load(out / "matrix.json")["settings"]}
    assert status["k15-j0-on"]["status"] == "rendered"
    assert status["k15-j0-off"]["status"] == "failed"
    assert "renders" in status["k15-j0-off"]["error"]


# --- the matrix on the stand-in image -----------------------------------------------------------


@dataclass
class Stack:
    env: dict[str, str]
    project: str

    def compose(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *args], cwd=ROOT, env=self.env, capture_output=True, text=True
        )


@pytest.fixture
def stack(
    pins: Pins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_images: OwnImages
) -> Iterator[Stack]:
    """The environment `j0 bench matrix` runs in: the CI compose files, stand-in B, our Hub.
    The image compose builds has a tag of this run's own, removed afterwards (own_images)."""
    from conftest import require_docker

    require_docker()
    require_compose()
    from standin import build as standin

    base = standin.image_b(pins)
    hub = HubProcess()
    project = f"j0-matrix-test-{os.getpid()}"
    tag = own_images.tag("matrix")
    clean_env(
        monkeypatch,
        tmp_path / "home",
        COMPOSE_FILE=os.pathsep.join(str(ROOT / f) for f in CI_FILES),
        COMPOSE_PROJECT_NAME=project,
        VLLM_ENGINE="image",  # the stand-in's own vLLM: the wheel route is tested in tests/image
        VLLM_IMAGE=base,
        J0_IMAGE=tag,
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf"),
        DRAFTER_DIR=str(tmp_path / "drafter"),
        PORT=str(free_port()),
    )
    stack = Stack(dict(os.environ), project)
    try:
        yield stack
    finally:
        hub.stop()
        stack.compose("down", "--remove-orphans")
        own_images.record_tag(tag)


@pytest.mark.docker
@pytest.mark.slow
def test_matrix_on_the_standin_image_with_compose(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    code = j0_main(
        ["bench", "matrix", "--out", str(out), "--dataset", "synthetic:40,80",
         "--requests", "3", "--max-tokens", "24"]
    )  # fmt: skip
    took = time.monotonic() - started
    record = load(out / "matrix.json")
    assert code == 0, json.dumps(record, indent=1)
    assert record["backend"] == "compose" and record["prefix_caching"] is False
    prompts = [json.loads(x)["id"] for x in (out / "prompts.jsonl").read_text().splitlines()]
    acceptance: dict[str, float] = {}
    for setting in record["settings"]:
        name = setting["name"]
        assert setting["status"] == "ok", setting
        assert setting["results"] == [f"{name}/result.json"]
        result = load(out / name / "result.json")
        assert result["complete"] is True and result["label"] == name
        assert [r["prompt_id"] for r in result["requests"]] == prompts  # the same prompts
        assert len(result["per_position_acceptance"]) == setting["num_speculative_tokens"]
        assert result["manifest"]["j0"] == ("on" if setting["j0"] else "off")
        acceptance[name] = result["acceptance_length"]
        log = (out / name / "server.log").read_text()
        assert "identity=article" in log  # the image's entrypoint ran, with the article's file
        (line,) = [x for x in log.splitlines() if x.startswith("j0-matrix-standin: ")]
        seen = json.loads(line.removeprefix("j0-matrix-standin: "))
        assert seen["num_speculative_tokens"] == setting["num_speculative_tokens"]
        assert seen["j0"] is setting["j0"]
        assert seen["prefix_caching"] is False  # off unless --prefix-caching
    # The stand-in accepts more with J0 on: each setting's server got its switch.
    assert acceptance["k15-j0-on"] > acceptance["k15-j0-off"]
    assert acceptance["k7-j0-on"] > acceptance["k7-j0-off"]
    assert j0_main(["bench", "report", str(out)]) == 0
    table = (out / "report.md").read_text()
    for setting in record["settings"]:
        j0 = ("on" if setting["j0"] else "off") + " (as run)"  # the matrix read its log
        row = f"| {setting['name']} | {setting['num_speculative_tokens']} | {j0} | off | 3/3 |"
        assert row in table, table
    # `down` after each setting: nothing of the project is left running.
    ps = stack.compose("ps", "--all", "--format", "json")
    assert ps.stdout.strip() in ("", "[]"), ps.stdout
    print(f"matrix of 4 settings on the stand-in image: {took:.0f} s")


@pytest.mark.docker
@pytest.mark.slow
def test_a_server_that_exits_fails_at_once_with_its_log(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("J0_TEST_STANDIN_SERVER", "/opt/j0-matrix/servers/no-such-server.py")
    out = tmp_path / "out"
    started = time.monotonic()
    code = j0_main(["bench", "matrix", "--out", str(out), "--tokens", "7", "--j0", "on"])
    took = time.monotonic() - started
    assert code == 1
    (setting,) = load(out / "matrix.json")["settings"]
    assert setting["status"] == "failed"
    assert "the server container is exited" in setting["error"]
    assert "no-such-server.py" in setting["error"]  # its log is in the error
    assert "no-such-server.py" in (out / "k7-j0-on" / "server.log").read_text()
    assert took < 300, took  # not the health bound (an hour)


def test_dry_run_renders_the_baseline_without_speculative_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline's project: the user's compose files plus OUT/baseline/compose.baseline.yaml,
    rendered by the real `docker compose config`: `vllm serve` with the server's arguments less
    --speculative-config (`j0 serve` would refuse them), prefix caching off as the flag."""
    require_compose()
    clean_env(monkeypatch, tmp_path)
    out = tmp_path / "out"
    code = j0_main(
        ["bench", "matrix", "--out", str(out), "--dry-run", "--requests", "1", "--tokens", "7",
         "--j0", "on", "--baseline"]
    )  # fmt: skip
    assert code == 0
    base, spec = load(out / "matrix.json")["settings"]
    assert base["name"] == "baseline" and base["status"] == "rendered", base
    assert base["baseline"] is True and base["num_speculative_tokens"] == 0
    assert "--speculative-config" not in base["server_args"]
    # vLLM 0.33 refuses per-request spec-decode metrics without speculative decoding
    assert "--per-request-spec-decode-metrics" not in base["server_args"]
    assert base["server_args"][-1] == "--no-enable-prefix-caching"
    assert base["server_env"]["VLLM_DFLASH_CTX_NOISE"] == "0"
    # Everything else as the speculative setting's server has it.
    others = list(spec["server_args"])
    for dropped in ("--speculative-config", "--per-request-spec-decode-metrics"):
        at = others.index(dropped)
        del others[at : at + 2]
    assert base["server_args"][:-1] == others
    override = json.loads(
        "".join((out / "baseline" / "compose.baseline.yaml").read_text().splitlines(True)[1:])
    )
    assert override["services"]["server"]["entrypoint"] == ["vllm", "serve"]
    assert not (out / "k7-j0-on").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_baseline_and_repeats_with_compose(stack: Stack, tmp_path: Path) -> None:
    """--baseline --repeats 2 on the stand-in image: the baseline's server is `vllm serve`
    without --speculative-config (no speculative metrics); the report compares with it."""
    out = tmp_path / "out"
    code = j0_main(
        ["bench", "matrix", "--out", str(out), "--dataset", "synthetic:40,80", "--requests", "2",
         "--max-tokens", "24", "--tokens", "7", "--j0", "on", "--baseline", "--repeats", "2"]
    )  # fmt: skip
    record = load(out / "matrix.json")
    assert code == 0, json.dumps(record, indent=1)
    assert [s["name"] for s in record["settings"]] == ["baseline", "k7-j0-on"]
    log = (out / "baseline" / "server.log").read_text()
    (line,) = [x for x in log.splitlines() if x.startswith("j0-matrix-standin: ")]
    seen = json.loads(line.removeprefix("j0-matrix-standin: "))
    assert seen["num_speculative_tokens"] is None and seen["prefix_caching"] is False
    base = load(out / "baseline" / "result.json")
    assert base["acceptance_length"] is None and len(base["requests"]) == 4
    assert [r["repeat"] for r in base["requests"]] == [0, 0, 1, 1]
    assert j0_main(["bench", "report", str(out)]) == 0
    block = load(out / "report.json")["baseline"]
    assert block["setting"] == "baseline"
    outputs = block["settings"]["k7-j0-on"]["outputs"]
    assert outputs["compared"] == 4 and outputs["lossless"] is True  # the stand-in is lossless
    assert block["settings"]["k7-j0-on"]["speedup"]["n"] == 2
