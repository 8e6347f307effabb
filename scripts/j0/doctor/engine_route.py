"""Which engine route `docker compose up` will take (VLLM_ENGINE: wheel or image), what engine
each gives, whether the per-commit wheel index answers for the pinned commit, and whether the
nightly tag still exists.

The index is asked with j0.engine.source.wheel_index, the code the build step itself runs (standard
library); an index that cannot be reached from here is a warning, not a failure: the build runs
on the Docker engine's network, which may differ.
"""

from __future__ import annotations

from j0.checks import FAIL, OK, WARN, Check
from j0.compose.switches import Knobs
from j0.doctor import docker_checks
from j0.edge import urls
from j0.engine.source import wheel_cuda, wheel_index
from j0.pins import ENGINES, Pins, wheel_index_for

TIMEOUT_S = 10.0


def route_of(settings: Knobs, pins: Pins) -> str:
    return settings.get("VLLM_ENGINE", pins.vllm_engine)


def base_of(route: str, settings: Knobs, pins: Pins) -> tuple[str, str]:
    """(the image compose builds FROM on `route`, the knob that names it)."""
    if route == "wheel":
        return settings.get("VLLM_IMAGE_FALLBACK", pins.vllm_image_fallback), "VLLM_IMAGE_FALLBACK"
    return settings.get("VLLM_IMAGE", pins.vllm_image), "VLLM_IMAGE"


def index_of(settings: Knobs, pins: Pins) -> str:
    given = settings.get("WHEEL_INDEX")
    return wheel_index_for(given, pins.vllm_commit) if given else pins.wheel_index


def shown_index(settings: Knobs, pins: Pins) -> str:
    """The index as messages name it: any user:password in it masked."""
    return urls.redact(index_of(settings, pins))


def route_check(route: str, settings: Knobs, pins: Pins) -> Check:
    name = "engine-route"
    commit = pins.vllm_commit[:8]
    if route not in ENGINES:
        return Check(
            name,
            FAIL,
            f"VLLM_ENGINE={route} ({settings.source('VLLM_ENGINE')}): compose knows wheel and "
            "image only (it stops: no overlay/route-" + route + ".env)",
            "VLLM_ENGINE=wheel (the default) or VLLM_ENGINE=image",
        )
    base, _ = base_of(route, settings, pins)
    if route == "wheel":
        detail = (
            f"compose takes route wheel: FROM {base}, its vllm replaced by vLLM commit {commit}'s "
            f"wheel from {shown_index(settings, pins)} (the folder of the base's torch CUDA, "
            f"{variant_of(pins)}/ for VLLM_CUDA={pins.cuda or '?'}), else its root's wheel "
            "where that wheel is of the same CUDA: the article's engine (`pip "
            "check` in the image says at build time whether the wheel's requirements are met)"
        )
    else:
        release = pins.values.get("VLLM_RELEASE_COMMIT", "")
        engine = (
            f"the release's own engine, commit {release}, not the article's {commit}"
            if base.split("@")[0] == pins.vllm_image_fallback
            else f"that image's own vLLM (the article's {commit} for the pinned nightly tag)"
        )
        detail = f"compose takes route image: FROM {base}: {engine}"
    return Check(name, OK, detail + f" (VLLM_ENGINE from {settings.source('VLLM_ENGINE')})")


def variant_of(pins: Pins) -> str:
    """The index's variant folder for VLLM_CUDA (cu130 for 13.0); "?" without a CUDA pin."""
    try:
        return wheel_index.variant_of_cuda(pins.cuda) if pins.cuda else "?"
    except wheel_index.WheelIndexError:
        return "?"


def index_check(route: str, settings: Knobs, pins: Pins) -> Check:
    """Does the index list a vllm wheel for the pinned commit (and the pinned file, if any) in
    the folder the build takes: the variant folder of the pinned CUDA (VLLM_CUDA: the base's
    torch's), else the root (vLLM's default variant), whose wheel the build takes only where its
    own METADATA says that CUDA (read at build time: the wheel is not downloaded here)?"""
    name = "wheel-index"
    index = index_of(settings, pins)
    missing = FAIL if route == "wheel" else WARN
    variant = variant_of(pins)
    if variant == "?":
        return Check(
            name,
            WARN,
            f"VLLM_CUDA={pins.cuda!r} in {pins.pins_path}: no CUDA to choose the index's variant "
            "folder by (the build takes the base's own torch.version.cuda)",
            "VLLM_CUDA=13.0 (the release image's torch) in overlay/pins.env",
        )
    why = f"the base's torch (VLLM_CUDA={pins.cuda} in overlay/pins.env)"
    try:
        source = wheel_index.wheel_source(index, variant, why, timeout=TIMEOUT_S)
    except wheel_index.VariantError as exc:
        return Check(name, missing, str(exc), "another index (WHEEL_INDEX), or VLLM_ENGINE=image")
    except wheel_index.WheelIndexError as exc:
        if exc.status is not None:
            return Check(
                name,
                missing,
                f"{exc}: the index has no page for vLLM commit {pins.vllm_commit[:8]}",
                "another index (WHEEL_INDEX), or VLLM_ENGINE=image",
            )
        return Check(
            name,
            WARN,
            f"cannot check from here ({exc}); the build asks again from the Docker engine",
            "check this host's network or proxy for the index, or set WHEEL_INDEX to a mirror",
        )
    page = urls.redact(wheel_index.project_url(source.index))
    wheels = [link.name for link in source.links if link.name.startswith(f"{wheel_index.PROJECT}-")]
    pinned = pins.wheel_name
    if not wheels or (pinned and pinned not in wheels):
        what = f"no {pinned}" if pinned and wheels else "no vllm wheel"
        return Check(
            name, missing, f"{page} answers, but lists {what}", "WHEEL_INDEX, or VLLM_ENGINE=image"
        )
    chosen = pinned or ", ".join(wheels)
    note = "" if pins.wheel_sha256 else " (VLLM_WHEEL_SHA256 not pinned yet: the build records it)"
    if source.folder != wheel_index.ROOT:
        return Check(name, OK, f"{page} lists {chosen}{note}")
    return root_check(name, missing, page, pinned or wheels[0], chosen + note, source, pins)


def root_check(
    name: str,
    missing: str,
    page: str,
    wheel: str,
    chosen: str,
    source: wheel_index.Source,
    pins: Pins,
) -> Check:
    """The index's root on offer (no variant folder of VLLM_CUDA): a wheel whose file name says
    another CUDA fails; one that says none (vLLM's default variant's) is the build's to judge."""
    found = wheel_cuda.of_wheel(wheel, [])
    said = f"{page} lists {chosen}: {source.why}"
    if found.fits(pins.cuda) is False:
        return Check(
            name,
            missing,
            f"{said}; but {wheel} is {found.describe()} ({found.evidence()}), not CUDA "
            f"{pins.cuda} (VLLM_CUDA)",
            "another index (WHEEL_INDEX), or VLLM_ENGINE=image",
        )
    return Check(
        name,
        OK,
        f"{said}: the build reads the wheel's CUDA from its METADATA once downloaded and "
        f"installs it only where that is the base's torch's (VLLM_CUDA={pins.cuda})",
    )


def nightly_check(state: docker_checks.DockerState, pins: Pins) -> Check:
    """Whether the pinned nightly tag (route image's base) still exists, locally or remotely."""
    name = "nightly-tag"
    image = pins.vllm_image
    if state.info is None:
        return Check(name, WARN, f"cannot look for {image}: no Docker engine answers")
    present, _ = docker_checks.local_digest(image)
    found, said = ("found", "") if present else docker_checks.registry_state(image)
    if found == "found":
        where = "present locally" if present else "still in its registry"
        return Check(name, OK, f"{image} is {where}: VLLM_ENGINE=image would work too")
    words = "gone from its registry" if found == "missing" else "not reachable"
    return Check(
        name,
        WARN,
        f"{image} is {words} ({said}): only the wheel route gives the article's engine",
    )


def checks(state: docker_checks.DockerState, settings: Knobs, pins: Pins) -> list[Check]:
    """engine-route, then wheel-index on the wheel route and nightly-tag (the other route)."""
    route = route_of(settings, pins)
    found = [route_check(route, settings, pins)]
    if route == "wheel":
        found += [index_check(route, settings, pins), nightly_check(state, pins)]
    return found
