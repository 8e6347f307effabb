"""What `j0 mini run --here` needs before it makes or starts anything, each missing piece one line
and exit 69, as `j0 engine-check` refuses (j0.engine.server.local_needs): an NVIDIA GPU, vLLM and
what its server imports (uvicorn, fastapi, ...), and the speculator.py this Python's vLLM will
import being the article's file (with --variant prefix-safe: its prefix-safe variant), by the
sha256 its identity line will carry. Half the matrix is J0 on: on any other file those settings
would be J0-off measurements presented as J0 on. A stand-in in the place of `vllm serve` (tests)
brings its own server, so the GPU and the server's packages are not asked of it; the file is.

Then the run's folder: a new one, or one an earlier `j0 mini run` left unfinished or failed,
which is moved aside (kept, never overwritten) so that it does not block this run; a folder of
a run that passed, or not of `j0 mini run`, is refused (64).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from j0.article.identity import ARTICLE, PREFIX_SAFE
from j0.article.variants import ARTICLE_VARIANT
from j0.engine.server.identity_record import IdentityRecord
from j0.errors import UNAVAILABLE, USAGE, J0Error

PURPOSE = "j0 mini run --here"
NOTHING = "nothing was made or started"
# Written first into the run's folder: the folder is a `j0 mini run`'s (mini-run.json comes last).
STARTED = "mini-run-started.json"
# --variant -> the identity J0 must run from (a variant is named by the identity it gives)
WANTED = {ARTICLE_VARIANT: ARTICLE, PREFIX_SAFE: PREFIX_SAFE}
WORDS = {ARTICLE: "the article's J0 file", PREFIX_SAFE: "the prefix-safe variant of it"}


def preflight(variant: str, stand_in: bool) -> IdentityRecord:
    """Refuse (69) what this machine cannot run as asked; else the identity of the speculator.py
    the servers will import (`j0 image identity --json`)."""
    from j0.engine.server import local_needs as needs

    if not stand_in:
        needs.require_gpu(PURPOSE, NOTHING)
        needs.require_server_packages(PURPOSE, NOTHING)
    found = needs.here_identity(PURPOSE)
    want = WANTED[variant]
    if found.identity != want:
        flag = "" if variant == ARTICLE_VARIANT else f" --variant {variant}"
        raise J0Error(
            f"{PURPOSE}: this Python's vLLM would import {found.path} (sha256 "
            f"{found.sha256[:12]}…, identity={found.identity}), not {WORDS[want]}: "
            f"its J0-on settings would run without that J0. Put the file there (`j0 overlay "
            f"build{flag} -o {found.path}` keeps the old one as .orig), or run inside the "
            f"image; {NOTHING}",
            UNAVAILABLE,
        )
    return found


def _passed(summary: Path) -> bool:
    """Whether the folder's mini-run.json says the run passed (one that cannot be read: no)."""
    from j0.mini.run.run_summary import RunSummary

    try:
        return RunSummary.read(summary).passed
    except (OSError, J0Error):
        return False


def check_run_dir(work: Path) -> str | None:
    """None where `work` is free; "failed" or "did not finish" where an earlier `j0 mini run`
    left it so (move_aside makes it free); else a refusal (64). Changes nothing."""
    if not work.exists():
        return None
    summary = work / "mini-run.json"
    ours = work.is_dir() and ((work / STARTED).is_file() or (work / "prompts.jsonl").is_file())
    if not ours:
        raise J0Error(f"{work}: exists; move it away first (nothing is overwritten)", USAGE)
    if summary.is_file() and _passed(summary):
        raise J0Error(
            f"{work}: holds a run that passed (mini-run.json); move it away first, or give "
            "--run-dir (nothing is overwritten)",
            USAGE,
        )
    return "failed" if summary.is_file() else "did not finish"


def move_aside(work: Path, what: str, say: Callable[[str], None]) -> Path:
    """Rename an earlier run's folder to WORK.failed-N (the first N free); said in one line."""
    number = 1
    while work.with_name(f"{work.name}.failed-{number}").exists():
        number += 1
    aside = work.with_name(f"{work.name}.failed-{number}")
    work.rename(aside)
    say(f"==> {work} held an earlier run that {what}: moved aside to {aside} (kept as it was)")
    return aside
