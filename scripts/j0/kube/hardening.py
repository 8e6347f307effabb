"""The security settings of every pod and container of the k8s manifests (render.py), after
Kubernetes' Pod Security Standards ("restricted") and its security-context guide:

- every pod: `automountServiceAccountToken: false` (nothing in it talks to the API), seccomp
  RuntimeDefault, `fsGroup` J0_UID (so that a container of that group can write the PVC);
- every container: no privilege escalation, every capability dropped, a read-only root
  filesystem, its writable paths mounted (emptyDirs for /tmp and the caches, the PVC for data),
  requests and limits for CPU and memory (and the GPU);
- containers that run only j0 (the drafter fetch of the serving Deployment) run as J0_UID, not
  root, with HOME and HF_HOME in an emptyDir. The vLLM container stays root: vLLM's image "is
  currently designed to be run under the root user" (vLLM's Docker guide), its caches live
  under /root (torch, Triton, vLLM's compile cache, CUDA's JIT cache), mounted here as emptyDirs.
  The matrix's containers that write the matrix PVC (drafter, target prefetch, bench) stay root
  too: that PVC is ReadWriteMany by default, and many ReadWriteMany storage drivers do not apply
  `fsGroup`, so a non-root uid could not write the folders Kubernetes makes on it. Root here has
  no capability: it writes only what root owns.

The Hugging Face token is the optional secret j0-hf-token (key `token`) as HF_TOKEN, as vLLM's
Kubernetes guide passes it: absent, no token (a mounted file that is not there would be a token
file that cannot be read, which j0 refuses).
"""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
J0_UID = 1000  # no user of the image; j0 needs only its mounts to be writable
J0_HOME = "/home/j0"
J0_HF_HOME = f"{J0_HOME}/.cache/huggingface"
HF_TOKEN_SECRET = "j0-hf-token"
TMP = "/tmp"
# vLLM's writable paths under its HOME (/root), each a subPath of one emptyDir.
VLLM_HOME_PATHS = {"cache": "/root/.cache", "config": "/root/.config", "triton": "/root/.triton"}
VLLM_HOME_PATHS["nv"] = "/root/.nv"  # CUDA's JIT cache (ComputeCache)
SCRATCH_LIMITS = {"tmp": "16Gi", "vllm-home": "64Gi", "j0-home": "8Gi"}  # emptyDir sizeLimit
# Whole-Job deadlines: the prepare Job downloads the target (about 57 GB); the matrix Job runs
# every index (K8sOptions.deadline_s overrides).
PREPARE_DEADLINE_S = 6 * 3600
MATRIX_DEADLINE_S = 48 * 3600

RUNTIME_DEFAULT = {"type": "RuntimeDefault"}


def pod_security() -> dict[str, Any]:
    """The pod-level securityContext."""
    return {
        "seccompProfile": RUNTIME_DEFAULT,
        "fsGroup": J0_UID,
        "fsGroupChangePolicy": "OnRootMismatch",
    }


def container_security(non_root: bool) -> dict[str, Any]:
    """A container's securityContext: J0_UID where `non_root`, else root without capabilities."""
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "seccompProfile": RUNTIME_DEFAULT,
    }
    if non_root:
        context |= {"runAsNonRoot": True, "runAsUser": J0_UID, "runAsGroup": J0_UID}
    else:
        context |= {"runAsNonRoot": False, "runAsUser": 0}
    return context


def scratch_volumes() -> list[dict[str, Any]]:
    """The emptyDirs that hold the writable paths of read-only root filesystems."""
    return [{"name": n, "emptyDir": {"sizeLimit": limit}} for n, limit in SCRATCH_LIMITS.items()]


def vllm_scratch_mounts() -> list[dict[str, Any]]:
    """/tmp and the caches under /root of the vLLM container."""
    mounts = [{"name": "tmp", "mountPath": TMP}]
    for sub, path in VLLM_HOME_PATHS.items():
        mounts.append({"name": "vllm-home", "mountPath": path, "subPath": sub})
    return mounts


def j0_scratch_mounts() -> list[dict[str, Any]]:
    """/tmp and HOME of a container that runs j0 only."""
    return [{"name": "tmp", "mountPath": TMP}, {"name": "j0-home", "mountPath": J0_HOME}]


def hf_token_env() -> dict[str, Any]:
    """HF_TOKEN from the optional secret (no token when it is absent)."""
    ref = {"name": HF_TOKEN_SECRET, "key": "token", "optional": True}
    return {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": ref}}


def resources(cpu: str, memory: str, cpu_limit: str, memory_limit: str) -> dict[str, Any]:
    """Requests and limits (quantities are strings in the API)."""
    return {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"cpu": cpu_limit, "memory": memory_limit},
    }


# A j0-only container: the drafter fetch (about 3 GB), the target prefetch, the bench client.
J0_RESOURCES = resources("1", "2Gi", "4", "8Gi")


def gpu_resources(gpus: int) -> dict[str, Any]:
    """The vLLM container: one GPU (or `gpus`), CPU and memory for loading a 27B target; /dev/shm
    (a Memory emptyDir) counts against the memory limit."""
    limits = resources("8", "64Gi", "16", "160Gi")
    limits["requests"][GPU] = str(gpus)
    limits["limits"][GPU] = str(gpus)
    return limits
