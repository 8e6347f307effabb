"""What `j0 engine-check --image` needs before anything heavy starts, each missing piece one line
and exit 69: the Docker engine and the image itself (a GPU and, with `--here`, what vLLM's server
imports are the engine floor's: j0.engine.server.local_needs, which `j0 mini run --here` checks
too). The image is never pulled: compose builds `J0_IMAGE` from this checkout (`docker compose
build`) and `j0 image build` makes the pinned tag; a registry has neither.

With `--image` the tiny models are made inside the image (`python -m j0.engine_check.tiny_models`
in a throw-away container of it), so the host needs Docker and nothing of torch or transformers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from j0.errors import UNAVAILABLE, J0Error, require

CONTAINER_WORK = "/j0-engine-check"
IMAGE_PYTHONPATH = "/opt/j0/scripts"  # where docker/Dockerfile copies the j0 package


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
