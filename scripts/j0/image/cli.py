"""`j0 image ...`: build the article's image, smoke-test one, and say what an image runs."""

from __future__ import annotations

import argparse

from j0.article.variants import VARIANTS
from j0.checks import FAIL
from j0.commands import (
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
)
from j0.errors import J0Error
from j0.pins import ENGINES
from j0.terminal import sink

IMAGE_HELP = """\
The article's serving image: docker/Dockerfile with vLLM commit VLLM_COMMIT's engine (route wheel:
the release image plus that commit's wheel; route image: the nightly image VLLM_IMAGE) and the
J0-patched speculator.py checked in by sha256.
"""

BUILD_HELP = """\
Build docker/Dockerfile (context: the repository root) with docker-py, printing the build's
progress. Two routes to the article's engine (--engine; default VLLM_ENGINE in overlay/pins.env):
  wheel  FROM the v0.33.0 release image (VLLM_IMAGE_FALLBACK), its vllm replaced (--no-deps) by
         VLLM_COMMIT's wheel from vLLM's per-commit index (VLLM_WHEEL_INDEX, or --wheel-index),
         from its folder of the base's torch CUDA (cu130/ for 13.0), else from its root where
         the root's wheel is that CUDA by its own METADATA; the build refuses a wheel of
         another CUDA (naming both), of another commit, a sha256 other than VLLM_WHEEL_SHA256 when
         pinned, and requirements of the wheel that `pip check` in the image finds unmet; it
         needs the network (Docker's default, or --network host for an index on 127.0.0.1)
  image  FROM VLLM_IMAGE (the nightly tag of VLLM_COMMIT, while Docker Hub keeps it), as it is;
         the build runs with --network none (--base <VLLM_IMAGE_FALLBACK> gives the release's
         own engine, commit 4ba787ec9)
The base image is pulled first if it is not present. The build checks the base image's
speculator.py against BASE_SHA256 and refuses another file (unless --allow-base-drift), patches
it the way `j0 overlay build` does, checks the result against PATCHED_SHA256 (--variant
prefix-safe: then the prefix-safe patch on top, checked against PREFIX_SAFE_SHA256) and writes
/opt/j0/manifest.json. Labels record the route, the base image, its digest, the pinned wheel
and this repository's git revision.
"""

SMOKE_HELP = """\
Run checks in containers of IMAGE with --network none and no GPU:
  file        the installed speculator.py, found by the image's python3, is the article's file
  manifest    /opt/j0/manifest.json and the image's labels agree with overlay/pins.env
  engine      the image's vLLM version and commit (vllm/_version.py) agree with the manifest
              and the j0.vllm.* labels; a warning, not a failure, when the commit is not
              VLLM_COMMIT (the v0.33.0 fallback is commit 4ba787ec9, not c50aca14)
  entrypoint  the entrypoint logs the identity line, then runs `vllm serve ARGS` (a stand-in
              `vllm` that only echoes is put first on PATH for this check)
  import      the patched module imports on the CPU (CUDA_VISIBLE_DEVICES="", TRITON_INTERPRET=1)
  selfcheck   `j0 selfcheck --device cpu` inside the image (skipped where the image's j0 has none)
Exit 0 when every check passes (or is skipped, or warns); 1 otherwise, naming the failed checks.
"""

IDENTITY_HELP = """\
Print the vLLM version and commit of this Python's vLLM (from vllm/_version.py, read as text, and
whether it is the pinned VLLM_COMMIT), then the path, sha256 and identity
of the speculator.py it would run, found without importing vLLM (article / prefix-safe / base /
other). The image's entrypoint runs this
at every start. Exit 0 whatever the identity (it reports, it does not judge); 2 when no vLLM is
found.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = add_command(
        subparsers,
        "image",
        "build, smoke-test and inspect the article's Docker image",
        IMAGE_HELP,
    )
    commands = group.add_subparsers(dest="image_command", metavar="SUBCOMMAND")
    commands.required = True

    build = add_command(
        commands,
        "build",
        "build docker/Dockerfile on the pinned vLLM image",
        BUILD_HELP,
    )
    build.add_argument(
        "--base",
        metavar="IMAGE",
        help="base image (default: VLLM_IMAGE_FALLBACK for --engine wheel, VLLM_IMAGE for "
        "--engine image, from overlay/pins.env; a repo:tag@sha256:... digest form pins it)",
    )
    build.add_argument(
        "--engine",
        choices=ENGINES,
        help="the engine's route (default: VLLM_ENGINE from overlay/pins.env, wheel)",
    )
    build.add_argument(
        "--wheel-index",
        metavar="URL",
        default="",
        help="PEP 503 index holding the vllm wheel of VLLM_COMMIT (default: VLLM_WHEEL_INDEX "
        "from overlay/pins.env; {commit} is replaced by the commit)",
    )
    build.add_argument(
        "--network",
        metavar="MODE",
        help="the build's network (default: none for --engine image, Docker's default for wheel)",
    )
    build.add_argument(
        "--tag", metavar="TAG", help="tag of the result (default: j0/vllm-openai:<commit[:8]>-j0)"
    )
    build.add_argument(
        "--allow-base-drift",
        action="store_true",
        help="build arg ALLOW_BASE_DRIFT=1: patch a base whose speculator.py is not the pinned "
        "one (the patch must still apply cleanly; the image then does not hold the article's file)",
    )
    build.add_argument(
        "--no-pull", action="store_true", help="never pull the base image; it must be present"
    )
    build.add_argument(
        "--variant",
        choices=VARIANTS,
        default="article",
        help="which speculator.py the image holds (build arg J0_VARIANT): article (default), or "
        "prefix-safe (the article's file with overlay/jetspec-j0-prefix-safe.patch on top; tag "
        "suffix -prefix-safe)",
    )
    add_json_option(build, "what was built (image id, tag, base, route, variant, network, size)")
    build.set_defaults(func=run_build)

    smoke = add_command(
        commands,
        "smoke",
        "check an image in containers without network or GPU",
        SMOKE_HELP,
    )
    smoke.add_argument("image", metavar="IMAGE")
    smoke.add_argument(
        "--timeout",
        type=finite_number(0, above=True),
        default=600.0,
        metavar="S",
        help="seconds each check's container may run (default 600)",
    )
    add_json_option(smoke, "each check (name, status, detail, fix) and whether all passed")
    smoke.set_defaults(func=run_smoke)

    identity = add_command(
        commands,
        "identity",
        "say which speculator.py this Python's vLLM runs (the entrypoint's log line)",
        IDENTITY_HELP,
    )
    add_json_option(identity, "the identity")
    identity.add_argument("--prefix", default="j0", help="word that starts the line (default j0)")
    identity.set_defaults(func=run_identity)


def run_build(args: argparse.Namespace) -> int:
    import json

    from j0.image.run import ImageBuildOptions
    from j0.image.run import run_build as build

    check_json_output(args.json)
    built = build(
        ImageBuildOptions(
            base=args.base,
            tag=args.tag,
            allow_base_drift=args.allow_base_drift,
            pull=not args.no_pull,
            engine=args.engine,
            wheel_index=args.wheel_index,
            network=args.network,
            variant=args.variant,
        )
    )
    sink.result("", json.dumps(built.to_json(), indent=1))
    return 0


def run_smoke(args: argparse.Namespace) -> int:
    """Each check's line as it ends; then the JSON (--json), and the verdict: a failed check is
    the J0Error naming every failed one (exit 1)."""
    import json

    from j0.image.run import SmokeOptions
    from j0.image.run import run_smoke as smoke

    check_json_output(args.json)
    smoked = smoke(SmokeOptions(args.image, timeout=args.timeout))
    if args.json is not None:
        sink.result("", json.dumps(smoked.to_json(), indent=1))
    if not smoked.passed:
        raise J0Error(f"smoke test of {smoked.image} failed: {', '.join(smoked.named(FAIL))}")
    sink.say(smoked.last_line(), flush=True)  # not under --json alone
    return 0


def run_identity(args: argparse.Namespace) -> int:
    from j0.image.run import IdentityOptions
    from j0.image.run import run_identity as identify

    check_json_output(args.json)
    identified = identify(IdentityOptions(prefix=args.prefix))
    sink.result(identified.line, identified.json_text)
    return 0
