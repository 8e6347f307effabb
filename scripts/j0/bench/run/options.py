"""What `j0 bench run` is told: every flag of the command as a typed field, and the checks that
argparse makes for the command line, made again for callers that build the options themselves.

Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from j0.engine.endpoints import check_server_url
from j0.errors import USAGE, J0Error

DEFAULT_REQUESTS = 10


@dataclass
class RunOptions:
    """`j0 bench run`'s flags (`--timeout` is timeout_s; `--no-thinking` and `--no-progress` are
    thinking and progress false; `--j0 on|off` is True or False; `--system-prompt` is the text,
    @FILE already read: see system_prompt_of). `quiet` prints nothing."""

    url: str
    out: Path
    requests: int | None = None
    max_tokens: int = 4096
    dataset: str = "synthetic"
    dataset_files: Path | None = None
    concurrency: int = 1
    warmup: int = 0
    label: str | None = None
    model: str | None = None
    thinking: bool = True
    endpoint: str = "chat"
    temperature: float = 0.0
    ignore_eos: bool = False
    bin_size: int = 512
    status_json: Path | None = None
    j0: bool | None = None
    overlay_identity: str | None = None
    timeout_s: float = 3600.0
    progress: bool = True
    quiet: bool = False
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None  # where system_prompt was read from (@FILE)


def system_prompt_of(value: str | None) -> tuple[str | None, str | None]:
    """`--system-prompt TEXT|@FILE` -> (the text, the file it came from or None)."""
    if value is None or not value.startswith("@"):
        return value, None
    path = Path(value[1:])
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise J0Error(f"--system-prompt @{path}: no such file", USAGE) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise J0Error(
            f"--system-prompt @{path}: cannot be read as UTF-8 text ({exc})", USAGE
        ) from None
    if not text.strip():
        raise J0Error(f"--system-prompt @{path}: the file is empty; expected the text", USAGE)
    return text, str(path)


def check_options(opts: RunOptions) -> None:
    for name, value, least in (
        ("--requests", opts.requests, 1),
        ("--max-tokens", opts.max_tokens, 1),
        ("--concurrency", opts.concurrency, 1),
        ("--warmup", opts.warmup, 0),
        ("--bin-size", opts.bin_size, 1),
        ("--repeats", opts.repeats, 1),
    ):
        if value is not None and value < least:
            raise J0Error(f"{name} {value}: expected {least} or more", USAGE)
    for name, number, positive in (
        ("--temperature", opts.temperature, False),
        ("--timeout", opts.timeout_s, True),
    ):
        if not math.isfinite(number) or number < 0 or (positive and number == 0):
            bound = "above 0" if positive else "0 or more"
            raise J0Error(f"{name} {number}: expected a finite number {bound}", USAGE)
    check_server_url(opts.url)
    if opts.endpoint not in ("chat", "completions"):
        raise J0Error(f"--endpoint {opts.endpoint}: expected chat or completions", USAGE)
    if opts.system_prompt is not None and not opts.system_prompt.strip():
        raise J0Error("--system-prompt '': expected a text, or @FILE", USAGE)
    if opts.out.is_dir():
        raise J0Error(f"--out {opts.out}: is a folder; expected a file name", USAGE)
