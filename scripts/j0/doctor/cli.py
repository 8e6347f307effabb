"""`j0 doctor` and `j0 status`: arguments only; the checks are in doctor.py and status.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import add_command

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
  gpu-memory    one GPU holds the target's weights, the drafter, the KV cache for
                --max-num-seqs 4 at MAX_MODEL_LEN (from the target's config.json) and J0's history
  hf-token      a Hugging Face token where compose passes it (HF_TOKEN_FILE), never printed
  target-repo   the target on the Hub: gated or not, and whether the token opens it
  drafter-repo  the same for the drafter
  disk          free space where the Hub cache and the drafter's folder go

The knobs are read as compose reads them: the environment, .env, overlay/pins.env, then the
defaults in compose.serve.yaml. Sizes come from the Hub (huggingface_hub, the `hub` extra) or what
is on disk; else stated estimates. Runs anywhere: without Docker or a GPU it says exactly that.
Exit 0: ready; 1: not ready (a check failed).
"""

STATUS_HELP = """\
Say whether a running server is the article's setup. From the server: /health, /v1/models (model,
max_model_len), /metrics (the spec-decode counters, present and moving after one short probe
request). From its log (`docker compose logs server` with --compose, or --log FILE): the
entrypoint's identity line (which speculator.py runs, and vLLM's version and commit), J0 on/off and
the history's shape (the patch's `DFLASH_CTX_NOISE=... pool=(...)` line), the draft KV cache
dtypes (`DFLASH_DRAFT_KV_DTYPES=...`) and the speculative config. Ends with one line: the article's
setup or not, and why. --json prints flat keys for a benchmark's manifest.
Exit 0: the article's setup (J0 on or off); 1: not, or the server does not answer.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    doctor = add_command(
        subparsers,
        "doctor",
        "can this host run `docker compose up`? (Docker, GPU, memory, Hub, disk)",
        DOCTOR_HELP,
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=run_doctor)

    status = add_command(
        subparsers,
        "status",
        "is the running server the article's setup? (health, counters, its log)",
        STATUS_HELP,
    )
    status.add_argument(
        "--url",
        metavar="URL",
        help="the server (default: http://127.0.0.1:$PORT, PORT as compose has it, else 8000)",
    )
    source = status.add_mutually_exclusive_group()
    source.add_argument(
        "--compose",
        action="store_true",
        help="read the server's log with `docker compose logs server` (in the j0 checkout)",
    )
    source.add_argument("--log", type=Path, metavar="FILE", help="read the server's log from FILE")
    status.add_argument(
        "--api-key-file",
        type=Path,
        metavar="FILE",
        help="the server's API key (default: API_KEY_FILE as compose has it)",
    )
    status.add_argument(
        "--no-probe",
        action="store_true",
        help="send no request (the counters are then only checked for presence)",
    )
    status.add_argument("--json", action="store_true", help="print one flat JSON object")
    status.set_defaults(func=run_status)


def run_doctor(args: argparse.Namespace) -> int:
    from j0.doctor import doctor, settings
    from j0.pins import load_pins

    pins = load_pins()
    report = doctor.run(pins, settings.resolve(pins))
    print(report.json() if args.json else report.text())
    return 0 if report.ready else 1


def run_status(args: argparse.Namespace) -> int:
    from j0.doctor import status

    return status.main(args)
