"""`j0 doctor --plugin`: what `docker compose -f compose.plugin.yaml up` needs beyond the host
checks every route shares (docs/plugin.md): its switches (J0_ON a JSON boolean, J0_VARIANT a
variant: what `j0 serve` refuses, said before the build), the pins of a release the plugin was
proven on with their patch files intact, and vLLM's release image (V0340_IMAGE) present or
pullable. Standard library only."""

from __future__ import annotations

from j0.checks import FAIL, OK, Check
from j0.compose.switches import Knobs
from j0.doctor import docker_checks
from j0.edge.atomic import sha256_file
from j0.pins import Pins
from j0.plugin.options import VARIANTS

IMAGE_KNOB = "V0340_IMAGE"


def switches(settings: Knobs) -> Check:
    j0_on, variant = settings.get("J0_ON", "true"), settings.get("J0_VARIANT", "article")
    wrong = []
    if j0_on not in ("true", "false"):
        wrong.append(f"J0_ON={j0_on!r} ({settings.source('J0_ON')}): expected true or false")
    if variant not in VARIANTS:
        wrong.append(f"J0_VARIANT={variant!r}: expected one of {', '.join(VARIANTS)}")
    if wrong:
        return Check(
            "plugin-switches", FAIL, "; ".join(wrong), "`j0 serve` would refuse it: fix the value"
        )
    return Check("plugin-switches", OK, f"J0_ON={j0_on}, J0_VARIANT={variant}")


def proven(pins: Pins) -> Check:
    """A release the plugin was proven on, with every patch file it names at its pinned sha256."""
    from j0.plugin.proven import proven_releases, words

    releases = proven_releases(pins)
    if not releases:
        return Check("plugin-pins", FAIL, f"{pins.pins_path}: no V<release>_* pins", "")
    bad = []
    for release in releases:
        for name in ("PATCH", "PREFIX_SAFE_PATCH", "AUDIT_PATCH"):
            relpath, pinned = release.value(f"{name}_FILE"), release.value(f"{name}_SHA256")
            path = pins.root / relpath
            if not path.is_file() or sha256_file(path) != pinned:
                bad.append(f"{release.key(name + '_FILE')}={relpath}: missing or not {pinned}")
    if bad:
        return Check("plugin-pins", FAIL, "; ".join(bad), "restore the committed patches")
    return Check("plugin-pins", OK, "proven: " + "; ".join(words(r) for r in releases))


def base_image(state: docker_checks.DockerState, settings: Knobs, pins: Pins) -> Check:
    image = settings.get(IMAGE_KNOB, pins.values.get(IMAGE_KNOB, ""))
    if state.info is None:
        return Check(
            "base-image",
            FAIL,
            f"cannot look for {image}: no Docker engine answers",
            "fix the docker check first",
        )
    if docker_checks.image_present(state, image):
        return Check("base-image", OK, f"{image} is present locally (vLLM's release image)")
    found, said = docker_checks.registry_has(image)
    if found == "found":
        return Check("base-image", OK, f"{image}: not present locally; the registry has it")
    return Check(
        "base-image",
        FAIL,
        f"{image} ({IMAGE_KNOB}, {settings.source(IMAGE_KNOB)}) is not present locally and "
        f"its registry {'lacks it' if found == 'missing' else 'cannot be reached'}: {said}",
        f"`docker load` vLLM's release image, or {IMAGE_KNOB}=<a mirror's copy>",
    )


def checks(state: docker_checks.DockerState, settings: Knobs, pins: Pins) -> list[Check]:
    return [switches(settings), proven(pins), base_image(state, settings, pins)]
