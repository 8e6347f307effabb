"""deploy/k8s/ (j0/kube/serving.py) and the matrix's manifests (matrix/k8s/render.py): current
with the pins, valid for Kubernetes 1.29 and the newest version kubernetes-validate ships
(--strict), and running the server with exactly the arguments compose.yaml renders (`docker
compose config`, real compose).

No cluster is needed; the compose tests skip without the compose plugin (fail with
J0_REQUIRE_DOCKER=1).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compose.compose_cli import require_compose
from j0.bench.matrix.k8s import pod as k8s_pod
from j0.bench.matrix.k8s import render as k8s_render
from j0.bench.matrix.k8s.plan import BenchOptions, PlanDocument, build_plan
from j0.bench.matrix.settings import matrix_settings
from j0.compose.server import MatrixPoint, ServerKnobs
from j0.kube import objects as kube_objects
from j0.kube import serving as kube_serving
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "k8s"
OLDEST = "1.29.0"
# Compose knobs that the shell must not leak into rendering (tests/compose/compose_cli.py's list).
COMPOSE_KNOBS = (
    "TARGET_MODEL VLLM_IMAGE DRAFTER_REPO DRAFTER_REVISION J0_IMAGE NUM_SPEC_TOKENS MAX_MODEL_LEN "
    "KV_CACHE_DTYPE GPU_MEMORY_UTILIZATION PORT VLLM_DFLASH_CTX_NOISE VLLM_DFLASH_DUMP "
    "VLLM_DFLASH_DUMP_STEPS J0_OVERLAY DRAFTER_DIR HF_HOME HF_HUB_CACHE HF_TOKEN HF_TOKEN_PATH "
    "HF_TOKEN_FILE API_KEY_FILE HF_ENDPOINT HF_HUB_OFFLINE ENABLE_PREFIX_CACHING COMPOSE_FILE "
    "COMPOSE_PROJECT_NAME COMPOSE_PROFILES"
).split()


def newest_version() -> str:
    from kubernetes_validate import utils

    return str(utils.latest_version())


def validate(paths: list[Path], strict: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubernetes_validate", "--no-warn"]
    cmd += ["--strict"] if strict else []
    for version in (OLDEST, newest_version()):
        cmd += ["-k", version]
    return subprocess.run(
        [*cmd, *map(str, paths)], capture_output=True, text=True, check=False, timeout=300
    )


def matrix_docs(pins: Pins, shards: int = 2) -> dict[str, dict[str, Any]]:
    knobs = ServerKnobs(target_model=pins.target_model)
    settings = matrix_settings("15,7", "off,on", prefix_caching=False)
    lines = [json.dumps({"id": f"p{i}", "prompt": f"prompt {i}"}) for i in range(5)]
    plan = build_plan(
        "j0-matrix-test", settings, knobs, shards, BenchOptions(None, len(lines), 64), lines
    )
    options = k8s_render.K8sOptions(image="registry.example/j0:test", namespace="bench")
    return k8s_render.matrix_manifests(pins, knobs, plan, options, parallelism=3)


# --- the committed files ------------------------------------------------------------------------


def test_deploy_files_are_current(pins: Pins) -> None:
    """deploy/k8s/ is what the renderer makes from overlay/pins.env (regenerate: `j0 deploy
    render`)."""
    knobs = ServerKnobs(target_model=pins.target_model)
    expected = kube_serving.deploy_files(pins, knobs, kube_serving.default_image(pins))
    committed = {
        str(p.relative_to(DEPLOY)): p.read_text() for p in DEPLOY.rglob("*.yaml") if p.is_file()
    }
    assert set(committed) == set(expected)
    for name, text in expected.items():
        assert committed[name] == text, f"deploy/k8s/{name} is stale: j0 deploy render"


# The order the renderer writes deploy/k8s/ in: the serving files, then the chart's values.
WRITE_ORDER = [
    *(
        f"serving/{n}"
        for n in ("pvc.yaml", "deployment.yaml", "service.yaml", "kustomization.yaml")
    ),
    "production-stack/values.yaml",
]


def test_j0_deploy_render_writes_the_committed_files(tmp_path: Path) -> None:
    """`j0 deploy render DIR` (and `python -m j0.kube.serving DIR`) writes what
    deploy/k8s/ holds, and says what it wrote; a second run has nothing to write."""
    committed = {str(p.relative_to(DEPLOY)): p.read_bytes() for p in DEPLOY.rglob("*.yaml")}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    for how in (["-m", "j0", "deploy", "render"], ["-m", "j0.kube.serving"]):
        out = tmp_path / how[-1]
        done = subprocess.run(
            [sys.executable, *how, str(out)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert written == committed
        assert done.stdout == "".join(f"wrote {out / name}\n" for name in WRITE_ORDER)
        again = subprocess.run(
            [sys.executable, *how, str(out)], env=env, capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 0 and again.stdout == ""
    record = tmp_path / "render.json"
    done = subprocess.run(
        [sys.executable, "-m", "j0", "deploy", "render", str(out), "--json", str(record)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == "", done.stderr
    said = json.loads(record.read_text())
    assert (said["dir"], said["written"]) == (str(out), [])
    assert said["files"] == {
        name: hashlib.sha256(data).hexdigest() for name, data in sorted(committed.items())
    }


def test_no_pinned_value_is_typed_in_the_code(pins: Pins) -> None:
    """The pins reach the manifests through load_pins(); the code that renders them types none."""
    values = [
        pins.vllm_commit,
        pins.vllm_commit[:8],
        pins.drafter_repo,
        pins.drafter_revision,
        pins.target_model,
        pins.vllm_image,
        pins.patched_sha256,
        pins.base_sha256,
    ]
    paths = sorted((ROOT / "scripts" / "j0" / "bench" / "matrix").rglob("*.py"))
    paths += sorted((ROOT / "scripts" / "j0" / "deploy").rglob("*.py"))
    paths += sorted((ROOT / "scripts" / "j0" / "kube").rglob("*.py"))
    paths += [ROOT / "scripts" / "j0" / "compose" / "server.py"]
    assert any(p.name == "render.py" for p in paths)
    for path in paths:
        text = path.read_text()
        for value in values:
            assert value not in text, f"{path.name} types the pin {value}"


# --- kubernetes-validate ------------------------------------------------------------------------


def test_manifests_validate_strictly_on_1_29_and_the_newest(pins: Pins, tmp_path: Path) -> None:
    assert newest_version() >= "1.37", newest_version()
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(kube_objects.to_yaml(list(matrix_docs(pins).values())))
    files = [p for p in DEPLOY.rglob("*.yaml") if p.parent.name == "serving"]
    files = [p for p in files if p.name != "kustomization.yaml"]  # not an API object
    assert {p.name for p in files} == {"deployment.yaml", "pvc.yaml", "service.yaml"}
    done = validate([*files, matrix])
    assert done.returncode == 0, done.stdout + done.stderr
    checked = [line for line in done.stdout.splitlines() if " passed for resource " in line]
    # 3 serving objects + PVC, ConfigMap, prepare Job, Indexed Job; each against both versions.
    assert len(checked) == 2 * 7, done.stdout


def test_validation_rejects_what_a_cluster_would(pins: Pins, tmp_path: Path) -> None:
    """The check can fail: an unknown field (strict), and a sidecar field on an old schema."""
    docs = matrix_docs(pins)
    job = json.loads(json.dumps(docs["job"]))
    job["spec"]["template"]["spec"]["initContainers"][0]["sidecar"] = True
    bad = tmp_path / "bad.yaml"
    bad.write_text(kube_objects.to_yaml([job]))
    done = validate([bad])
    assert done.returncode != 0 and "sidecar" in done.stdout + done.stderr
    # Kubernetes 1.27 has no backoffLimitPerIndex and no restartPolicy on init containers.
    good = tmp_path / "good.yaml"
    good.write_text(kube_objects.to_yaml([docs["job"]]))
    old = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "-k", "1.27.0", str(good)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert old.returncode != 0, old.stdout


# --- the matrix's shape ---------------------------------------------------------------------------


def test_one_indexed_job_with_vllm_as_a_native_sidecar(pins: Pins) -> None:
    docs = matrix_docs(pins, shards=2)
    job = docs["job"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == 4 * 2 and spec["parallelism"] == 3
    assert spec["backoffLimitPerIndex"] >= 1  # a retry keeps its index
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # backoffLimitPerIndex requires it
    (sidecar,) = pod["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["startupProbe"]["httpGet"]["path"] == "/v1/models"
    probe = sidecar["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 1800  # a 27B load
    assert sidecar["resources"]["limits"] == {"cpu": "16", "memory": "160Gi", "nvidia.com/gpu": "1"}
    (bench,) = pod["containers"]
    env = {e["name"]: e["value"] for e in bench["env"]}
    assert env["J0_SERVER_URL"] == "http://127.0.0.1:8000"
    assert env["J0_RESULTS_DIR"] == "/results/j0-matrix-test"
    mounts = {m["mountPath"]: m for m in bench["volumeMounts"]}
    assert mounts["/results"]["subPath"] == "results" and mounts["/plan"]["readOnly"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["plan"]["configMap"]["name"] == "j0-matrix-test"
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert volumes["cache"]["persistentVolumeClaim"]["claimName"] == docs["pvc"]["metadata"]["name"]
    # The prepare Job fetches the drafter once, with the pinned repo and revision.
    (fetch,) = docs["prepare"]["spec"]["template"]["spec"]["initContainers"]
    assert fetch["command"] == ["j0", "drafter", "fetch"]
    assert fetch["args"] == [
        "--repo-id",
        pins.drafter_repo,
        "--revision",
        pins.drafter_revision,
        "--dir",
        "/drafter",
    ]
    for doc in docs.values():
        assert doc["metadata"].get("namespace") == "bench"


def test_plan_gives_every_index_its_setting_and_shard(pins: Pins) -> None:
    docs = matrix_docs(pins, shards=2)
    plan = json.loads(docs["configmap"]["data"]["plan.json"])
    seen = [(t["setting"], t["shard"]) for t in plan["indexes"]]
    assert seen == [
        ("k15-j0-off", 0),
        ("k15-j0-off", 1),
        ("k15-j0-on", 0),
        ("k15-j0-on", 1),
        ("k7-j0-off", 0),
        ("k7-j0-off", 1),
        ("k7-j0-on", 0),
        ("k7-j0-on", 1),
    ]
    assert [t["index"] for t in plan["indexes"]] == list(range(8))
    # Shards split the five prompts round robin, each prompt once per setting.
    assert [t["prompt_positions"] for t in plan["indexes"][:2]] == [[0, 2, 4], [1, 3]]
    assert [t["requests"] for t in plan["indexes"][:2]] == [3, 2]
    assert set(docs["configmap"]["binaryData"]) == {
        "prompts-shard-00.jsonl.gz",
        "prompts-shard-01.jsonl.gz",
    }
    argv, env = k8s_pod.server_command(PlanDocument.from_json(plan, "plan.json"), 5)  # k7 off, 1
    assert argv[:3] == ["j0", "serve", "--"]
    assert '"num_speculative_tokens":7,' in argv[argv.index("--speculative-config") + 1]
    assert env["VLLM_DFLASH_CTX_NOISE"] == "0"


# --- the same server as compose -------------------------------------------------------------------


def compose_server(home: Path, **knobs: str) -> dict[str, Any]:
    """compose.yaml's server service as `docker compose config` renders it with these knobs."""
    env = {k: v for k, v in os.environ.items() if k not in COMPOSE_KNOBS}
    env.update(HOME=str(home), **knobs)
    done = subprocess.run(
        [
            "docker",
            "compose",
            "--env-file",
            os.devnull,
            "-f",
            str(ROOT / "compose.yaml"),
            "config",
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    server: dict[str, Any] = json.loads(done.stdout)["services"]["server"]
    return server


SWITCHES = [MatrixPoint(n, j0, pc) for n in (15, 7) for j0 in (False, True) for pc in (False, True)]


@pytest.mark.parametrize("setting", SWITCHES, ids=lambda s: f"{s.name}-pc{int(s.prefix_caching)}")
def test_matrix_server_arguments_equal_composes(
    setting: MatrixPoint, pins: Pins, tmp_path: Path
) -> None:
    require_compose()
    from j0.compose.server import compose_switches

    server = compose_server(tmp_path, **compose_switches(setting))
    knobs = ServerKnobs(target_model=pins.target_model)
    plan = build_plan("j0-matrix-x", [setting], knobs, 1, BenchOptions(None, 1, 8), None)
    docs = k8s_render.matrix_manifests(
        pins, knobs, plan, k8s_render.K8sOptions(image="x/y:z"), parallelism=1
    )
    rendered = json.loads(docs["configmap"]["data"]["plan.json"])
    argv, env = k8s_pod.server_command(PlanDocument.from_json(rendered, "plan.json"), 0)
    assert argv[:3] == ["j0", "serve", "--"] and server["entrypoint"] == ["j0", "serve", "--"]
    assert argv[3:] == server["command"]
    from j0.bench.matrix.compose.project import prefix_caching_of

    assert prefix_caching_of(server["command"], server["environment"]) == setting.prefix_caching
    assert set(env) >= {"VLLM_DFLASH_CTX_NOISE", "ENABLE_PREFIX_CACHING"}
    for name, value in env.items():
        assert server["environment"][name] == value, name


def test_serving_deployment_runs_composes_default_server(pins: Pins, tmp_path: Path) -> None:
    require_compose()
    server = compose_server(tmp_path)
    deployment = kube_serving.serving_manifests(
        pins, ServerKnobs(target_model=pins.target_model), "x/y:z"
    )["deployment.yaml"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == server["entrypoint"]
    assert container["args"] == server["command"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    names = ("VLLM_DFLASH_CTX_NOISE", "ENABLE_PREFIX_CACHING", "VLLM_DFLASH_DUMP",
             "VLLM_DFLASH_DUMP_STEPS", "HF_HOME")  # fmt: skip
    for name in names:
        assert env[name] == server["environment"][name], name
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["startupProbe"]["httpGet"]["path"] == "/v1/models"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    (init,) = pod["initContainers"]
    assert init["command"][:3] == ["j0", "drafter", "fetch"]
    assert init["args"][init["args"].index("--dir") + 1] == "/drafter"


def chart_command(values: dict[str, Any]) -> list[str]:
    """The `vllm serve` command that the production-stack chart's deployment-vllm-multi.yaml
    template builds from these values (its order: model, --host, --port, the prefix-caching
    flag from vllmConfig.enablePrefixCaching, then vllmConfig.extraArgs)."""
    (spec,) = values["servingEngineSpec"]["modelSpec"]
    config = spec["vllmConfig"]
    flag = (
        "--enable-prefix-caching" if config["enablePrefixCaching"] else "--no-enable-prefix-caching"
    )
    return [spec["modelURL"], "--host", "0.0.0.0", "--port", "8000", flag, *config["extraArgs"]]


def options(args: list[str]) -> tuple[str, dict[str, str | None]]:
    model, rest, found = args[0], args[1:], {}
    i = 0
    while i < len(rest):
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            found[rest[i]] = rest[i + 1]
            i += 2
        else:
            found[rest[i]] = None
            i += 1
    return model, found


def test_production_stack_values_serve_composes_flags(pins: Pins, tmp_path: Path) -> None:
    """The chart orders flags its own way and adds --host; the drafter lives in its PVC at /data."""
    require_compose()
    server = compose_server(tmp_path)
    values = kube_serving.helm_values(pins, ServerKnobs(target_model=pins.target_model), "r/j0:t")
    chart_model, chart = options(chart_command(values))
    compose_model, composed = options(server["command"])
    assert chart_model == compose_model == pins.target_model
    assert chart.pop("--host") == "0.0.0.0"
    spec_chart = json.loads(chart.pop("--speculative-config") or "")
    spec_compose = json.loads(composed.pop("--speculative-config") or "")
    assert spec_chart.pop("model") == "/data/drafter" and spec_compose.pop("model") == "/drafter"
    assert spec_chart == spec_compose
    from j0.bench.matrix.compose.project import prefix_caching_of

    caching = prefix_caching_of(server["command"], server["environment"])
    for flag in ("--enable-prefix-caching", "--no-enable-prefix-caching"):
        composed.pop(flag, None)
    assert (
        chart.pop("--enable-prefix-caching" if caching else "--no-enable-prefix-caching", 1) is None
    )
    assert chart == composed
    (spec,) = values["servingEngineSpec"]["modelSpec"]
    assert f"{spec['repository']}:{spec['tag']}" == "r/j0:t"
    env = {e["name"]: e["value"] for e in spec["env"] if "value" in e}
    assert env["VLLM_DFLASH_CTX_NOISE"] == server["environment"]["VLLM_DFLASH_CTX_NOISE"]
    assert spec["initContainer"]["command"] == ["j0", "drafter", "fetch"]
    assert spec["initContainer"]["mountPvcStorage"] is True


@pytest.mark.parametrize("caching", [False, True])
def test_baseline_server_arguments_equal_composes(
    caching: bool, pins: Pins, tmp_path: Path
) -> None:
    """The baseline's sidecar (`vllm serve ARGS`) and the compose backend's baseline override,
    both rendered: the same program and arguments."""
    require_compose()
    from j0.bench.matrix.compose.project import BASELINE_FILE, baseline_override
    from j0.compose.server import compose_switches

    setting = MatrixPoint(0, False, caching)
    switches = compose_switches(setting)
    plain = compose_server(tmp_path, **switches)
    override = tmp_path / BASELINE_FILE
    override.write_text(baseline_override({"services": {"server": plain}}, caching))
    env = {k: v for k, v in os.environ.items() if k not in COMPOSE_KNOBS}
    env.update(HOME=str(tmp_path), **switches)
    done = subprocess.run(
        ["docker", "compose", "--env-file", os.devnull, "-f", str(ROOT / "compose.yaml"),
         "-f", str(override), "config", "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)["services"]["server"]
    knobs = ServerKnobs(target_model=pins.target_model)
    plan = build_plan("j0-matrix-x", [setting], knobs, 1, BenchOptions(None, 1, 8), None)
    docs = k8s_render.matrix_manifests(
        pins, knobs, plan, k8s_render.K8sOptions(image="x/y:z"), parallelism=1
    )
    rendered = json.loads(docs["configmap"]["data"]["plan.json"])
    argv, _ = k8s_pod.server_command(PlanDocument.from_json(rendered, "plan.json"), 0)
    assert server["entrypoint"] == argv[:2] == ["vllm", "serve"]
    assert server["command"] == argv[2:]
    assert "--speculative-config" not in argv
    flag = "--enable-prefix-caching" if caching else "--no-enable-prefix-caching"
    assert argv[-1] == flag
