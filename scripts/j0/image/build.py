"""`j0 image build`: the article's image, built with docker-py.

docker-py is imported inside the functions (it is optional, and absent inside the image).
The build uses Docker's legacy builder through docker-py, which docker/Dockerfile is written for.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.article.variants import check_variant_name
from j0.engine.source import vllm_version
from j0.engine.source.pull import (
    DENIED,
    NOT_FOUND,
    UNREACHABLE,
    PullError,
    ensure_image,
    registry_of,
)
from j0.engine.source.vllm_version import VllmVersion
from j0.errors import J0Error, parse_json, require
from j0.image.build_step import PIN_LABELS, engine_warning
from j0.pins import ENGINES, Pins, checkout_origin, checkout_revision, load_pins
from j0.terminal import sink

DOCKERFILE = "docker/Dockerfile"
MANIFEST = "/opt/j0/manifest.json"
ENTRYPOINT = "/usr/local/bin/j0-entrypoint"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the legacy builder colours a step's stderr
_STEP_ERROR = re.compile(r"j0 image (?:engine|build) step: error:")
# Environment of every smoke container: no GPU is visible, and Triton runs its interpreter.
CPU_ENV = {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}


def default_tag(pins: Pins) -> str:
    from j0.article.serving import default_image_tag

    return default_image_tag(pins)


def docker_client(timeout: int = 3600, purpose: str = "j0 image") -> Any:
    docker = require("docker", purpose)
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        raise J0Error(
            f"no Docker engine answers ({exc}); start dockerd or set DOCKER_HOST"
        ) from exc
    return client


def _revision(root: Path) -> str:
    return checkout_revision(root).label()


def pull_advice(error: PullError, base: str, fallback: str) -> str:
    """What to do about a base image that cannot be pulled, by the cause of the failure."""
    if error.cause == UNREACHABLE:
        same = registry_of(fallback) == registry_of(base)
        return (
            "Check the network, DNS or proxy of the Docker engine (`docker pull` shows its view)"
            + (
                f"; the fallback {fallback} is on the same registry and cannot be pulled either"
                if same
                else f", or try --base {fallback}"
            )
            + ". An image brought in another way (`docker load`) builds with --no-pull"
        )
    if error.cause == NOT_FOUND and base != fallback:
        return (
            f"Per-commit nightly tags are deleted after a while: try --base {fallback} "
            "(VLLM_IMAGE_FALLBACK in overlay/pins.env, byte-identical speculator.py) or a "
            "repo:tag@sha256:... digest you have"
        )
    if error.cause == NOT_FOUND:
        return "Use a repo:tag@sha256:... digest you have, or an image present here (--no-pull)"
    if error.cause == DENIED:
        return "Log in to that registry (`docker login`) or use an image you may pull"
    return f"Try --base {fallback} (VLLM_IMAGE_FALLBACK in overlay/pins.env) or --no-pull"


def _ensure_base(client: Any, base: str, pull: bool, fallback: str) -> Any:
    try:
        return ensure_image(client, base, pull, what="base image")
    except PullError as exc:
        raise J0Error(f"{exc}. {pull_advice(exc, base, fallback)}", exc.exit_code) from None


def _repo_digest(image: Any, base: str) -> str:
    digests = image.attrs.get("RepoDigests") or []
    if "@sha256:" in base:
        return base.split("@", 1)[1]
    repo = base.rsplit(":", 1)[0] if ":" in base.rsplit("/", 1)[-1] else base
    for digest in digests:
        if digest.split("@", 1)[0] == repo:
            return str(digest.split("@", 1)[1])
    return ""


def base_engine(client: Any, base: str) -> VllmVersion | None:
    """The base image's vLLM version and commit: j0/vllm_version.py run by the base's python3 in
    a throwaway container (no network), reading vllm/_version.py as text. None if it cannot."""
    from docker.errors import DockerException

    source = Path(vllm_version.__file__).read_text(encoding="utf-8")
    try:
        output = client.containers.run(
            base, ["-c", source], entrypoint="python3", network_mode="none", remove=True
        )
        last = output.decode("utf-8", "replace").strip().splitlines()[-1]
        info = parse_json(last, "the base image's vllm/_version.py")
    except (DockerException, J0Error, IndexError):
        return None
    if not isinstance(info, dict) or "error" in info:
        return None
    return VllmVersion(str(info["path"]), str(info["version"]), str(info["commit"]))


def build_args(
    pins: Pins,
    base: str,
    digest: str,
    allow_base_drift: bool,
    engine: VllmVersion | None = None,
    route: str = "image",
    wheel_index: str = "",
    variant: str = "article",
) -> dict[str, str]:
    return {
        "VLLM_ENGINE": route,
        "J0_VARIANT": variant,
        "WHEEL_INDEX": wheel_index,
        "VLLM_IMAGE": base,
        "VLLM_IMAGE_DIGEST": digest,
        "ALLOW_BASE_DRIFT": "1" if allow_base_drift else "0",
        "VLLM_BASE_VERSION": engine.version if engine else "",
        "VLLM_BASE_COMMIT": engine.commit if engine else "",
        **{key: pins.values[key] for key in PIN_LABELS},
        "J0_REVISION": _revision(pins.root),
        "J0_SOURCE": checkout_origin(pins.root),
        "BUILD_DATE": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _stream_build(events: Iterable[dict[str, Any]], echo: Callable[[str], None]) -> str | None:
    """Print the build's output as it comes; return the image id, raise on a build error."""
    image_id = None
    step_errors: list[str] = []  # the build step's own error message, repeated in the J0Error
    for event in events:
        if "stream" in event:
            echo(str(event["stream"]))
            text = _ANSI.sub("", str(event["stream"]))
            if text.startswith("Removing intermediate container"):
                continue
            if step_errors or _STEP_ERROR.search(text):
                step_errors.append(text)
        elif "status" in event:
            echo(f"{event['status']}\n")
        if "aux" in event and "ID" in event["aux"]:
            image_id = str(event["aux"]["ID"])
        if "error" in event:
            because = "".join(step_errors).strip()
            raise J0Error(
                f"docker build of {DOCKERFILE} failed: {event['error'].strip()}"
                + (f"\n{because}" if because else "")
            )
    return image_id


def _engine_for_labels(
    client: Any, base: str, route: str, pins: Pins, write: Callable[[str], None]
) -> VllmVersion | None:
    """What the j0.vllm.* labels name. Route image: the base's own vLLM, read from it first.
    Route wheel: VLLM_COMMIT, the wheel's commit (the engine step refuses any other)."""
    if route == "wheel":
        write(
            f"==> route wheel: {base} with vLLM commit {pins.vllm_commit[:8]}'s wheel from the "
            "per-commit index (the build fetches it)\n"
        )
        return VllmVersion("", "", pins.vllm_commit)
    engine = base_engine(client, base)
    if engine is None:
        write(f"==> {base}: cannot read its vllm/_version.py; the labels j0.vllm.* stay empty\n")
        return None
    write(f"==> {base}: {engine.describe()} (its {engine.path})\n")
    warning = engine_warning(engine, pins)
    if warning:
        sink.warn(f"j0 image build: warning: {warning}", flush=True)
    return engine


@dataclass(frozen=True)
class ImageBuilt:
    """What `j0 image build` made: the image's id and tag, the base and route it was built on,
    the speculator.py variant, the build's network and the image's size."""

    image_id: str
    tag: str
    base: str
    route: str
    variant: str
    network: str
    size_mb: int

    def to_json(self) -> dict[str, object]:
        return dict(vars(self))


def build(
    base: str | None = None,
    tag: str | None = None,
    allow_base_drift: bool = False,
    pull: bool = True,
    echo: Callable[[str], None] | None = None,
    engine: str | None = None,
    wheel_index: str = "",
    network: str | None = None,
    variant: str = "article",
) -> ImageBuilt:
    """Build docker/Dockerfile on `base` by route `engine` (wheel or image; default VLLM_ENGINE
    of the pins); return what was built. Progress goes to `echo`. The build's network: `none` on
    the image route, Docker's default on the wheel route (it fetches the wheel), or `network`."""
    require("docker", "j0 image build")
    from docker.errors import APIError

    pins = load_pins()
    route = engine or pins.vllm_engine
    if route not in ENGINES:
        raise J0Error(f"--engine {route}: expected one of {', '.join(ENGINES)}", exit_code=64)
    check_variant_name(variant, "--variant")
    base = base or pins.base_image_for(route)
    tag = tag or default_tag(pins) + ("" if variant == "article" else f"-{variant}")
    network = network or ("none" if route == "image" else "default")
    write = echo or (lambda text: sink.say(text, end="", flush=True))
    client = docker_client(purpose="j0 image build")
    base_image = _ensure_base(client, base, pull, pins.vllm_image_fallback)
    labelled = _engine_for_labels(client, base, route, pins, write)
    args = build_args(
        pins,
        base,
        _repo_digest(base_image, base),
        allow_base_drift,
        labelled,
        route,
        wheel_index,
        variant,
    )
    write(
        f"==> building {DOCKERFILE} on {base} as {tag} (route {route}, speculator.py {variant}, "
        f"network: {network})\n"
    )
    started = time.monotonic()
    try:
        events = client.api.build(
            path=str(pins.root),
            dockerfile=DOCKERFILE,
            tag=tag,
            buildargs=args,
            network_mode=None if network == "default" else network,
            pull=False,
            rm=True,
            forcerm=True,
            decode=True,
        )
        image_id = _stream_build(events, write)
    except APIError as exc:
        raise J0Error(f"docker build of {DOCKERFILE} on {base}: {exc}") from exc
    image = client.images.get(tag)
    size_mb = image.attrs.get("Size", 0) / 1e6
    write(
        f"==> built {tag} ({image_id or image.id}, {size_mb:.0f} MB) in "
        f"{time.monotonic() - started:.0f} s\n"
    )
    return ImageBuilt(str(image.id), tag, base, route, variant, network, round(size_mb))
