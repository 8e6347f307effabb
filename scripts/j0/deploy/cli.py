"""`j0 deploy render`: argument parsing only (the work: run.py, over j0.kube.serving)."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import FOLDER, add_command, add_json_option, check_json_output, writes
from j0.terminal import sink

RENDER_DESCRIPTION = """\
Write the Kubernetes manifests for serving (deploy/k8s/serving/: PVC, Deployment, Service,
kustomization.yaml) and the vLLM production-stack Helm values (deploy/k8s/production-stack/
values.yaml) from overlay/pins.env, into DIR (default: deploy/k8s in the checkout). Only files
whose text changes are rewritten; each is named as it is written.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    deploy = add_command(
        subparsers,
        "deploy",
        "the serving manifests of deploy/k8s (render)",
        "The serving manifests: `render` writes deploy/k8s/ from the pins.",
    )
    commands = deploy.add_subparsers(
        dest="deploy_command", metavar="COMMAND", parser_class=type(deploy)
    )
    commands.required = True
    p = add_command(
        commands,
        "render",
        "write deploy/k8s/ from overlay/pins.env",
        RENDER_DESCRIPTION,
    )
    p.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="where to write (default: deploy/k8s in the checkout)",
    )
    add_json_option(p, "what was rendered (the folder, the files written, each file's sha256)")
    writes(p, "dir", FOLDER)
    p.set_defaults(func=_render)


def _render(args: argparse.Namespace) -> int:
    import json

    from j0.deploy.run import RenderOptions, run_render

    check_json_output(args.json)
    done = run_render(RenderOptions(args.dir))
    text = "\n".join(f"wrote {path}" for path in done.written)
    sink.result(text, json.dumps(done.to_json(), indent=1))
    return 0
