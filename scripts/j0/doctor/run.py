"""`j0 doctor`'s work, apart from its parsing (cli.py): run_doctor(DoctorOptions) -> Report,
the checks of doctor.py (and the modules beside it) in the order `docker compose up` meets
them."""

from __future__ import annotations

from dataclasses import dataclass

from j0.checks import Report
from j0.compose.switches import Knobs
from j0.doctor import cuda, disk, docker_checks, engine_route, gpu, hub, needs
from j0.doctor.doctor import (
    compute_needs,
    gpu_checks,
    is_unset,
    repo_check,
    repo_facts,
    token_check,
)
from j0.pins import Pins


@dataclass(frozen=True)
class DoctorOptions:
    """What the checks are held to: the pins and compose's settings (None: this checkout's, and
    compose's .env and environment as `docker compose` reads them)."""

    pins: Pins | None = None
    settings: Knobs | None = None
    plugin: bool = False  # --plugin: compose.plugin.yaml's route (docs/plugin.md)


def run_doctor(options: DoctorOptions) -> Report:
    """Every check in the order `docker compose up` meets them (see doctor.py)."""
    from j0.compose.switches import resolve
    from j0.pins import load_pins

    pins = options.pins or load_pins()
    settings = options.settings or resolve(pins)
    report = Report(
        "j0 doctor: can this host run `docker compose -f compose.plugin.yaml up` (J0 through "
        "the vLLM plugin)?"
        if options.plugin
        else "j0 doctor: can this host run `docker compose up` (the article's server)?"
    )
    state = docker_checks.engine()
    report.add(state.engine)
    report.add(docker_checks.compose(state))
    report.add(docker_checks.buildx(state))
    report.add(docker_checks.gpu_runtime(state))
    if options.plugin:
        from j0.doctor import plugin_route

        image = settings.get(plugin_route.IMAGE_KNOB, pins.values.get(plugin_route.IMAGE_KNOB, ""))
        report.add(plugin_route.checks(state, settings, pins))
    else:
        route = engine_route.route_of(settings, pins)
        image, knob = engine_route.base_of(route, settings, pins)
        report.add(engine_route.checks(state, settings, pins))
        report.add(
            docker_checks.base_image(
                state, image, pins, f"{knob}, {settings.source(knob)}", wheel_route=route == "wheel"
            )
        )

    compose_token = settings.path("HF_TOKEN_FILE")
    if compose_token is not None and is_unset(str(settings.get("HF_TOKEN_FILE"))):
        compose_token = None
    token = hub.find_token(compose_token)
    target_repo = settings.get("TARGET_MODEL", pins.target_model)
    drafter_repo = settings.get("DRAFTER_REPO", pins.drafter_repo)
    drafter_rev = pins.drafter_commit or settings.get("DRAFTER_REVISION", pins.drafter_revision)
    drafter_dir = settings.path("DRAFTER_DIR")
    target = repo_facts(target_repo, "main", None, settings, token)
    drafter = repo_facts(drafter_repo, drafter_rev, drafter_dir, settings, token)

    need, why = compute_needs(target, drafter, settings)
    try:
        util = float(settings.get("GPU_MEMORY_UTILIZATION", "0.90"))
    except ValueError:
        util = 0.9
    query = gpu.query()
    image_cuda = None
    if query.gpus:  # the CUDA of the image compose runs: its manifest, else the pins
        served = (
            settings.get("J0_PLUGIN_IMAGE", "j0/vllm-openai:plugin")
            if options.plugin
            else settings.get("J0_IMAGE", "j0/vllm-openai:compose")
        )
        present = docker_checks.image_present(state, served)
        image_cuda = cuda.image_cuda(served, present, pins.cuda)
    report.add(gpu_checks(query, need, why, util, image_cuda))

    cache = settings.hub_cache()
    cached = hub.cached_bytes(cache, target_repo)
    report.add(token_check(token, [target, drafter]))
    report.add(repo_check("target-repo", target, cached))
    report.add(repo_check("drafter-repo", drafter, 0))

    here = docker_checks.image_present(state, image)
    downloads = [
        disk.Download(
            f"vLLM's image {image}{' (present)' if here else ''}",
            docker_checks.docker_root(state),
            0 if here else needs.ASSUMED_IMAGE_BYTES,
            not here,
        )
    ]
    if need is not None:
        target_left = max(0, need.weights.bytes - cached)
        downloads.append(
            disk.Download(
                f"{target_repo} weights",
                cache,
                target_left,
                need.weights.source.startswith("estimate"),
            )
        )
        present = drafter.weights_source.endswith(str(drafter_dir)) if drafter_dir else False
        drafter_left = 0 if present else need.drafter_weights.bytes
        downloads.append(
            disk.Download(
                "the drafter",
                drafter_dir or pins.root / "drafter",
                drafter_left,
                need.drafter_weights.source == "estimate",
            )
        )
    report.add(disk.check(downloads))
    return report
