"""What `j0 bench run` is told: every flag of the command as a typed field, and the checks that
argparse makes for the command line, made again for callers that build the options themselves.

Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from j0.edge.atomic import check_output_path, refuse_own_inputs
from j0.engine.server.endpoints import check_server_url
from j0.errors import (
    INPUT_LACKS,
    USAGE,
    InputLimit,
    J0Error,
    read_input_text,
    require_input_file,
)

DEFAULT_REQUESTS = 10
ENDPOINTS = ("chat", "completions")  # --endpoint: the OpenAI API route the requests go to
# The whole-request deadline, unless --request-deadline gives one: --timeout (the longest wait
# for data, which covers a queue and a long prefill) plus this much per token asked for.
DEADLINE_PER_TOKEN_S = 1.0


@dataclass
class RunOptions:
    """`j0 bench run`'s flags (`--timeout` is timeout_s, `--request-deadline`
    request_deadline_s, None for the default of deadline_for; `--no-thinking` and
    `--no-progress` are thinking and progress false; `--j0 on|off` is True or False;
    `--system-prompt` is the text, @FILE already read: see system_prompt_of; `--force` replaces
    an existing --out). `quiet` prints nothing."""

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
    seed: int | None = None  # each request's sampling seed from it and its prompt's id
    ignore_eos: bool = False
    bin_size: int = 512
    status_json: Path | None = None
    log: Path | None = None  # the server's log: J0 on/off from the file that ran (manifest)
    j0: bool | None = None
    overlay_identity: str | None = None
    timeout_s: float = 3600.0
    progress: bool = True
    quiet: bool = False
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None  # where system_prompt was read from (@FILE)
    request_deadline_s: float | None = None
    force: bool = False
    keep_outputs: bool = False  # each entry keeps its output's text (`output_text`)

    def deadline_for(self, max_tokens: int) -> float:
        """The whole-request deadline of a request for `max_tokens` tokens: --request-deadline,
        else --timeout + DEADLINE_PER_TOKEN_S per token."""
        if self.request_deadline_s is not None:
            return self.request_deadline_s
        return self.timeout_s + DEADLINE_PER_TOKEN_S * max_tokens

    def inputs(self) -> list[tuple[str, Path]]:
        """The files the run reads, by the flag that names them."""
        found = [("--dataset", Path(self.dataset))] if Path(self.dataset).is_file() else []
        for flag, path in (
            ("--dataset-files", self.dataset_files),
            ("--status-json", self.status_json),
            ("--log", self.log),
            ("--system-prompt @", self.system_prompt_file),
        ):
            if path is not None:
                found.append((flag, Path(path)))
        return found


def system_prompt_of(value: str | None) -> tuple[str | None, str | None]:
    """`--system-prompt TEXT|@FILE` -> (the text, the file it came from or None)."""
    if value is None or not value.startswith("@"):
        return value, None
    path = Path(value[1:])
    # A regular file of at most InputLimit.SMALL bytes, UTF-8: named as "--system-prompt @FILE".
    text = read_input_text(path, "--system-prompt @", limit=InputLimit.SMALL, exit_code=USAGE)
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
        if value is not None and (isinstance(value, bool) or value < least):
            raise J0Error(f"{name} {value}: expected a whole number, {least} or more", USAGE)
    for name, number, zero_ok in (
        ("--timeout", opts.timeout_s, False),
        ("--request-deadline", opts.request_deadline_s, False),
        ("--temperature", opts.temperature, True),
    ):
        if number is not None and not _finite_at_least_zero(number, zero_ok):
            what = "0 or more" if zero_ok else "above 0"
            raise J0Error(f"{name} {number}: expected a finite number, {what}", USAGE)
    check_server_url(opts.url)
    if opts.endpoint not in ENDPOINTS:
        raise J0Error(f"--endpoint {opts.endpoint}: expected chat or completions", USAGE)
    if opts.system_prompt is not None and not opts.system_prompt.strip():
        raise J0Error("--system-prompt '': expected a text, or @FILE", USAGE)
    if opts.out.is_dir():
        raise J0Error(f"--out {opts.out}: is a folder; expected a file name", USAGE)
    check_output_path(opts.out)  # under a file: refused before the server is asked anything
    if Path(opts.dataset).is_dir():
        raise J0Error(
            f"--dataset {opts.dataset}: a folder; expected a .jsonl file, synthetic[:LEN,...] or "
            "a named set",
            INPUT_LACKS,
        )
    if opts.dataset_files is not None:
        require_input_file(opts.dataset_files, "--dataset-files")
    if opts.log is not None:
        require_input_file(opts.log, "--log")
    refuse_own_inputs([("--out", opts.out)], opts.inputs())
    if opts.out.exists() and not opts.force:
        raise J0Error(
            f"--out {opts.out}: exists; give --force to replace it (or another --out): "
            "nothing is overwritten unasked",
            USAGE,
        )


def _finite_at_least_zero(value: float, zero_ok: bool) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= 0 if zero_ok else value > 0)
    )
