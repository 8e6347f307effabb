"""`j0 deploy render`'s work, apart from its parsing (cli.py): run_render(RenderOptions) ->
DeployRender (the kube floor's, j0.kube.serving)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from j0.kube.serving import DeployRender


@dataclass(frozen=True)
class RenderOptions:
    directory: Path | None = None  # None: deploy/k8s in the checkout


def run_render(options: RenderOptions) -> DeployRender:
    """Write the serving manifests from the pins; only files whose text changes are rewritten."""
    from j0.errors import require
    from j0.kube.serving import render_deploy

    require("yaml", "j0 deploy render", extra="deploy")  # before anything is written
    require("huggingface_hub", "j0 deploy render", extra="deploy")  # its repo id validator
    return render_deploy(options.directory)
