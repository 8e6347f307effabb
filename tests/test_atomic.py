"""j0.edge.atomic: a written file follows the umask as `open()` would (mkstemp alone would leave
0600, and a fixed 0644 would ignore a umask of 077); an explicit mode is kept; link mode never
replaces."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from j0.edge.atomic import write_bytes_atomic, write_text_atomic


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path: Path, umask: None, mask: int) -> None:
    os.umask(mask)
    atomic, plain = tmp_path / "atomic.txt", tmp_path / "plain.txt"
    write_text_atomic(atomic, "x")
    plain.write_text("x")
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    assert stat.S_IMODE(atomic.stat().st_mode) == 0o666 & ~mask


def test_an_explicit_mode_is_kept(tmp_path: Path, umask: None) -> None:
    os.umask(0o077)
    path = tmp_path / "f"
    write_bytes_atomic(path, b"x", mode=0o755)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_link_mode_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "orig"
    write_bytes_atomic(path, b"first", replace_existing=False)
    with pytest.raises(FileExistsError):
        write_bytes_atomic(path, b"second", replace_existing=False)
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["orig"]


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_stop_as_the_temporary_file_is_made_leaves_nothing(tmp_path: Path, signame: str) -> None:
    """The signal arrives the moment the temporary file exists, before its name is returned (the
    window a loaded run hit with Ctrl-C: the interrupted build left `.speculator.py.*.tmp`). In a
    child process: the real mkstemp, then the signal sent to itself; the write must stop, the
    file must not be there, nor OUT."""
    out = tmp_path / "out.txt"
    code = (
        "import os, signal, sys, tempfile\n"
        "real = tempfile.mkstemp\n"
        "def mkstemp(*a, **k):\n"
        "    made = real(*a, **k)\n"
        f"    os.kill(os.getpid(), signal.{signame})\n"
        "    return made\n"
        "tempfile.mkstemp = mkstemp\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
        "from j0.edge.atomic import write_bytes_atomic\n"
        "try:\n"
        f"    write_bytes_atomic(__import__('pathlib').Path({str(out)!r}), b'x' * 100)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
        "sys.exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "scripts"))
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == (130 if signame == "SIGINT" else 143), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], done.stderr
