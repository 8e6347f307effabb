"""`j0 doctor`: arguments only; the checks are in doctor.py."""

from __future__ import annotations

import argparse

from j0.commands import add_command, add_json_option, check_json_output
from j0.terminal import sink

DOCTOR_HELP = """\
Say whether this host can run the article's `docker compose up`, before anything is pulled or
downloaded. Each check says ok, warn or fail, with a one-line fix:

  docker        the Docker engine answers
  compose       Docker Compose 2.20 or later (compose.yaml uses `include` with env_file)
  buildx        the buildx plugin
  gpu-runtime   Docker can give containers an NVIDIA GPU (nvidia runtime, its hook or CDI devices)
  base-image    VLLM_IMAGE is present locally or pullable; a purged per-commit nightly tag is
                named as such, with the digest and fallback choices and what each means
  gpu           nvidia-smi lists a GPU (name, memory, driver)
  gpu-driver    the driver runs the image's CUDA (its /opt/j0/manifest.json, else VLLM_CUDA of the
                pins: 13.0 needs 580.65.06 or later), else the driver to install, and CUDA's
                forward-compatibility package where the GPU and driver branch allow it
  gpu-memory    one GPU holds the target's weights, the drafter, the KV cache for
                --max-num-seqs 4 at MAX_MODEL_LEN (from the target's config.json) and J0's history
  article-gpu   the GPU has the memory of the article's RTX PRO 6000 Blackwell (96 GB), else how
                much shorter the context of 4 requests is than on it
  hf-token      a Hugging Face token where compose passes it (HF_TOKEN_FILE), never printed
  target-repo   the target on the Hub: gated or not, and whether the token opens it
  drafter-repo  the same for the drafter
  disk          free space where the Hub cache and the drafter's folder go

The knobs are read as compose reads them: the environment, .env, overlay/pins.env, then the
defaults in compose.serve.yaml. Sizes come from the Hub (huggingface_hub, the `hub` extra) or what
is on disk; else stated estimates. Runs anywhere: without Docker or a GPU it says exactly that.
Exit 0: ready; 1: not ready (a check failed).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    doctor = add_command(
        subparsers,
        "doctor",
        "can this host run `docker compose up`? (Docker, GPU, memory, Hub, disk)",
        DOCTOR_HELP,
    )
    add_json_option(doctor, "the checks")
    doctor.add_argument(
        "--plugin",
        action="store_true",
        help="check for compose.plugin.yaml's route instead (J0 through the vLLM plugin on vLLM "
        "0.34.0's release image: its switches, its pins, that image; docs/plugin.md)",
    )
    doctor.set_defaults(func=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from j0.doctor.run import DoctorOptions
    from j0.doctor.run import run_doctor as doctor

    check_json_output(args.json)
    report = doctor(DoctorOptions(plugin=args.plugin))
    sink.result(report.text(), report.json())
    return 0 if report.ready else 1
