"""Docker on this host, asked through its own CLI: the engine, Compose (2.20 or later: compose.yaml
uses `include` with `env_file`), buildx, a way to give containers an NVIDIA GPU, and the base image.

Standard library only (`docker ...` in a subprocess): what `docker compose up` will meet.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.checks import FAIL, OK, WARN, Check
from j0.compose.getting import COMPOSE_V2_AND_BUILDX
from j0.edge import host_tools as host
from j0.errors import J0Error, parse_json
from j0.pins import Pins

COMPOSE_MIN = (2, 20)
NVIDIA_HOOK = "nvidia-container-runtime-hook"
CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
INSTALL_TOOLKIT = (
    "install the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure "
    "--runtime=docker && sudo systemctl restart docker`"
)


@dataclass
class DockerState:
    """What `docker version` / `docker info` said; None where Docker does not answer."""

    engine: Check
    info: dict[str, Any] | None


def _json(text: str) -> dict[str, Any] | None:
    try:
        last = text.strip().splitlines()[-1] if text.strip() else None
        value = parse_json(last, "docker's answer") if last else None
    except J0Error:
        return None
    return value if isinstance(value, dict) else None


def engine() -> DockerState:
    ran = host.run(["docker", "version", "--format", "{{json .}}"])
    if ran.missing:
        return DockerState(
            Check(
                "docker",
                FAIL,
                "no Docker on this host (`docker` is not on PATH)",
                "install Docker Engine (docs.docker.com/engine/install) with its Compose and "
                "buildx plugins",
            ),
            None,
        )
    version = _json(ran.stdout) or {}
    server = version.get("Server") if isinstance(version.get("Server"), dict) else None
    if not ran.ok or not server:
        return DockerState(
            Check(
                "docker",
                FAIL,
                f"the Docker engine does not answer: {ran.said()}",
                "start it (`sudo systemctl start docker`), or set DOCKER_HOST / the docker "
                "context; a permission error: add yourself to the `docker` group",
            ),
            None,
        )
    info = _json(host.run(["docker", "info", "--format", "{{json .}}"]).stdout)
    client = (version.get("Client") or {}).get("Version", "?")
    return DockerState(
        Check("docker", OK, f"Docker Engine {server.get('Version', '?')} (client {client})"),
        info,
    )


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def compose(state: DockerState) -> Check:
    if state.info is None and state.engine.status == FAIL and "not on PATH" in state.engine.detail:
        return Check("compose", FAIL, "no Docker, so no Compose", "install Docker first")
    ran = host.run(["docker", "compose", "version", "--short"])
    need = ".".join(str(x) for x in COMPOSE_MIN)
    fix = f"install {COMPOSE_V2_AND_BUILDX}"
    if not ran.ok:
        said = " ".join((ran.stderr.strip() or ran.stdout.strip()).split())[:300] or ran.said()
        return Check("compose", FAIL, f"`docker compose` does not run: {said}{_v1()}", fix)
    found = parse_version(ran.stdout)
    if found is None:
        return Check("compose", FAIL, f"cannot read the version in {ran.stdout.strip()!r}", fix)
    text = ran.stdout.strip()
    if found[:2] < COMPOSE_MIN:
        return Check(
            "compose",
            FAIL,
            f"Docker Compose {text}: compose.yaml needs {need} or later (`include` with env_file)",
            fix,
        )
    return Check("compose", OK, f"Docker Compose {text}")


def _v1() -> str:
    """Compose v1's `docker-compose` where it is on PATH, said as such ("" where it is not)."""
    ran = host.run(["docker-compose", "version", "--short"])
    found = parse_version(ran.stdout) if ran.ok else None
    if found is None or found[0] >= 2:
        return ""
    return (
        f"; docker-compose {ran.stdout.strip()} is Compose v1 (the `docker-compose` command of "
        "Debian 12's and older Ubuntu's docker-compose package), which cannot read compose.yaml"
    )


def buildx(state: DockerState) -> Check:
    if state.info is None and "not on PATH" in state.engine.detail:
        return Check("buildx", FAIL, "no Docker, so no buildx", "install Docker first")
    ran = host.run(["docker", "buildx", "version"])
    if not ran.ok:
        return Check(
            "buildx",
            WARN,
            f"`docker buildx` does not run ({ran.said()}): compose falls back to the legacy "
            "builder, which works for docker/Dockerfile but is deprecated",
            f"install {COMPOSE_V2_AND_BUILDX}",
        )
    return Check("buildx", OK, ran.stdout.strip().splitlines()[0] if ran.stdout.strip() else "ok")


def _cdi_devices(info: dict[str, Any]) -> list[str]:
    """NVIDIA CDI devices Docker discovered (`docker info` DiscoveredDevices, Docker 28.2+)."""
    found = []
    for device in info.get("DiscoveredDevices") or []:
        if isinstance(device, dict):
            name = str(device.get("ID") or device.get("Name") or "")
            if name.startswith("nvidia.com/gpu"):
                found.append(name)
    return found


def _cdi_spec_files(info: dict[str, Any]) -> list[Path]:
    dirs = [Path(d) for d in info.get("CDISpecDirs") or []] or list(CDI_DIRS)
    files: list[Path] = []
    for folder in dirs:
        if folder.is_dir():
            files += [
                p
                for p in sorted(folder.iterdir())
                if p.suffix in (".yaml", ".yml", ".json") and "nvidia" in p.name
            ]
    return files


def gpu_runtime(state: DockerState) -> Check:
    """compose.serve.yaml reserves one GPU with `driver: nvidia`: Docker needs the NVIDIA runtime,
    its hook, or NVIDIA CDI devices to honour that."""
    if state.info is None:
        return Check(
            "gpu-runtime",
            FAIL,
            "cannot ask Docker how it gives containers a GPU (no engine answers)",
            "fix the docker check first; then " + INSTALL_TOOLKIT,
        )
    runtimes = sorted((state.info.get("Runtimes") or {}).keys())
    ways = []
    if "nvidia" in runtimes:
        ways.append("the nvidia runtime")
    devices = _cdi_devices(state.info)
    if devices:
        ways.append(f"CDI devices {', '.join(devices)}")
    specs = _cdi_spec_files(state.info)
    if specs and not devices:
        ways.append(f"CDI specs {', '.join(str(p) for p in specs)}")
    hook = shutil.which(NVIDIA_HOOK)
    if hook:
        ways.append(f"{NVIDIA_HOOK} ({hook})")
    if not ways:
        return Check(
            "gpu-runtime",
            FAIL,
            "Docker cannot give containers an NVIDIA GPU: runtimes "
            f"{', '.join(runtimes) or 'none'}, no NVIDIA CDI device, no {NVIDIA_HOOK}",
            INSTALL_TOOLKIT,
        )
    return Check("gpu-runtime", OK, "Docker can give containers a GPU: " + "; ".join(ways))


DEFAULT_DOCKER_ROOT = Path("/var/lib/docker")


def docker_root(state: DockerState) -> Path:
    """Where Docker keeps its images (`docker info`'s DockerRootDir; its default without one)."""
    root = (state.info or {}).get("DockerRootDir")
    return Path(root) if isinstance(root, str) and root else DEFAULT_DOCKER_ROOT


def image_present(state: DockerState, image: str) -> bool:
    return state.info is not None and _local_digest(image)[0]


def _local_digest(image: str) -> tuple[bool, str]:
    ran = host.run(["docker", "image", "inspect", "--format", "{{json .RepoDigests}}", image])
    if not ran.ok:
        return False, ""
    try:
        digests = parse_json(ran.stdout.strip() or "[]", "docker image inspect's answer")
    except J0Error:
        digests = []
    return True, str(digests[0]) if digests else ""


def registry_has(image: str) -> tuple[str, str]:
    """("found" | "missing" | "unreachable", the registry's words) for `image`."""
    return _registry(image)


def _registry(image: str) -> tuple[str, str]:
    """("found" | "missing" | "unreachable", the registry's words)."""
    ran = host.run(["docker", "manifest", "inspect", image], timeout=45)
    if ran.ok:
        return "found", ""
    said = ran.said()
    lowered = said.lower()
    if any(x in lowered for x in ("no such manifest", "manifest unknown", "not found")):
        return "missing", said
    return "unreachable", said


def local_digest(image: str) -> tuple[bool, str]:
    """(present locally, its first repo digest or "")."""
    return _local_digest(image)


def registry_state(image: str) -> tuple[str, str]:
    """("found" | "missing" | "unreachable", the registry's words)."""
    return _registry(image)


def _other_engine(name: str, image: str, pins: Pins, detail: str) -> Check:
    """ok for the pinned image (or its digest form); a warning that says what another base is."""
    if image == pins.vllm_image or image.startswith(pins.vllm_image + "@sha256:"):
        return Check(name, OK, detail)
    release = pins.values.get("VLLM_RELEASE_COMMIT", "")
    if image == pins.vllm_image_fallback:
        what = (
            f"the fallback (VLLM_IMAGE_FALLBACK): the same speculator.py byte for byte, but "
            f"vLLM commit {release or 'of the release'}, not {pins.vllm_commit[:8]}"
        )
    else:
        what = (
            f"not the pinned {pins.vllm_image}: the build checks its speculator.py's sha256, and "
            "`j0 image identity` / `j0 status` name its vLLM commit"
        )
    return Check(
        name,
        WARN,
        f"{detail}; {what}",
        f"for the article's engine: VLLM_IMAGE={pins.vllm_image} (or its @sha256: digest)",
    )


def base_image(
    state: DockerState, image: str, pins: Pins, source: str, wheel_route: bool = False
) -> Check:
    """The base present locally, or pullable; a purged nightly tag named as such, with the
    choices and what each means. On the wheel route the base is the release image, whose vllm
    the build replaces (so its own commit is no warning)."""
    name = "base-image"
    if state.info is None:
        return Check(
            name,
            FAIL,
            f"cannot look for {image} (the base, from {source}): no Docker engine answers",
            "fix the docker check first",
        )
    present, digest = _local_digest(image)
    found, said = ("found", "") if present else _registry(image)
    if found == "found":
        where = (
            "present locally" + (f" ({digest})" if digest else "")
            if present
            else ("not present locally; the registry has it (pullable)")
        )
        if wheel_route:
            return Check(
                name,
                OK,
                f"{image} is {where}; the wheel route's base (its vllm is replaced by the wheel of "
                f"{pins.vllm_commit[:8]})",
            )
        return _other_engine(name, image, pins, f"{image} is {where}")
    if wheel_route:
        what, choices = (
            f"{image} (the wheel route's base, from {source})",
            _wheel_choices(image, pins),
        )
    else:
        what, choices = image, _image_choices(image, pins)
    is_nightly = "nightly-" in image.split("/")[-1]
    if found == "missing" and is_nightly:
        return Check(
            name,
            FAIL,
            f"{what} is not present locally and the registry no longer has this per-commit "
            f"nightly tag (vLLM deletes them after a while): {said}",
            choices,
        )
    if found == "missing":
        return Check(
            name, FAIL, f"{what} is neither present locally nor in its registry: {said}", choices
        )
    return Check(
        name,
        FAIL,
        f"{what} is not present locally, and its registry cannot be reached: {said}",
        "connect this host to the registry (or a mirror), or `docker load` the image; " + choices,
    )


def _wheel_choices(image: str, pins: Pins) -> str:
    """The wheel route's base is any copy of the release image: the build replaces its vllm."""
    return (
        f"choices: (1) VLLM_IMAGE_FALLBACK={image.split('@')[0]}@sha256:<digest>, or the same "
        "release image under a mirror's name: the engine stays the article's, since vLLM commit "
        f"{pins.vllm_commit[:8]}'s wheel replaces its vllm; (2) VLLM_ENGINE=image with "
        f"VLLM_IMAGE={pins.vllm_image} (the image route: the nightly tag as it is, the article's "
        "exact image, while its registry keeps the tag)"
    )


def _image_choices(image: str, pins: Pins) -> str:
    """The image route's base: what each other image gives instead."""
    fallback = pins.vllm_image_fallback
    fallback_there = _local_digest(fallback)[0] or _registry(fallback)[0] == "found"
    release_commit = pins.values.get("VLLM_RELEASE_COMMIT", "")
    return (
        f"choices: (1) VLLM_IMAGE={image.split('@')[0]}@sha256:<digest>, the article's exact "
        "engine, if you have its digest (or the image, from `docker save` / `docker load`); "
        f"(2) VLLM_IMAGE={fallback} (VLLM_IMAGE_FALLBACK"
        + (", " + ("present or pullable" if fallback_there else "not reachable either"))
        + "): the same speculator.py byte for byte, but "
        + (f"vLLM commit {release_commit}" if release_commit else "the release's vLLM commit")
        + f", not {pins.vllm_commit[:8]}: the rest of the engine is not the article's; "
        "(3) build vLLM's own image at that commit and set VLLM_IMAGE to its tag"
    )
