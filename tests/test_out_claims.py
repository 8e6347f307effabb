"""One output folder, one writer: every command that makes a folder (`j0 mini train OUT`, `j0
dumps replay --out`, `j0 bench matrix --out`, `j0 drafter fetch --out`) claims it
(j0.edge.atomic.claimed: an flock on a lock file beside it, as `j0 bench run` claims its result
file) before it judges whether the folder is new or empty, and holds the claim until its last
write. Here the claim is held as another j0 command would hold it, and the real command, run as a
user runs it, is refused with exit 64, the folder left as it was.

Before: two `j0 mini train OUT` started together both passed the emptiness check, both printed
"wrote OUT" and exited 0, and one training was lost (issue 53, item 9).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.edge.atomic import claim_name, claimed
from j0.errors import USAGE

ROOT = Path(__file__).resolve().parents[1]


def commands(tmp: Path, out: Path) -> dict[str, list[str]]:
    models = tmp / "model"
    models.mkdir(exist_ok=True)
    dumps = tmp / "dumps"
    dumps.mkdir(exist_ok=True)
    return {
        "mini train": ["mini", "train", str(out), "--smoke", "--device", "cpu"],
        "dumps replay": [
            "dumps", "replay", str(dumps), "--drafter", str(models), "--target", str(models),
            "--out", str(out),
        ],
        "bench matrix": ["bench", "matrix", "--out", str(out), "--dry-run"],
        "drafter fetch": ["drafter", "fetch", "--out", str(out)],
    }  # fmt: skip


# `j0 mini train` and `j0 dumps replay` import torch and transformers before they claim their
# folder: about 3 s of CPU and 6-7 s of a worker each in a fast-subset run (2026-12-07), so those
# two run in the whole run only (slow), as the dumps commands' `--json` forms do; the claim itself
# is j0.edge.atomic.claimed, which the other two commands' cases (each a mutation guard's killer)
# and tests/bench/test_bench_out_claim.py check in the fast subset.
@pytest.mark.parametrize(
    "command",
    [
        pytest.param("mini train", marks=pytest.mark.slow),
        pytest.param("dumps replay", marks=pytest.mark.slow),
        "bench matrix",
        "drafter fetch",
    ],
)
def test_a_folder_another_command_writes_is_refused(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "scripts"),
        "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there: no Hub is asked
        "HF_HOME": str(tmp_path / "hf"),
    }
    inside = command == "drafter fetch"  # its DIR is a mount point in compose and Kubernetes
    with claimed(out, "OUT", inside=inside):
        ran = subprocess.run(
            [sys.executable, "-m", "j0", *commands(tmp_path, out)[command]],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert ran.returncode == USAGE, ran.stdout + ran.stderr
        assert "another j0 command is writing it now" in ran.stderr, ran.stderr
        assert str(out) in ran.stderr
        # nothing written into the other command's folder
        assert [p.name for p in out.iterdir()] == ([".j0-claim"] if inside else [])
    assert not claim_name(out, inside).exists()


def test_a_claim_leaves_no_folder_it_made_for_nothing(tmp_path: Path) -> None:
    """The lock file's folders, made for the claim, go with it where the command wrote nothing
    (a fetch refused before its first file leaves no ./drafter behind); a folder written into
    stays."""
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(RuntimeError), claimed(out, "--out"):
        assert claim_name(out).exists()
        raise RuntimeError("refused")
    assert not (tmp_path / "a").exists()
    with claimed(out, "--out"):
        out.mkdir()
    assert out.is_dir() and not claim_name(out).exists()
