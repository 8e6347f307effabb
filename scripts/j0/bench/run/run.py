"""`j0 bench run`'s work, in order: ask the server what it serves and make the prompts
(discovery), send the warm-up requests (not measured), read /metrics, send the measured requests
(sending; one at a time by default; with --repeats N the prompts N times over, in the same
order each time, on the same server: it is not restarted between repeats), read /metrics
again, then the result (summary) written to FILE.json and its table printed.

FILE.json is written atomically (j0.edge.atomic) after every finished request, so that nothing that
finished is lost whatever ends the run. A server that stops answering ends the run; the
requests that finished are kept in FILE.json ("complete": false) and RunOutcome.failure() says
so. SIGINT and SIGTERM end it too: the requests in flight are dropped, FILE.json is written with
the finished ones and the error names the signal, and the run raises a J0Error with exit code
130 or 143 (128 + the signal, as a shell reports it).
"""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.result import manifest, results
from j0.bench.result.manifest import SeenRun
from j0.bench.result.metrics_crosscheck import crosscheck
from j0.bench.result.results import BenchResult
from j0.bench.run import status_check
from j0.bench.run.discovery import discover
from j0.bench.run.options import RunOptions, check_options
from j0.bench.run.sending import Measurement, Sender, ServerSession, measure, open_server, warm_up
from j0.bench.run.summary import build_result, failure, say_summary
from j0.edge.atomic import claimed_output
from j0.engine.figures.prometheus_counters import Snapshot
from j0.engine.figures.spec_counts import Counts
from j0.errors import INTERRUPTED, TERMINATED, J0Error, require
from j0.terminal import sink

EXIT_CODE_OF_SIGNAL = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}
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


def run_bench(options: RunOptions) -> RunOutcome:
    """Measure the server at options.url into options.out; J0Error where it cannot start."""
    check_options(options)
    require("aiohttp", "j0 bench run", extra="bench")
    require("prometheus_client", "j0 bench run", extra="bench")
    status = manifest.read_status(options.status_json) if options.status_json else None
    # The claim on --out is held until the last write: a second run on it is refused.
    with claimed_output(options.out, "--out", replace=options.force):
        return asyncio.run(_run(options, status))


def bench_exit_code(options: RunOptions) -> int:
    """What `j0 bench run` with these options exits with, its error printed as the `j0` command
    prints one (`j0: error: ...`, `j0: interrupted`): for the matrix, which runs it per setting."""
    try:
        problem = run_bench(options).failure()
        if problem is not None:
            raise problem
        return 0
    except J0Error as exc:
        sink.warn(f"j0: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        sink.warn("j0: interrupted")
        return INTERRUPTED


class _Signals:
    """SIGINT and SIGTERM, while a run is on: the first one is recorded and cancels the run's
    task (later ones are ignored: the finished requests are being written). Outside the main
    thread (a caller running it in a thread) signals stay as they were."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self.installed: list[signal.Signals] = []

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for sig in EXIT_CODE_OF_SIGNAL:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig, task)
            except (ValueError, RuntimeError, NotImplementedError):
                continue
            self.installed.append(sig)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self.installed:
            loop.remove_signal_handler(sig)

    def _on_signal(self, sig: signal.Signals, task: asyncio.Task[Any] | None) -> None:
        if self.received is None and task is not None:
            self.received = sig
            task.cancel()

    def error(self, what: str) -> J0Error:
        assert self.received is not None
        return J0Error(
            f"stopped by {self.received.name}: {what}", EXIT_CODE_OF_SIGNAL[self.received]
        )


async def _run(opts: RunOptions, status: SeenRun | None) -> RunOutcome:
    signals = _Signals()
    signals.install()
    try:
        return await _measured_run(opts, status, signals)
    except asyncio.CancelledError:
        if signals.received is None:
            raise
        raise signals.error("before the measured requests; nothing was written") from None
    finally:
        signals.remove()


async def _measured_run(opts: RunOptions, status: SeenRun | None, signals: _Signals) -> RunOutcome:
    notes: list[str] = []
    async with open_server(opts, notes) as server:
        found = await discover(server, opts, status, notes)
        sender = Sender(server, opts, found.model, found.manifest, endpoint=opts.endpoint)
        warmup = await warm_up(sender, opts.warmup)
        measurement = Measurement.repeated(found.chosen, opts.repeats)

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

        def write_now(pooled: Counts | None) -> None:
            note = "the run is not finished: requests finished so far"
            result_now(pooled, None, [], None, note).write(opts.out)

        before = await server.snapshot()
        started = time.perf_counter()
        try:
            await measure(sender, measurement, write_now)
        except asyncio.CancelledError:
            if signals.received is None:
                raise
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            finished = len(measurement.finished_entries())
            measurement.dead = (
                f"stopped by {signals.received.name} after {finished} of "
                f"{len(measurement.chosen)} requests"
            )
            per_request, _ = results.pooled(measurement.finished_entries())
            note = "stopped by a signal: the requests in flight were dropped"
            result_now(per_request, None, [], time.perf_counter() - started, note).write(opts.out)
            raise signals.error(
                f'{finished} finished requests kept in {opts.out} ("complete": false)'
            ) from None
        wall = time.perf_counter() - started

        if status is not None:  # the draft length the responses report is the file's
            status_check.refuse_another_k(status, measurement.finished_entries())
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
    server: ServerSession, before: Snapshot, per_request: Counts | None
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
        if per_request is not None and crosscheck(per_request, delta, engines).match:
            break
        if attempt + 1 < METRICS_SETTLE_TRIES:
            await asyncio.sleep(0.25)
    return delta, engines
