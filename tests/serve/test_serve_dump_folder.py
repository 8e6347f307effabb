"""`j0 serve`'s dump folder is new or empty: one that holds an earlier run's stepNNNN.pt is
refused (exit 64) before the server starts, since the patch writes step0000.pt... over them and
leaves two runs mixed; `--force` moves the earlier entries into DIR/previous-STAMP/ (named in the
output) and starts; a dry run reports and touches nothing. Run as the real command, with --then
a script of ours that records that it ran (no vLLM)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from j0.errors import USAGE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
from test_serve_launch import drafter, serve_args  # noqa: E402


def serve(tmp_path: Path, dumps: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    folder = drafter(tmp_path)
    then = tmp_path / "entrypoint"
    then.write_text(f"#!/bin/sh\necho started > {tmp_path / 'started'}\n")
    then.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
        "PYTHONPATH": str(ROOT / "scripts"),
        "VLLM_DFLASH_DUMP": str(dumps),
        "VLLM_DFLASH_DUMP_STEPS": "8",
    }
    return subprocess.run(
        [sys.executable, "-m", "j0", "serve", "--api-key-file", os.devnull,
         "--overlay-mount", str(tmp_path / "none"), "--then", str(then), *extra,
         "--", *serve_args(folder)],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


def earlier_run(dumps: Path) -> dict[str, bytes]:
    dumps.mkdir(parents=True)
    files = {f"step{i:04d}.pt": f"earlier run, step {i}".encode() for i in range(3)}
    for name, data in files.items():
        (dumps / name).write_bytes(data)
    return files


def test_a_folder_with_an_earlier_run_is_refused(tmp_path: Path) -> None:
    """Before: accepted (exit 0, the server started over the earlier dumps)."""
    dumps = tmp_path / "dumps"
    files = earlier_run(dumps)
    result = serve(tmp_path, dumps)
    assert result.returncode == USAGE, result.stderr
    assert f"VLLM_DFLASH_DUMP={dumps}: holds 3 entries of an earlier run" in result.stderr
    assert "step0000.pt, step0001.pt, step0002.pt" in result.stderr
    assert not (tmp_path / "started").exists()
    assert {p.name: p.read_bytes() for p in dumps.iterdir()} == files


def test_force_keeps_the_earlier_run_in_a_subfolder_named_in_the_output(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    files = earlier_run(dumps)
    result = serve(tmp_path, dumps, "--force")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "started").exists()
    match = re.search(r"the earlier run's 3 entries kept in (\S+) \(--force\)", result.stderr)
    assert match, result.stderr
    kept = Path(match.group(1))
    assert kept.parent == dumps and kept.name.startswith("previous-")
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == files
    assert [p.name for p in dumps.iterdir()] == [kept.name]  # the new run's folder is empty
    # A kept copy is no earlier run: the next start needs no --force.
    (tmp_path / "started").unlink()
    again = serve(tmp_path, dumps)
    assert again.returncode == 0, again.stderr
    assert f"dump folder {dumps}: empty" in again.stderr


def test_a_dry_run_touches_nothing(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    files = earlier_run(dumps)
    result = serve(tmp_path, dumps, "--force", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "--force would keep its 3 entries in" in result.stderr
    assert {p.name: p.read_bytes() for p in dumps.iterdir()} == files
    refused = serve(tmp_path, dumps, "--dry-run")
    assert refused.returncode == USAGE and "holds 3 entries" in refused.stderr


def test_a_new_or_empty_folder_is_taken(tmp_path: Path) -> None:
    result = serve(tmp_path, tmp_path / "new" / "dumps")
    assert result.returncode == 0, result.stderr
    assert f"dump folder {tmp_path / 'new' / 'dumps'}: " in result.stderr
