"""`j0 bench run`'s work, in order: ask the server what it serves and make the prompts
(discovery), send the warm-up requests (not measured), read /metrics, send the measured requests
(sending; one at a time by default; with --repeats N the prompts N times over, in the same
order each time, on the same server: it is not restarted between repeats), read /metrics
again, then the result (summary) written to FILE.json atomically (also every few seconds while
requests run) and its table printed.

A server that stops answering ends the run; the requests that finished are kept in FILE.json
("complete": false) and RunOutcome.failure() says so.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench import manifest, results
from j0.bench.results import BenchResult
from j0.bench.run.discovery import discover
from j0.bench.run.options import RunOptions, check_options
from j0.bench.run.sending import Measurement, Sender, Server, measure, open_server, warm_up
from j0.bench.run.summary import build_result, failure, say_summary
from j0.engine.prometheus_counters import Snapshot
from j0.engine.spec_counts import Counts
from j0.errors import J0Error, require

CHECKPOINT_EVERY_S = 5.0
METRICS_SETTLE_TRIES = 6  # vLLM updates its counters just after the last chunk: re-read a little


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: the result written to `out`, and how many requests it set out to send."""

    result: BenchResult
    measured: int
    out: Path

    def failure(self) -> J0Error | None:
        """What the run exits with when it did not fully work (exit 1), else None."""
        return failure(self.result, self.measured, self.out)


def run(options: RunOptions) -> RunOutcome:
    """Measure the server at options.url into options.out; J0Error where it cannot start."""
    check_options(options)
    require("aiohttp", "j0 bench run", extra="bench")
    require("prometheus_client", "j0 bench run", extra="bench")
    status = manifest.read_status(options.status_json) if options.status_json else None
    return asyncio.run(_run(options, status))


def run_as_command(options: RunOptions) -> int:
    """What `j0 bench run` with these options exits with, its error printed as the `j0` command
    prints one (`j0: error: ...`, `j0: interrupted`): for the matrix, which runs it per setting."""
    try:
        problem = run(options).failure()
        if problem is not None:
            raise problem
        return 0
    except J0Error as exc:
        print(f"j0: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("j0: interrupted", file=sys.stderr)
        return 130


async def _run(opts: RunOptions, status: dict[str, Any] | None) -> RunOutcome:
    notes: list[str] = []
    async with open_server(opts, notes) as server:
        found = await discover(server, opts, status, notes)
        sender = Sender(server, opts, found.model, found.manifest, endpoint=opts.endpoint)
        warmup = await warm_up(sender, opts.warmup)
        measurement = Measurement.repeated(found.chosen, opts.repeats)
        last_write = 0.0

        def result_now(
            per_request: Counts | None,
            delta: Counts | None,
            engines: list[str],
            wall: float | None,
            note: str | None,
        ) -> BenchResult:
            return build_result(
                label=opts.label,
                bin_size=opts.bin_size,
                measurement=measurement,
                manifest=found.manifest,
                notes=notes,
                warmup=warmup,
                per_request=per_request,
                delta=delta,
                engines=engines,
                wall=wall,
                note=note,
                repeats=opts.repeats,
            )

        def checkpoint(pooled: Counts | None) -> None:
            nonlocal last_write
            if time.monotonic() - last_write > CHECKPOINT_EVERY_S:
                result_now(pooled, None, [], None, "checkpoint: the run is not finished").write(
                    opts.out
                )
                last_write = time.monotonic()

        before = await server.snapshot()
        started = time.perf_counter()
        await measure(sender, measurement, checkpoint)
        wall = time.perf_counter() - started

        per_request, _ = results.pooled(measurement.finished_entries())
        delta, engines = None, []
        if measurement.dead is None and before is not None:
            delta, engines = await _settled_delta(server, before, per_request)
        note = (
            "the server died: no /metrics after the run" if measurement.dead is not None else None
        )
        result = result_now(per_request, delta, engines, wall, note)
        result.write(opts.out)
        say_summary(result, len(measurement.chosen), opts.out, opts.quiet)
        return RunOutcome(result=result, measured=len(measurement.chosen), out=opts.out)


async def _settled_delta(
    server: Server, before: Snapshot, per_request: Counts | None
) -> tuple[Counts | None, list[str]]:
    """The /metrics counters' change over the measured requests, re-read a few times until
    they match the per-request figures (vLLM counts the last step just after its chunk)."""
    delta: Counts | None = None
    engines: list[str] = []
    for attempt in range(METRICS_SETTLE_TRIES):
        after = await server.snapshot()
        if after is None:
            break
        delta, engines = after.minus(before), after.engines
        if per_request is not None and results.crosscheck(per_request, delta, engines)["match"]:
            break
        if attempt + 1 < METRICS_SETTLE_TRIES:
            await asyncio.sleep(0.25)
    return delta, engines
