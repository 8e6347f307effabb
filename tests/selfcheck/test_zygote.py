"""j0.selfcheck.zygote: the worker of `j0 selfcheck --device cpu` forked from a process that has
imported vLLM once (the test run sets J0_SELFCHECK_ZYGOTES, tests/conftest.py).

What a forked check says must be what a check in a process of its own says, byte for byte but for
the times; SIGTERM to `j0 selfcheck` must stop the forked worker; a zygote that cannot start (a
package vLLM needs is missing) must leave the check to run as without one. Real processes: the
real vLLM module, the real kernels in Triton's interpreter, a zygote of each test's own
(but for the forked check's words, which the run's zygote forks).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from j0.selfcheck.kernels import INTERPRETER_ENV
from j0.selfcheck.zygote import (
    LOST_WORKER,
    PER_CALLER,
    ZYGOTES_ENV,
    env_key,
    socket_name,
    stop_all,
)
from test_owned_processes import children_of, running

ROOT = Path(__file__).resolve().parents[2]
HIDE = Path(__file__).parent / "hide_modules"


def test_the_key_is_the_environment_but_per_caller_variables_and_repeated_paths() -> None:
    env = {"PATH": "/usr/bin", "PYTHONPATH": "/a:/b", "TRITON_INTERPRET": "1"}
    same = [
        {**env, "PYTEST_CURRENT_TEST": "t.py::x (call)", "PYTEST_XDIST_WORKER": "gw3", "_": "x"},
        {**env, "PYTHONPATH": "/a:/a:/b:/a"},
        {**env, "PYTHONPATH": ":/a::/b"},
    ]
    assert {env_key(e) for e in same} == {env_key(env)}
    other = [
        {**env, "PYTHONPATH": "/b:/a"},  # another order imports other files first
        {**env, "TRITON_INTERPRET": "0"},
        {**env, "J0_TEST_HIDE_MODULES": "cbor2"},
        {k: v for k, v in env.items() if k != "PATH"},
    ]
    keys = {env_key(e) for e in other}
    assert len(keys) == len(other) and env_key(env) not in keys


NAMES = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12)
VALUES = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20)


@given(
    env=st.dictionaries(NAMES, VALUES, max_size=8),
    per_caller=st.dictionaries(st.sampled_from(sorted(PER_CALLER)), VALUES),
    name=NAMES,
    value=VALUES,
)
def test_per_caller_values_never_change_the_key_and_any_other_value_does(
    env: dict[str, str], per_caller: dict[str, str], name: str, value: str
) -> None:
    env.pop("PYTHONPATH", None)  # its own rule, above
    assert env_key({**env, **per_caller}) == env_key(env)
    if name not in PER_CALLER and name != "PYTHONPATH" and env.get(name) != value:
        assert env_key({**env, name: value}) != env_key(env)


@pytest.fixture
def zygotes(tmp_path: Path):
    folder = tmp_path / "zygotes"
    folder.mkdir()
    yield folder
    stop_all(folder)


def worker_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (ZYGOTES_ENV, "TRITON_INTERPRET")}
    env.update(INTERPRETER_ENV, VLLM_LOGGING_LEVEL="ERROR", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    env.update(extra)
    return env


TIMES = re.compile(r"^  import \d+\.\d s, check \d+\.\d s$", re.MULTILINE)


def _without_times(document: list[dict[str, object]]) -> list[dict[str, object]]:
    times = ("import_seconds", "seconds")
    return [{k: v for k, v in r.items() if k not in times} for r in document]


@pytest.mark.slow
def test_a_forked_check_says_what_a_check_of_its_own_says(
    article_file: Path, tmp_path: Path
) -> None:
    """The article's file passes and a broken copy fails, with the same words and the same
    result document, forked or not; the zygote's log names the caller it forked a worker for.
    Forked by the run's zygote of this environment (tests/conftest.py), the one that forks the
    other tests' `j0 selfcheck --device cpu` workers: started here where none is yet, else
    reused (a zygote of the test's own was a second import of vLLM, about 8 s of CPU)."""
    zygotes = Path(os.environ[ZYGOTES_ENV])
    broken = tmp_path / "broken.py"
    text = article_file.read_text()
    fault = ("    m = j < num_valid_ctx\n", "    m = j < (ctx_end - ctx_start)\n")
    broken.write_text(text.replace(*fault))
    said = {}
    for how in ("own", "forked"):
        out = tmp_path / f"{how}.json"
        env = worker_env(**({ZYGOTES_ENV: str(zygotes)} if how == "forked" else {}))
        command = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--cases", "3"]
        command += ["--speculator", str(article_file), "--speculator", str(broken)]
        proc = subprocess.Popen(
            [*command, "--json", str(out)], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 1, stdout + stderr
        said[how] = (TIMES.sub("", stdout), stderr, _without_times(json.loads(out.read_text())))
        if how == "forked":
            logs = "".join(p.read_text() for p in zygotes.glob("*.log"))
            assert f"for caller pid {proc.pid}\n" in logs, logs
            assert _asked_with(zygotes / f"{env_key(env)}.sock", {**env, "OTHER": "1"}) == {
                "declined": "another environment"
            }
    assert said["forked"] == said["own"]
    assert "PASS: " in said["own"][0] and "J0 deviates" in said["own"][1]


def _asked_with(sock: Path, env: dict[str, str]) -> dict[str, object]:
    """What the zygote at `sock` answers a request made with `env` (the key of another
    environment: `run_forked` would never send it there)."""
    request = {"args": ["--help"], "env": env, "cwd": str(ROOT)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn, socket_name(sock) as name:
        conn.connect(name)
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        return json.loads(conn.recv(1 << 20))


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        children = children_of(todo.pop())
        found += children
        todo += children
    return found


def _forked_workers(zygotes: Path) -> list[int]:
    """The workers the zygotes under `zygotes` forked: their descendants that lead a session of
    their own (the fork that waits for one does not)."""
    found = []
    for pid_file in zygotes.glob("*.pid"):
        for pid in _descendants(int(pid_file.read_text())):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == pid:
                    found.append(pid)
    return found


@contextlib.contextmanager
def forked_check(
    command: list[str], env: dict[str, str], cwd: Path, zygotes: Path
) -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    """`command` started, and the workers the zygotes under `zygotes` forked for it once there is
    one; on the way out, whatever of them is left is killed."""
    proc = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while not workers:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no forked worker"
            workers = _forked_workers(zygotes)
            time.sleep(0.1)
        yield proc, workers
    finally:
        proc.kill()
        for pid in workers:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_sigterm_to_j0_selfcheck_stops_the_forked_worker(
    article_file: Path, zygotes: Path, tmp_path: Path
) -> None:
    env = worker_env(**{ZYGOTES_ENV: str(zygotes)})
    env.pop("TRITON_INTERPRET")  # as a user runs it: the command sets it for its worker
    command = [sys.executable, "-m", "j0", "selfcheck", "--speculator", str(article_file)]
    command += ["--device", "cpu", "--cases", "60"]
    with forked_check(command, env, tmp_path, zygotes) as (proc, workers):
        time.sleep(1.0)  # mid-check
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, err
        time.sleep(0.5)
        assert [p for p in workers if running(p)] == [], err


@pytest.mark.slow
def test_a_worker_whose_zygote_went_away_is_no_verdict(
    article_file: Path, zygotes: Path, tmp_path: Path
) -> None:
    """The zygote's fork that waits for the worker is killed mid-check: the caller cannot know
    how the check ended, stops the worker, and says so with exit 70 (LOST_WORKER), not a
    verdict."""
    env = worker_env(**{ZYGOTES_ENV: str(zygotes)})
    command = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--cases", "60"]
    command += ["--speculator", str(article_file)]
    with forked_check(command, env, tmp_path, zygotes) as (proc, workers):
        (worker,) = workers
        waiter = int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(waiter, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == LOST_WORKER, stdout + stderr
        assert f"the zygote that forked worker {worker} went away" in stderr
        assert "PASS" not in stdout and "FAIL" not in stderr
        time.sleep(0.5)
        assert not running(worker)


@pytest.mark.slow
def test_a_zygote_that_cannot_start_leaves_the_check_as_it_was(
    article_file: Path, zygotes: Path
) -> None:
    """vLLM's import stops at a hidden `cbor2` (tests/selfcheck/hide_modules): the zygote cannot
    start, says why in its log, is not tried again, and the worker answers itself: exit 69."""
    env = worker_env(
        **{ZYGOTES_ENV: str(zygotes), "J0_TEST_HIDE_MODULES": "cbor2"},
        PYTHONPATH=os.pathsep.join((str(HIDE), str(ROOT / "scripts"))),
    )
    command = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--cases", "1"]
    proc = subprocess.run(
        [*command, "--speculator", str(article_file)], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 69, proc.stdout + proc.stderr
    assert "`cbor2`" in proc.stderr
    (failed,) = zygotes.glob("*.failed")
    assert "cbor2" in failed.with_suffix(".log").read_text()
    assert not list(zygotes.glob("*.sock"))
