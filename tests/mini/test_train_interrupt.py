"""`j0 mini train` as a user runs it: Ctrl-C (a real SIGINT to the real command, a subprocess)
while the target trains leaves nothing of the run behind, so that the same command runs again; a
folder that an earlier run left unfinished (killed, say) is refused saying what it holds and what
to do; and with its output going to a file (a log, `> train.log 2>&1`) the progress comes as plain
lines, not carriage-return bars. --smoke on this CPU.

Before: the interrupted run left OUT/logs/ (and corpus.json), and the same command was then
refused (exit 64) with "exists and is not an empty folder"; in a log the bars were one line of
escaped "\\r" updates per model, and transformers' "Writing model shards" bars beside them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from j0.errors import USAGE, J0Error
from j0.mini.train.run import TrainOptions, check_out, run_train


def sigint_as_at_a_terminal() -> None:
    """In the child before it runs: SIGINT's default action, as a command typed at a terminal
    has it. A run started in the background by a non-interactive shell (`cmd &`) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler: a SIGINT does nothing (this
    test timed out so in a `.ci/run` started with `&`, 2026-12-07)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_train(out: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "j0", "mini", "train", str(out), "--smoke", "--device", "cpu",
             *extra],
            stdout=sink, stderr=subprocess.STDOUT, env=dict(os.environ),
            preexec_fn=sigint_as_at_a_terminal,
        )  # fmt: skip


def wait_for(condition, seconds: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.2)


@pytest.mark.slow  # a real `j0 mini train --smoke` start (imports torch): 20-60 s here
@pytest.mark.parametrize("there_before", [False, True], ids=["new-folder", "empty-folder"])
def test_ctrl_c_while_training_leaves_nothing_behind(tmp_path: Path, there_before: bool) -> None:
    out, log = tmp_path / "mini", tmp_path / "train.log"
    if there_before:
        out.mkdir()
    command = start_train(out, log, "--budget", "600")
    try:
        # the target is training: its log exists and the corpus was written
        wait_for(lambda: (out / "logs" / "target.jsonl").exists() or command.poll() is not None,
                 300)  # fmt: skip
        assert command.poll() is None, log.read_text()
        command.send_signal(signal.SIGINT)
        command.wait(timeout=120)
    finally:
        command.kill()
    said = log.read_text()
    assert command.returncode == 130, said
    assert "Traceback" not in said, said
    if there_before:
        assert out.is_dir() and list(out.iterdir()) == [], said  # as it was: empty
    else:
        assert not out.exists(), said
    assert f"removed what it had made in {out}" in said, said
    check_out(out)  # the same command is accepted again


@pytest.mark.xdist_group("transformers")  # transformers imported in-process: one worker
def test_an_unfinished_folder_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    """What a killed run leaves (corpus.json, logs/, no mini.json): refused, exit 64, naming what
    is there and that it is an unfinished `j0 mini train`, and how to go on."""
    out = tmp_path / "mini"
    (out / "logs").mkdir(parents=True)
    (out / "logs" / "target.jsonl").write_text('{"step": 1}\n')
    (out / "corpus.json").write_text("{}\n")
    with pytest.raises(J0Error) as caught:
        run_train(TrainOptions(out=out, smoke=True, device="cpu"), say=lambda line: None)
    message = str(caught.value)
    assert caught.value.exit_code == USAGE
    assert "unfinished `j0 mini train`" in message and "no mini.json" in message, message
    assert "corpus.json" in message and "logs/" in message, message
    assert f"rm -r {out}" in message, message
    assert (out / "corpus.json").exists()  # nothing removed unasked


@pytest.mark.xdist_group("transformers")  # transformers imported in-process: one worker
def test_a_finished_folder_is_refused_naming_what_uses_it(tmp_path: Path) -> None:
    out = tmp_path / "mini"
    out.mkdir()
    (out / "mini.json").write_text("{}\n")
    with pytest.raises(J0Error) as caught:
        run_train(TrainOptions(out=out, smoke=True, device="cpu"), say=lambda line: None)
    assert caught.value.exit_code == USAGE
    assert "finished `j0 mini train`" in str(caught.value), caught.value
    assert f"j0 mini run {out}" in str(caught.value), caught.value


@pytest.mark.slow  # a whole `j0 mini train --smoke` (1 s per model): 30-90 s here
def test_progress_in_a_log_is_plain_lines(tmp_path: Path) -> None:
    out, log = tmp_path / "mini", tmp_path / "train.log"
    command = start_train(out, log, "--budget", "1")
    try:
        command.wait(timeout=600)
    finally:
        command.kill()
    raw = log.read_bytes()
    assert command.returncode == 0, raw[-3000:]
    assert b"\r" not in raw and b"\\r" not in raw, raw[:3000]  # neither bars nor escaped ones
    lines = raw.decode().splitlines()
    for name in ("target", "drafter mask", "drafter j0"):
        done = [x for x in lines if x.startswith(f"{name}: ") and " steps in " in x]
        assert len(done) == 1, (name, lines)
