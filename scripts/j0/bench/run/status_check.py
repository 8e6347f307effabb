"""`--status-json FILE` checked against the server the bench talks to, not believed: the status
of another server (another URL, model, context length, J0 setting or draft length) would label
this run with that server's setup (the manifest saying k=15 J0 on while the run's own responses
say k=7). Before any request: the URL, the served model and its max_model_len, and, where
`--log` is given too, J0's state and the speculative config the log shows; after the measured
requests: the draft length the responses report. A mismatch is refused (exit 2), naming both
values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from j0.article.spec_config import LoggedSpec
from j0.errors import INPUT_LACKS, J0Error

if TYPE_CHECKING:
    from j0.bench.result.manifest import SeenRun
    from j0.bench.result.request_entry import RequestEntry

DEFAULT_PORTS = {"http": 80, "https": 443}


def _address(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url.strip())
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        port = None
    return (parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path.rstrip("/"))


def _refuse(status: SeenRun, problems: list[str]) -> None:
    if problems:
        raise J0Error(
            f"--status-json {status.file}: not the status of the server this bench talks to: "
            + "; ".join(problems)
            + " (run `j0 status --url URL --json` against this server)",
            INPUT_LACKS,
        )


def refuse_another_server(
    status: SeenRun,
    url: str,
    model: str,
    card: dict[str, Any],
    log: SeenRun | None,
) -> None:
    """Before any request (see the module's docstring)."""
    said = status.status
    if said is None:
        raise ValueError(f"{status.file}: not a --status-json file's (manifest.read_status)")
    problems = []
    theirs = said.url or ""
    if _address(theirs) != _address(url):
        problems.append(f"URL {theirs!r} in the file, the bench's {url!r}")
    if said.model != model:
        problems.append(f"model {said.model!r} in the file, the server serves {model!r}")
    length = said.max_model_len
    if length is not None and card.get("max_model_len") != length:
        problems.append(
            f"max_model_len {length} in the file, the server's {card.get('max_model_len')}"
        )
    if log is not None:
        if status.j0_on is not None and log.j0_on is not None and status.j0_on != log.j0_on:
            on = {True: "on", False: "off"}
            problems.append(
                f"J0 {on[status.j0_on]} in the file, {on[log.j0_on]} in --log {log.file}"
            )
        spec, logged = status.speculative_config, log.speculative_config
        if spec and logged and spec != logged:
            problems.append(f"speculative config {spec} in the file, {logged} in --log")
    _refuse(status, problems)


def status_k(status: SeenRun) -> int | None:
    said = status.status.num_speculative_tokens if status.status is not None else None
    if said is None:
        said = LoggedSpec.of(status.speculative_config).tokens
    return LoggedSpec(tokens=said).whole_tokens


def refuse_another_k(status: SeenRun, entries: Sequence[RequestEntry]) -> None:
    """After the measured requests: the draft length the responses report (each request's
    num_spec_tokens, else its most drafted per step) is the status file's."""
    from j0.bench.analysis.acceptance import width_of

    k = status_k(status)
    seen = width_of(entries)
    if k is not None and seen and seen != k:
        _refuse(
            status,
            [
                f"num_speculative_tokens {k} in the file, the server's responses report {seen} "
                "draft tokens per step; the requests finished so far are kept, not complete"
            ],
        )
