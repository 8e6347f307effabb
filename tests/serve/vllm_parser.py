"""vLLM 0.33.0's own `vllm serve` parser, built once per test process from the test
environment's vLLM (installed there with --no-deps, torch CPU beside it), as the reference that
j0's table of vLLM's options is checked against. None where it cannot be built here."""

from __future__ import annotations

import functools
import os
from typing import Any


@functools.cache
def vllm_parser() -> Any | None:
    # vLLM infers the device at parser build time; this machine has no GPU.
    before = os.environ.get("VLLM_TARGET_DEVICE")
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    except Exception:  # vLLM or torch not installed: the tests that need it are skipped
        return None
    finally:
        if before is None:
            del os.environ["VLLM_TARGET_DEVICE"]
        else:
            os.environ["VLLM_TARGET_DEVICE"] = before
