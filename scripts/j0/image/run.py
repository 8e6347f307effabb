"""`j0 image`'s work, apart from its parsing (cli.py): run_build(ImageBuildOptions) ->
ImageBuilt (build.py's), run_smoke(SmokeOptions) -> Smoked (smoke.py's; each check's line is
printed as it ends), run_identity(IdentityOptions) -> Identified."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from j0.image.build import ImageBuilt
    from j0.image.smoke import Smoked


@dataclass(frozen=True)
class ImageBuildOptions:
    """None: what the pins say (the route's base image, the pinned tag, VLLM_ENGINE)."""

    base: str | None = None
    tag: str | None = None
    allow_base_drift: bool = False
    pull: bool = True
    engine: str | None = None
    wheel_index: str = ""
    network: str | None = None
    variant: str = "article"


@dataclass(frozen=True)
class SmokeOptions:
    image: str
    timeout: float = 600.0


@dataclass(frozen=True)
class Identified:
    """Which speculator.py this Python's vLLM runs, as the entrypoint's log line says it."""

    line: str
    json_text: str


def run_build(options: ImageBuildOptions) -> ImageBuilt:
    from j0.image.build import build

    return build(
        base=options.base,
        tag=options.tag,
        allow_base_drift=options.allow_base_drift,
        pull=options.pull,
        engine=options.engine,
        wheel_index=options.wheel_index,
        network=options.network,
        variant=options.variant,
    )


def run_smoke(options: SmokeOptions) -> Smoked:
    from j0.image.smoke import smoke

    return smoke(options.image, timeout=options.timeout)


@dataclass(frozen=True)
class IdentityOptions:
    """`j0 image identity`'s flags: the word its line starts with (--prefix)."""

    prefix: str


def run_identity(options: IdentityOptions) -> Identified:
    from j0.engine.server.speculator_identity import identified

    return Identified(*identified(options.prefix))
