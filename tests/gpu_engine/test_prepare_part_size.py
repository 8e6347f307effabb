"""scripts/gpu-engine/prepare and prepare-plugin take the size of their pieces from PART_MIB (a
transfer that carries the checkout in the same 64 MiB call needs pieces smaller than the default
60 MiB); a PART_MIB that is not a whole number of MiB is refused before anything is downloaded or
written, naming the value."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", ["prepare", "prepare-plugin"])
@pytest.mark.parametrize("value", ["34.5", "0", "big"])
def test_a_part_size_that_is_not_whole_mib_is_refused(
    tmp_path: Path, script: str, value: str
) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-engine" / script), str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PART_MIB": value},
        check=False,
        timeout=60,
    )
    assert done.returncode == 64, done.stderr
    assert f"PART_MIB '{value}'" in done.stderr and "whole number of MiB" in done.stderr
    assert not out.exists()
