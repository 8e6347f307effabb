"""Processes a command starts, owned by it: each in a process group (a session) of its own, and
stopped with the command, however it ends.

`start_owned` starts one and records it; `stop_group` stops its whole group (vLLM's engine core
is a child of the API server): SIGTERM, then SIGKILL after a grace period. `owning_children()`
wraps a command that starts processes: while it runs, SIGTERM and SIGHUP end the command as
SystemExit(128 + the signal) raised in the main thread, so that every `finally` on the way out
runs (a server's `stop()`, subprocess.run killing its child), and on the way out every group
still recorded is stopped. SIGINT (Ctrl-C) raises KeyboardInterrupt as usual; the children, in
sessions of their own, do not get the terminal's Ctrl-C and are stopped the same way. A second
signal while stopping is ignored (the stop is under way).

Without this, SIGTERM to `j0 mini run --here` or `j0 engine-check --here` ended Python at once,
before any `finally`, and left the vLLM server running, holding its port and the GPU; SIGTERM to
`j0 selfcheck` left its worker.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from j0.terminal import sink

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
GRACE_S = 60.0  # SIGTERM to SIGKILL, for a server that frees the GPU as it stops

_owned: dict[int, subprocess.Popen[Any]] = {}


def start_owned(argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """Popen(argv) in a new session (its own process group), recorded until stop_group."""
    process: subprocess.Popen[Any] = subprocess.Popen(list(argv), start_new_session=True, **popen)
    _owned[process.pid] = process
    return process


def owned_pids() -> list[int]:
    return sorted(_owned)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop_group(process: subprocess.Popen[Any], grace_s: float = GRACE_S) -> None:
    """SIGTERM to the process's whole group, SIGKILL after grace_s; then SIGKILL to what is left
    of the group (a child that ignored SIGTERM). Returns once the process itself is reaped."""
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
    _signal_group(process.pid, signal.SIGKILL)  # leftovers of the group, if any
    _owned.pop(process.pid, None)


def stop_all(grace_s: float = GRACE_S) -> None:
    for pid in owned_pids():
        process = _owned.get(pid)
        if process is not None:
            stop_group(process, grace_s)


def wait_owned(process: subprocess.Popen[Any]) -> int:
    """The process's exit code; its group stopped if the wait is ended by an exception (a
    signal, Ctrl-C)."""
    try:
        return process.wait()
    finally:
        stop_group(process)


@contextlib.contextmanager
def owning_children() -> Iterator[None]:
    """While the block runs: SIGTERM/SIGHUP end it as SystemExit(128 + signal) so that `finally`
    blocks run; on the way out, every owned process group still alive is stopped."""
    if threading.current_thread() is not threading.main_thread():
        try:
            yield
        finally:
            stop_all()
        return
    stopping = False

    def on_signal(number: int, _frame: object) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        name = signal.Signals(number).name
        sink.warn(f"j0: stopped by {name}: stopping the processes it started")
        raise SystemExit(128 + number)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        try:
            stop_all()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def owning(command: Any) -> Any:
    """`command` (a parser's func) run inside owning_children()."""

    def run(args: Any) -> Any:
        with owning_children():
            return command(args)

    run.__name__ = getattr(command, "__name__", "command")
    run.__doc__ = command.__doc__
    return run
