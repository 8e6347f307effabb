"""Secrets fail closed: a key or token file that is given but cannot be read as one line of text
stops the command (exit 2) with a message naming the file and what was expected; for `j0 serve`
before vLLM starts. /dev/null (what compose mounts for an unset API_KEY_FILE or HF_TOKEN_FILE) is
the one way to say "none".

Real files and real processes: `j0 serve` runs in a subprocess with a stand-in entrypoint of ours
(--then) that leaves a marker file when it starts; `j0 drafter fetch`'s token reader and
`j0 status --api-key-file` run on the same files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from j0.edge.secret_file import MAX_SECRET_BYTES, read_secret_file
from j0.errors import J0Error
from serve.test_serve_launch import drafter, serve_args

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = "expected one line of UTF-8 text holding it (or /dev/null for none)"


def _missing(path: Path) -> None:
    pass


def _folder(path: Path) -> None:
    path.mkdir()  # what Docker makes of a secret's missing host file


def _loop(path: Path) -> None:
    path.symlink_to(path)  # unreadable whoever runs the test (root reads a mode-000 file)


def _below_a_file(path: Path) -> None:
    pass  # bad_file names a path below a regular file


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # reading it would block: refused before any read


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


# (how the file is made, what the message says); the message is typed here, not taken from code.
BAD_FILES = {
    "missing": (_missing, "no such file"),
    "folder": (_folder, "a folder, not a file"),
    "symlink loop": (_loop, "cannot read it (Too many levels of symbolic links)"),
    "below a file": (_below_a_file, "cannot read it (Not a directory)"),
    "fifo": (_fifo, "not a regular file"),
    "empty": (_bytes(b""), "empty"),
    "blank": (_bytes(b"  \n\n"), "empty"),
    "not utf-8": (_bytes(b"sk-\xff\xfe-key\n"), "not UTF-8 text (byte 3)"),
    "two lines": (_bytes(b"sk-one\nsk-two\n"), "2 lines"),
    "crlf two lines": (_bytes(b"sk-one\r\nsk-two"), "2 lines"),
    "nul": (_bytes(b"sk-\x00key"), "holds control characters (0x00)"),
    "too big": (_bytes(b"k" * (MAX_SECRET_BYTES + 1)), "65537 bytes, more than a secret's 65536"),
}


def bad_file(tmp_path: Path, case: str) -> tuple[Path, str]:
    make, said = BAD_FILES[case]
    path = tmp_path / "api_key"
    if case == "below a file":
        (tmp_path / "file").write_text("x\n")
        path = tmp_path / "file" / "api_key"
    make(path)
    return path, said


def run_serve(
    tmp_path: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`j0 serve` with a stand-in entrypoint that writes `started` when it runs."""
    marker = tmp_path / "started"
    then = tmp_path / "entrypoint"
    then.write_text(f'#!/bin/sh\necho "$VLLM_API_KEY" > {marker}\n')
    then.chmod(0o755)
    folder = drafter(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "j0",
            "serve",
            "--then",
            str(then),
            "--overlay-mount",
            str(tmp_path / "no-overlay"),
            *options,
            "--",
            *serve_args(folder),
        ],
        env={
            "PATH": os.environ["PATH"],
            "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
            "PYTHONPATH": str(ROOT / "scripts"),
            "HF_HOME": str(tmp_path / "hf-home"),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return result, marker


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_serve_refuses_a_key_file_it_cannot_read_before_vllm_starts(
    tmp_path: Path, case: str
) -> None:
    """Before: a missing, folder, unreadable or not-UTF-8 key file started vLLM with no key."""
    path, said = bad_file(tmp_path, case)
    result, marker = run_serve(tmp_path, "--api-key-file", str(path))
    assert result.returncode == 2, result.stderr
    assert not marker.exists()  # the stand-in vLLM never started
    assert result.stderr.strip().splitlines() == [
        f"j0: error: API key file {path}: {said}; {EXPECTED}"
    ]


def test_serve_takes_one_line_with_its_line_end_and_dev_null_as_none(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"\xef\xbb\xbfsk-abc 123\r\n\n")  # a BOM, CRLF and a blank last line
    result, marker = run_serve(tmp_path, "--api-key-file", str(key))
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "sk-abc 123\n"
    assert "sk-abc" not in result.stderr
    marker.unlink()
    result, marker = run_serve(tmp_path, "--api-key-file", os.devnull)
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "\n"  # no key
    assert "j0 serve: API key: none" in result.stderr


@pytest.mark.parametrize("case", ["folder", "not utf-8", "two lines", "empty"])
def test_serve_refuses_a_hugging_face_token_file_it_cannot_read(tmp_path: Path, case: str) -> None:
    """Where compose mounts the token ($HF_HOME/token) and HF_TOKEN_PATH: the same rule."""
    home = tmp_path / "hf-home"
    home.mkdir()
    make, said = BAD_FILES[case]
    make(home / "token")
    result, marker = run_serve(tmp_path, "--api-key-file", os.devnull)
    assert result.returncode == 2 and not marker.exists(), result.stderr
    assert f"j0: error: Hugging Face token file {home / 'token'}: {said}" in result.stderr
    other = tmp_path / "other-token"
    make(other)
    (home / "token").unlink() if (home / "token").is_file() else (home / "token").rmdir()
    result, marker = run_serve(
        tmp_path, "--api-key-file", os.devnull, env={"HF_TOKEN_PATH": str(other)}
    )
    assert result.returncode == 2 and not marker.exists(), result.stderr
    assert f"j0: error: HF_TOKEN_PATH {other}: {said}" in result.stderr


def test_the_drafter_fetch_token_reader_keeps_the_same_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from j0.drafter import hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    token = tmp_path / "token"
    token.write_bytes(b"hf_one\nhf_two\n")
    monkeypatch.setenv("HF_TOKEN_PATH", str(token))
    with pytest.raises(J0Error, match="2 lines") as info:
        hub.hub_token()
    assert info.value.exit_code == 2 and "hf_one" not in str(info.value)
    token.write_bytes(b"hf_one\n")
    assert hub.hub_token().value == "hf_one"
    monkeypatch.setenv("HF_TOKEN_PATH", os.devnull)
    assert hub.hub_token().value is None
    # The token as an environment value (deploy/k8s's secretKeyRef) is held to one line too.
    monkeypatch.setenv("HF_TOKEN", "hf_one\nhf_two\n")
    with pytest.raises(J0Error, match="HF_TOKEN: 2 lines"):
        hub.hub_token()
    monkeypatch.delenv("HF_TOKEN")
    # The stored login, where compose's drafter service mounts the secret.
    monkeypatch.delenv("HF_TOKEN_PATH")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "token").mkdir()
    with pytest.raises(J0Error, match="a folder, not a file"):
        hub.hub_token()


def test_status_refuses_an_unreadable_api_key_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from j0.cli import main

    key = tmp_path / "api_key"
    key.write_bytes(b"\xff\n")
    code = main(["status", "--url", "http://127.0.0.1:9", "--api-key-file", str(key)])
    assert code == 2
    assert f"--api-key-file {key}: not UTF-8 text (byte 0)" in capsys.readouterr().err


def test_dev_null_is_none_and_a_bind_mount_of_it_is_recognised_by_its_device() -> None:
    assert read_secret_file(Path(os.devnull), "key file") is None
    with pytest.raises(J0Error, match="not a regular file"):
        read_secret_file(Path("/dev/zero"), "key file")  # a character device, not the null one
