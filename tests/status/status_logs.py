"""Server logs as our entrypoint, `j0 serve` and the patch write them, and `j0 status --json` run
in this process: shared by the status tests and the bench tests that read a status file."""

from __future__ import annotations

import contextlib
import io

from j0.cli import main

ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
BASE_SHA = "27368c98791397625603ba45782119e4d306880841900a9d07587a6d6757d3ee"
SPEC_15 = (
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
)
# vLLM's and uvicorn's lines as the server comes up (tests/status/data/server-j0-on.log).
SERVER_UP = [
    "server-1  | (APIServer pid=60) INFO 11-30 12:01:00 [entry.py:139] Starting vLLM server on "
    "http://0.0.0.0:8000",
    "server-1  | INFO:     Started server process [60]",
    "server-1  | INFO:     Waiting for application startup.",
    "server-1  | INFO:     Application startup complete.",
]
INSTALLED = "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu/spec_decode/dflash"


def article_log(
    commit: str = "c50aca144 (the pinned commit)",
    sha: str = ARTICLE_SHA,
    kind: str = "article (the article's J0 file)",
    pool: str = "(4, 40960)",
    noise: int = 1,
    spec: str = SPEC_15,
    up: bool = True,
) -> str:
    """A server log as `docker compose logs --no-color server` shows it for the article's run:
    `j0 serve`'s lines, the entrypoint's identity line, then vLLM's and the patch's lines, then the
    server coming up (`up`; without it: the start-up only, as our vLLM stand-in's log begins)."""
    return "\n".join(
        [
            "server-1  | j0 serve: target Qwen/Qwen3.8-27B",
            f"server-1  | j0 serve: --speculative-config {spec}",
            "server-1  | j0 serve: --max-num-seqs 4",
            f"server-1  | j0 serve: VLLM_DFLASH_CTX_NOISE={noise}: J0 on",
            f"server-1  | j0-entrypoint: vLLM 0.33.1.dev0+gc50aca144 commit {commit}, "
            f"{INSTALLED}/speculator.py: speculator.py sha256={sha} identity={kind}",
            "server-1  | (EngineCore pid=71) INFO 11-30 12:00:53 [speculator.py:144] "
            f"DFLASH_CTX_NOISE={noise} pool={pool} dump=None/0",
            "server-1  | (EngineCore pid=71) INFO 11-30 12:00:56 [speculator.py:263] "
            "DFLASH_DRAFT_KV_DTYPES=['auto'] spec_kv_cache_dtype=auto",
            *(SERVER_UP if up else []),
            "",
        ]
    )


def status_json(url: str, *args: str) -> tuple[int, str]:
    """`j0 status --url URL --json ARGS` in this process: its exit code and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["status", "--url", url, "--json", *args])
    return code, printed.getvalue()
