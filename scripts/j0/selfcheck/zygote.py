"""Checks on the CPU forked from a process that has imported vLLM already: for a session that runs
many checks (the test suite runs about twenty), where each worker would otherwise spend 8 s of CPU
importing vLLM, torch and their dependencies before its first kernel.

Off unless `J0_SELFCHECK_ZYGOTES=DIR` is set. Then the worker that `j0 selfcheck --device cpu`
starts (`python -m j0.selfcheck`, __main__.py) asks a zygote to run the check in its place and
waits for it. A zygote is started once per environment (`env_key`: the worker's environment as a
hash) and imports what the worker imports before the checked file: vLLM's package of the
speculator and every module the installed speculator.py imports, torch, numpy, this package.
Per request it forks, and the fork becomes the worker: a session of its own, the caller's
stdin/stdout/stderr (passed over the socket), working folder, environment and arguments, then
`worker.main` as `python -m j0.selfcheck` runs it, the checked file imported there. The caller
exits as the fork did (a signal's death included); SIGTERM to the caller stops the fork.

Whatever goes wrong with a zygote (none can start, it refuses the environment, it went away), the
caller runs the check itself as without one; what went wrong is in DIR/KEY.log. A zygote ends
after IDLE_S without a request, or when DIR is gone; `stop_all(DIR)` ends them all.

Standard library only: the caller imports it before it knows that vLLM is there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from j0.errors import J0Error, parse_json

ZYGOTES_ENV = "J0_SELFCHECK_ZYGOTES"
# Set per test and per pytest-xdist worker, and by the shell per command (`_`); nothing reads
# them while importing vLLM. The fork gets the caller's values all the same.
PER_CALLER = frozenset({"PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "_"})
IDLE_S = 300.0
START_TIMEOUT_S = 300.0
STOP_GRACE_S = 60.0
MESSAGE_BYTES = 1 << 20
# Not a verdict (j0.selfcheck.kernels: 0 OK, 1 DEVIATES, 2 NO_J0; 69 a package missing): the
# command reports it as the check's process exiting with this code.
LOST_WORKER = 70


def env_key(env: Mapping[str, str]) -> str:
    """The environment as the import sees it: every variable but PER_CALLER's, PYTHONPATH with
    its empty and repeated entries dropped (the first of each kept, as sys.path keeps it)."""
    items = {k: v for k, v in env.items() if k not in PER_CALLER}
    if "PYTHONPATH" in items:
        kept: list[str] = []
        for entry in items["PYTHONPATH"].split(os.pathsep):
            if entry and entry not in kept:
                kept.append(entry)
        items["PYTHONPATH"] = os.pathsep.join(kept)
    text = json.dumps(sorted(items.items()))
    return hashlib.sha256(f"{sys.executable}\n{text}".encode()).hexdigest()[:24]


@contextlib.contextmanager
def socket_name(path: Path) -> Iterator[str]:
    """`path` by a name short enough for a Unix socket (108 bytes, which a pytest temporary
    folder can pass): through a descriptor of its folder, /proc/self/fd/N/NAME."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


# --- The caller's side -------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _running(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _zygote(folder: Path, env: Mapping[str, str]) -> Path | None:
    """The socket of the zygote for `env`, started here if there is none; None where none can
    run (one failed to start for this environment before: not tried again)."""
    key = env_key(env)
    sock, pid_file, log = (folder / f"{key}.{ext}" for ext in ("sock", "pid", "log"))
    failed = folder / f"{key}.failed"
    with _locked(folder / f"{key}.lock"):
        if sock.exists() and _running(pid_file):
            return sock
        if failed.exists():
            return None
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "j0.selfcheck.zygote", str(folder), key],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not the caller's: it outlives this check
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline:
            if sock.exists() and _running(pid_file):
                return sock
            time.sleep(0.05)
        failed.write_text(f"exit {process.poll()}: see {log}\n")
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        return None


def run_forked(args: list[str], env: Mapping[str, str]) -> int | None:
    """`python -m j0.selfcheck ARGS` with `env`, forked from a zygote, on this process's
    streams: its exit code (minus the signal that ended it, as subprocess reports one), or None
    where no zygote took it (the caller runs the worker itself). Once a fork has started it is
    never run again here: a zygote gone before saying how its fork ended is LOST_WORKER."""
    folder = env.get(ZYGOTES_ENV)
    if not folder or not Path(folder).is_dir():
        return None
    sock = _zygote(Path(folder), env)
    if sock is None:
        return None
    request = {"args": args, "env": dict(env), "cwd": os.getcwd()}
    fds = [0, 1, 2]
    sys.stdout.flush()
    sys.stderr.flush()
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        try:
            with socket_name(sock) as name:
                conn.connect(name)
            socket.send_fds(conn, [json.dumps(request).encode()], fds)
            started = parse_json(conn.recv(MESSAGE_BYTES) or b"{}", "the zygote's answer")
        except (OSError, J0Error):
            return None
        pid = started.get("pid")
        if not isinstance(pid, int):
            return None  # declined (another environment) or gone
        try:
            status = parse_json(conn.recv(MESSAGE_BYTES) or b"{}", "the zygote's answer").get(
                "status"
            )
        except BaseException:  # Ctrl-C, SIGTERM (owning_children): stop the worker first
            _stop(conn, pid)
            raise
    if not isinstance(status, int):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # an orphan would go on writing on our streams
        print(
            f"j0 selfcheck: the zygote that forked worker {pid} went away before the worker "
            f"ended ({sock}); nothing was checked",
            file=sys.stderr,
        )
        return LOST_WORKER
    return os.waitstatus_to_exitcode(status)


def main_forked(args: list[str]) -> int | None:
    """`python -m j0.selfcheck ARGS` (__main__.py) where ZYGOTES_ENV is set and the check runs on
    the CPU: the worker forked from a zygote, this process waiting for it; SIGTERM and SIGHUP
    here stop it (as they stop a worker of this process's own). Its exit code, or None where no
    zygote took it. A worker killed by a signal ends this process by the same signal."""
    device = args[args.index("--device") + 1] if "--device" in args[:-1] else "cpu"
    if device != "cpu" or not os.environ.get(ZYGOTES_ENV):
        return None

    def stop(number: int, _frame: object) -> None:
        raise SystemExit(128 + number)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    code = run_forked(args, dict(os.environ))
    if code is not None and code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def _stop(conn: socket.socket, pid: int) -> None:
    """SIGTERM to the worker's session, SIGKILL after STOP_GRACE_S, as stop_group does."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    conn.settimeout(STOP_GRACE_S)
    with contextlib.suppress(OSError):
        if conn.recv(MESSAGE_BYTES):
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def stop_all(folder: Path) -> None:
    """SIGTERM to every zygote started under `folder` (their workers are left to finish)."""
    for pid_file in folder.glob("*.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)


# --- The zygote --------------------------------------------------------------------------------


def _imports_of(path: Path) -> list[str]:
    """The absolute modules a Python file imports (`import a.b`, `from a.b import c`: a.b)."""
    import ast

    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return list(dict.fromkeys(names))


def preimport() -> list[str]:
    """Import what the worker imports before the checked file; the modules named."""
    import importlib
    import importlib.util

    from j0.selfcheck import worker
    from j0.selfcheck.kernels import SPECULATOR_MODULE

    if os.environ.get("TRITON_INTERPRET") == "1":
        worker.quiet_c_extension_warning()  # as worker.main does for --device cpu
    parent = SPECULATOR_MODULE.rsplit(".", 1)[0]
    importlib.import_module(parent)
    spec = importlib.util.find_spec(SPECULATOR_MODULE)
    if spec is None or spec.origin is None:
        raise ImportError(f"{SPECULATOR_MODULE}: not installed")
    names = ["numpy", "torch", parent, *_imports_of(Path(spec.origin))]
    for name in names:
        importlib.import_module(name)
    from j0.selfcheck import batches, compare, expected, wiring  # noqa: F401  (the worker's)

    return names


def _threads() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1


def _become_worker(request: dict[str, object], fds: list[int]) -> None:
    """In the fork: the caller's session, streams, folder, environment and arguments, then the
    worker as `python -m j0.selfcheck` runs it. Never returns."""
    code = 1
    try:
        os.setsid()
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})  # type: ignore[call-overload]
        args = [str(a) for a in request["args"]]  # type: ignore[attr-defined]
        from j0.selfcheck import worker

        sys.argv = [worker.__file__, *args]
        code = worker.main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def _serve_one(conn: socket.socket, key: str) -> None:
    """In a fork of the zygote, per request: check the environment, fork the worker, send its
    pid, wait for it, send its wait status. Never returns."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, MESSAGE_BYTES, 3)
        request = parse_json(data or b"{}", "the zygote's request")
        if len(fds) != 3 or env_key(request.get("env", {})) != key:
            conn.send(json.dumps({"declined": "another environment"}).encode())
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _become_worker(request, fds)
        for fd in fds:
            os.close(fd)
        caller = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        print(f"zygote {key}: worker pid {pid} for caller pid {caller[0]}", flush=True)
        conn.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            conn.send(json.dumps({"status": status}).encode())
    finally:
        os._exit(0)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def serve(folder: Path, key: str) -> int:
    names = preimport()
    threads = _threads()
    if threads != 1:
        print(f"zygote {key}: {threads} threads after the imports; a fork would copy one only")
        return 1
    sock, pid_file = folder / f"{key}.sock", folder / f"{key}.pid"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with contextlib.suppress(FileNotFoundError):
        sock.unlink()
    with socket_name(sock) as name:
        listener.bind(name)
    listener.listen(16)
    listener.settimeout(5.0)
    pid_file.write_text(f"{os.getpid()}\n")
    print(f"zygote {key}: pid {os.getpid()}, {len(names)} modules imported, serving", flush=True)
    sys.stdout.flush()
    last = time.monotonic()
    try:
        while folder.is_dir() and time.monotonic() - last < IDLE_S:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                _reap()
                continue
            last = time.monotonic()
            if os.fork() == 0:
                listener.close()
                _serve_one(conn, key)
            conn.close()
            _reap()
    finally:
        with contextlib.suppress(OSError):
            sock.unlink()
            pid_file.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2]))
