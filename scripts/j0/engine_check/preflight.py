"""What `j0 engine-check` needs before anything heavy starts, each missing piece one line and
exit 69: a GPU (unless `--no-gpu`); with `--here` what vLLM's server imports (unless a
`--server-command` stands in for it); with `--image` the Docker engine and the image itself.
The image is never pulled: compose builds `J0_IMAGE` from this checkout (`docker compose build`)
and `j0 image build` makes the pinned tag; a registry has neither. `j0 mini run --here` checks
the same (require_gpu, require_server_packages) and which speculator.py this Python's vLLM
will import (here_identity).

With `--image` the tiny models are made inside the image (`python -m j0.engine_check.tiny_models`
in a throw-away container of it), so the host needs Docker and nothing of torch or transformers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from j0.errors import JSON_ERRORS, UNAVAILABLE, J0Error, require

CONTAINER_WORK = "/j0-engine-check"
IMAGE_PYTHONPATH = "/opt/j0/scripts"  # where docker/Dockerfile copies the j0 package


def gpu_present() -> bool:
    """An NVIDIA driver and GPU on this host, found without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None


def require_gpu(purpose: str = "j0 engine-check", nothing: str = "nothing was checked") -> None:
    if not gpu_present():
        raise J0Error(
            f"{purpose}: no NVIDIA GPU here (no /dev/nvidiactl, no nvidia-smi): it serves "
            f"vLLM's real engine and needs one; {nothing} (without a GPU, `j0 selfcheck` "
            "checks J0's kernels in Triton's interpreter)",
            UNAVAILABLE,
        )


# What `python -m vllm.entrypoints.cli.main serve` imports before it listens, beyond the
# standard library: vLLM itself and its server's packages (found, not imported).
SERVER_NEEDS = ("vllm", "torch", "transformers", "fastapi", "uvicorn")


def require_server_packages(purpose: str, nothing: str = "nothing was checked") -> None:
    """This Python has vLLM and what its OpenAI server imports, or one line and exit 69."""
    from j0.errors import available

    missing = [name for name in SERVER_NEEDS if not available(name)]
    if missing:
        raise J0Error(
            f"{purpose}: it serves this Python's vLLM (`python -m vllm.entrypoints.cli.main "
            f"serve`), and {sys.executable} lacks {', '.join(missing)}: install vLLM with its "
            "dependencies there (pip install vllm), or run it inside the image; " + nothing,
            UNAVAILABLE,
        )


def require_engine_contract(purpose: str) -> None:
    """The installed vLLM's own source against the prefix-safe variant's contract with its engine
    (j0.engine.contract): broken, it is exit 1 before anything is served when the installed
    speculator.py is the variant or an audit (both read req_states from init_speculator's
    frame), and one warning line for the article's file (which does not depend on it)."""
    from j0.article.identity import AUDIT, PREFIX_SAFE, identify
    from j0.engine import contract
    from j0.engine.base_sources import installed_vllm_dir
    from j0.pins import load_pins

    site = installed_vllm_dir()
    found = contract.problems(site)
    if not found:
        return
    pins = load_pins()
    speculator = site / pins.speculator_relpath
    kind = identify(speculator.read_bytes(), pins).kind if speculator.is_file() else "absent"
    if kind in (PREFIX_SAFE, AUDIT):
        contract.require(site, f"{purpose} ({speculator}: identity={kind})")
    print(
        f"{purpose}: warning: the installed vLLM breaks the prefix-safe variant's contract "
        f"(the installed speculator.py is identity={kind}, which does not depend on it): "
        + "; ".join(found),
        file=sys.stderr,
    )


def here_identity(purpose: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`j0 image identity --json` in a process of this Python with `env` (the server's, default
    this one's): the speculator.py a server started the same way would import, as its identity
    line will name it. One line and exit 69 where there is no vLLM to ask."""
    command = [sys.executable, "-m", "j0", "image", "identity", "--json"]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    try:
        found: dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
    except JSON_ERRORS:
        found = {}
    if "identity" not in found:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise J0Error(
            f"{purpose}: cannot tell which speculator.py this Python's vLLM would import "
            f"({why.removeprefix('j0: error: ')}); nothing was run",
            UNAVAILABLE,
        )
    return found


def how_to_make(image: str, source: str) -> str:
    if "J0_IMAGE" in source:
        return (
            f"build it with `docker compose build` in the j0 checkout (compose tags J0_IMAGE, "
            f"here {image}), or `j0 image build --tag {image}`"
        )
    return f"build it with `j0 image build --tag {image}`, or pull it yourself: docker pull {image}"


def docker_client() -> Any:
    docker = require("docker", "j0 engine-check --image")
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise J0Error(
            f"j0 engine-check --image: the Docker engine does not answer ({exc}); start it, or "
            "run `j0 engine-check --here` inside the image",
            UNAVAILABLE,
        ) from None
    return client


def require_image(client: Any, image: str, source: str) -> None:
    """The image must be here already: a missing one is named with how to make it, never pulled."""
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise J0Error(
            f"j0 engine-check: the image {image} ({source}) is not here, and engine-check never "
            f"pulls: {how_to_make(image, source)}",
            UNAVAILABLE,
        ) from None


def make_models_in_image(client: Any, image: str, work: Path) -> tuple[Path, Path, str]:
    """Run the model-making module in a container of `image`, writing work/models as this user;
    (target, draft, the container's output). A failure is exit 1 with the container's output."""
    out = f"{CONTAINER_WORK}/models"
    container = client.containers.run(
        image,
        entrypoint=["python3", "-P", "-m", "j0.engine_check.tiny_models"],
        command=[out],
        environment={"PYTHONPATH": IMAGE_PYTHONPATH, "HOME": "/tmp", "HF_HUB_OFFLINE": "1"},
        volumes={str(work.resolve()): {"bind": CONTAINER_WORK, "mode": "rw"}},
        user=f"{os.getuid()}:{os.getgid()}",
        network_mode="none",
        detach=True,
    )
    try:
        status = container.wait()
        text = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    code = int(status.get("StatusCode", 1))
    if code != 0:
        tail = "\n".join(text.splitlines()[-20:])
        raise J0Error(
            f"j0 engine-check: making the tiny models in {image} failed (exit {code}):\n{tail}"
        )
    return work / "models" / "target", work / "models" / "draft", text.strip()
