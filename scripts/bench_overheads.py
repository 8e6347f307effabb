#!/usr/bin/env python3
"""The timings that the fast tests do not assert (a loaded machine would fail them), measured
by hand and quoted in docs/bench.md:

- the bench client's overhead: decode tok/s as `j0 bench run` measures it against the rate at
  which our vLLM stand-in (tests/servers/vllm/server.py, on 127.0.0.1) wrote the tokens, and
  the client's own parsing time as a fraction of the requests' time (client_time_fraction);
- the result file written after every finished request: the time to write one (serialised and
  fsynced, j0.edge.atomic) of a run with --write-requests requests;
- `j0 --help` in a fresh interpreter (the command must stay quick: heavy imports are deferred).

    PYTHONPATH=scripts .venv/bin/python scripts/bench_overheads.py [--runs 5]

It needs the `bench` extra (aiohttp, tqdm, prometheus_client); it prints one line per figure,
the median and the worst of --runs runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]


def client_overhead(requests: int, max_tokens: int, step_delay: float) -> tuple[float, float]:
    """(relative difference of client and server decode tok/s, client_time_fraction)."""
    from j0.cli import main
    from servers.vllm.server import VllmStandIn

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        with VllmStandIn(num_spec_tokens=7, seed=5, step_delay=step_delay) as server:
            with contextlib.redirect_stderr(io.StringIO()):
                code = main(
                    ["bench", "run", "--url", server.url, "--out", str(out), "--no-progress",
                     "--requests", str(requests), "--max-tokens", str(max_tokens)]
                )  # fmt: skip
            records = list(server.records)
        if code != 0:
            raise SystemExit(f"j0 bench run exited {code}")
        doc = json.loads(out.read_text())
    server_tokens = sum(r.output_tokens - 1 for r in records)
    server_time = sum(r.last_token_time - r.first_token_time for r in records)
    client_tokens = sum(e["output_tokens"] - 1 for e in doc["requests"])
    client_time = sum(e["decode_s"] for e in doc["requests"])
    server_rate, client_rate = server_tokens / server_time, client_tokens / client_time
    return abs(server_rate - client_rate) / server_rate, doc["summary"]["client_time_fraction"]


def result_write_s(requests: int, max_tokens: int) -> float:
    """Seconds to write (serialise, fsync, rename) the result of a run of `requests` requests."""
    from j0.bench.result.results import read_result
    from j0.cli import main
    from servers.vllm.server import VllmStandIn

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        with VllmStandIn(num_spec_tokens=7, seed=5) as server:
            with contextlib.redirect_stderr(io.StringIO()):
                main(["bench", "run", "--url", server.url, "--out", str(out), "--no-progress",
                      "--requests", str(requests), "--max-tokens", str(max_tokens),
                      "--dataset", "synthetic:200"])  # fmt: skip
        result = read_result(out)
        started = time.perf_counter()
        result.write(Path(tmp) / "again.json")
        return time.perf_counter() - started


def help_s() -> float:
    code = (
        "import contextlib, io\n"
        "from j0.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": str(ROOT / "scripts"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    return time.perf_counter() - started


def _line(name: str, values: list[float], unit: str, scale: float = 1.0) -> str:
    shown = [v * scale for v in values]
    return (
        f"{name:<58} median {statistics.median(shown):8.3f} {unit}, worst {max(shown):8.3f} {unit}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each figure (default 5)")
    parser.add_argument("--requests", type=int, default=2, help="requests per overhead run")
    parser.add_argument("--max-tokens", type=int, default=400, help="tokens per request")
    parser.add_argument("--step-delay", type=float, default=0.004, help="stand-in step (s)")
    parser.add_argument("--write-requests", type=int, default=100, help="requests of the file")
    args = parser.parse_args(argv)
    rates: list[float] = []
    fractions: list[float] = []
    for _ in range(args.runs):
        rate, fraction = client_overhead(args.requests, args.max_tokens, args.step_delay)
        rates.append(rate)
        fractions.append(fraction)
    writes = [result_write_s(args.write_requests, 100) for _ in range(args.runs)]
    helps = [help_s() for _ in range(args.runs)]
    lines: list[Any] = [
        f"bench overheads, {args.runs} runs; {args.requests} requests x {args.max_tokens} tokens, "
        f"stand-in step {args.step_delay * 1000:g} ms",
        _line("decode tok/s, client against server (difference)", rates, "%", 100),
        _line("client parsing time / request time", fractions, "%", 100),
        _line(f"one result write ({args.write_requests} requests in the file)", writes, "ms", 1000),
        _line("j0 --help, fresh interpreter", helps, "s"),
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
