"""Every pod and container that j0 renders for Kubernetes (deploy/k8s/serving, the committed
files, and the matrix's prepare and Indexed Jobs) is hardened as Kubernetes' security guides
recommend: the expected settings are typed here, not taken from the renderer. (The same manifests
pass `kubernetes-validate --strict` in tests/bench/test_k8s_render.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.test_k8s_render import matrix_docs
from j0.bench.matrix.k8s import render as k8s_render
from j0.bench.matrix.k8s.plan import BenchOptions, build_plan
from j0.bench.matrix.settings import matrix_settings
from j0.compose.server import ServerKnobs
from j0.pins import Pins

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
HARDENED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
NON_ROOT = {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
ROOT_USER = {"runAsNonRoot": False, "runAsUser": 0}
VLLM_WRITABLE = {"/tmp", "/root/.cache", "/root/.config", "/root/.triton", "/root/.nv", "/dev/shm"}
J0_WRITABLE = {"/tmp", "/home/j0"}
TOKEN = {
    "name": "HF_TOKEN",
    "valueFrom": {"secretKeyRef": {"name": "j0-hf-token", "key": "token", "optional": True}},
}


def pods(pins: Pins) -> dict[str, dict[str, Any]]:
    """Each rendered pod template's spec, by the object's name; the serving Deployment as
    committed in deploy/k8s/serving/deployment.yaml."""
    deployment = yaml.safe_load((DEPLOY / "serving" / "deployment.yaml").read_text())
    docs = matrix_docs(pins)
    return {
        "serving": deployment["spec"]["template"]["spec"],
        "prepare": docs["prepare"]["spec"]["template"]["spec"],
        "matrix": docs["job"]["spec"]["template"]["spec"],
    }


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


# (pod, container) -> who it runs as, and the paths it may write besides the PVC
EXPECTED = {
    ("serving", "drafter"): (NON_ROOT, J0_WRITABLE),
    ("serving", "vllm"): (ROOT_USER, VLLM_WRITABLE),
    ("prepare", "drafter"): (ROOT_USER, J0_WRITABLE),
    ("prepare", "target"): (ROOT_USER, J0_WRITABLE),
    ("matrix", "vllm"): (ROOT_USER, VLLM_WRITABLE),
    ("matrix", "bench"): (ROOT_USER, J0_WRITABLE),
}


def test_every_container_is_hardened(pins: Pins) -> None:
    """Before: no securityContext anywhere (root, privilege escalation, a writable root
    filesystem, every default capability), the service-account token mounted."""
    found = {(p, c): spec for p, pod in pods(pins).items() for c, spec in containers(pod).items()}
    assert set(found) == set(EXPECTED)
    for key, container in found.items():
        user, writable = EXPECTED[key]
        assert container["securityContext"] == {**HARDENED, **user}, key
        scratch = {m["mountPath"] for m in container["volumeMounts"] if m["name"] != "cache"}
        assert writable <= scratch, (key, scratch)
        resources = container["resources"]
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources[kind]), (key, kind)


def test_every_pod_mounts_no_token_and_runs_seccomp_runtime_default(pins: Pins) -> None:
    for name, pod in pods(pins).items():
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert not [v for v in volumes.values() if "secret" in v], name  # the token is env
        for scratch, limit in (("tmp", "16Gi"), ("vllm-home", "64Gi"), ("j0-home", "8Gi")):
            assert volumes[scratch] == {"name": scratch, "emptyDir": {"sizeLimit": limit}}
    # Only the serving pod has a non-root writer of the PVC: its fsGroup makes the PVC its own.
    serving = pods(pins)["serving"]["securityContext"]
    assert (serving["fsGroup"], serving["fsGroupChangePolicy"]) == (1000, "OnRootMismatch")
    assert "fsGroup" not in pods(pins)["matrix"]["securityContext"]


def test_gpu_containers_have_limits_and_the_token_is_an_optional_secret(pins: Pins) -> None:
    for name in ("serving", "matrix"):
        vllm = containers(pods(pins)[name])["vllm"]
        assert vllm["resources"] == {
            "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "16", "memory": "160Gi", "nvidia.com/gpu": "1"},
        }
        assert TOKEN in vllm["env"]
        assert not [e for e in vllm["env"] if e["name"] == "HF_TOKEN_PATH"]
    drafter = containers(pods(pins)["serving"])["drafter"]
    env = {e["name"]: e.get("value") for e in drafter["env"]}
    assert env["HOME"] == "/home/j0" and env["HF_HOME"] == "/home/j0/.cache/huggingface"
    assert TOKEN in drafter["env"]


def test_jobs_have_a_deadline(pins: Pins) -> None:
    docs = matrix_docs(pins)
    assert docs["prepare"]["spec"]["activeDeadlineSeconds"] == 6 * 3600
    assert docs["job"]["spec"]["activeDeadlineSeconds"] == 48 * 3600
    knobs = ServerKnobs(target_model=pins.target_model)
    settings = matrix_settings("7", "on", prefix_caching=False)
    plan = build_plan("j0-deadline", settings, knobs, 1, BenchOptions(None, 1, 8), ['{"p": 1}'])
    options = k8s_render.K8sOptions(image="r/j0:t", deadline_s=3600)
    job = k8s_render.matrix_manifests(pins, knobs, plan, options, parallelism=1)["job"]
    assert job["spec"]["activeDeadlineSeconds"] == 3600


@pytest.mark.parametrize("key", ["securityContext", "containerSecurityContext"])
def test_the_helm_values_harden_the_charts_pod(pins: Pins, key: str) -> None:
    values = yaml.safe_load((DEPLOY / "production-stack" / "values.yaml").read_text())
    spec = values["servingEngineSpec"]
    expected = {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containerSecurityContext": {
            "runAsNonRoot": False,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    assert spec[key] == expected[key]
    (model,) = spec["modelSpec"]
    assert (model["limitCPU"], model["limitMemory"]) == (16, "160Gi")
