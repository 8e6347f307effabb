"""vLLM 0.33.0's own `vllm serve` parser, built once per test process from the test
environment's vLLM (installed there with --no-deps, torch CPU beside it), as the reference that
j0's table of vLLM's options is checked against. None where it cannot be built here."""

from __future__ import annotations

import functools
import os
from typing import Any

# Why the parser could not be built in this process (the exception, as text), for the test that
# requires it: a fresh .ci/run once failed there without saying why.
FAILED: list[str] = []


@functools.cache
def vllm_parser() -> Any | None:
    # vLLM infers the device at parser build time; this machine has no GPU.
    before = os.environ.get("VLLM_TARGET_DEVICE")
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    except Exception as exc:  # vLLM or torch not installed: the tests that need it are skipped
        import traceback

        FAILED.append("".join(traceback.format_exception(exc))[-3000:])
        return None
    finally:
        if before is None:
            del os.environ["VLLM_TARGET_DEVICE"]
        else:
            os.environ["VLLM_TARGET_DEVICE"] = before
