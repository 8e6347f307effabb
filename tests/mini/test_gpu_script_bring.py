"""scripts/mini-gpu.sh's `bring` and `land`, run for real (bash, tar, split, sha256sum): a set
trained in one stretch of a lent machine goes back in parts small enough for what the machine
returns, and comes onto the next machine checked by sha256, or is refused. The set here is a
folder of the layout `j0 mini train` writes (models/mini.json beside the weights) with random
bytes as weights: the stages move bytes and read nothing in them but mini.json's presence."""

from __future__ import annotations

import filecmp
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mini-gpu.sh"


def stage(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def trained(tmp_path: Path) -> Path:
    work = tmp_path / "trained"
    (work / "models" / "target").mkdir(parents=True)
    (work / "models" / "mini.json").write_text('{"seed": 4}\n')
    (work / "models" / "target" / "model.safetensors").write_bytes(os.urandom(2_500_000))
    (work / "train.log").write_text("==> trained\n")
    (work / "train.rc").write_text("0\n")
    return work


def same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, compared.common_files, shallow=False)
    return (
        not mismatch and not errors and all(same_tree(a / d, b / d) for d in compared.common_dirs)
    )


def test_a_set_goes_back_in_parts_and_lands_whole(trained: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    brought = stage(
        "bring", "--seed", "4", "--work", str(trained), "--out", str(out), "--part-mib", "1"
    )
    assert brought.returncode == 0, brought.stderr
    parts = sorted(p.name for p in out.glob("mini-gpu-seed4-set.tar.part*"))
    assert parts == [f"mini-gpu-seed4-set.tar.part{i:02d}" for i in range(3)]
    assert all((out / p).stat().st_size <= 1024 * 1024 for p in parts)
    again = stage("bring", "--seed", "4", "--work", str(trained), "--out", str(out))
    assert again.returncode == 64 and "nothing is overwritten" in again.stderr

    landed_work = tmp_path / "next-machine"
    landed = stage("land", "--seed", "4", "--work", str(landed_work), "--from", str(out))
    assert landed.returncode == 0, landed.stderr
    assert "3 parts" in landed.stdout
    assert same_tree(trained, landed_work)
    twice = stage("land", "--seed", "4", "--work", str(landed_work), "--from", str(out))
    assert twice.returncode == 64 and "already holds models" in twice.stderr


def test_a_damaged_or_missing_part_is_refused_and_nothing_lands(
    trained: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert (
        stage(
            "bring", "--seed", "4", "--work", str(trained), "--out", str(out), "--part-mib", "1"
        ).returncode
        == 0
    )
    middle = out / "mini-gpu-seed4-set.tar.part01"
    data = bytearray(middle.read_bytes())
    data[1000] ^= 0xFF
    middle.write_bytes(bytes(data))
    damaged = stage("land", "--seed", "4", "--work", str(tmp_path / "w1"), "--from", str(out))
    assert damaged.returncode == 2
    assert "a part is missing or damaged" in damaged.stderr and str(out) in damaged.stderr
    assert not (tmp_path / "w1").exists()
    middle.unlink()
    missing = stage("land", "--seed", "4", "--work", str(tmp_path / "w2"), "--from", str(out))
    assert missing.returncode == 2 and not (tmp_path / "w2").exists()


def test_nothing_to_bring_or_land_is_refused(tmp_path: Path) -> None:
    untrained = stage(
        "bring", "--seed", "5", "--work", str(tmp_path / "empty"), "--out", str(tmp_path / "o")
    )
    assert untrained.returncode == 64 and "no mini.json" in untrained.stderr
    nothing = stage("land", "--seed", "5", "--work", str(tmp_path / "w"), "--from", str(tmp_path))
    assert nothing.returncode == 64 and "holds no mini-gpu-seed5-set.tar.partNN" in nothing.stderr
