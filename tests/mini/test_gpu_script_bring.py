"""scripts/mini-gpu.sh's `bring` and `land`, run for real (bash, tar, split, sha256sum): a set
trained in one stretch of a lent machine goes back in parts small enough for what the machine
returns, and comes onto the next machine checked by sha256, or is refused. The set here is a
folder of the layout `j0 mini train` writes (models/mini.json beside the weights) with random
bytes as weights: the stages move bytes and read nothing in them but mini.json's presence.
A call of a lent machine gives back at most 8 files, each at most 16 MiB, and 64 MiB together:
`bring` copies into OUT only the parts that fit one call (or those --parts names) and prints the
command for the rest, from the one cut it keeps in WORK/bring."""

from __future__ import annotations

import filecmp
import os
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mini-gpu.sh"


MIB = 1024 * 1024
SET = "mini-gpu-seed4-set"


def stage(*args: str, out: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The script's stage; `out`: the call's $OUT (as on a lent machine), else none set."""
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    if out is not None:
        env["OUT"] = str(out)
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


def same_tree(a: Path, b: Path, ignore: tuple[str, ...] = ()) -> bool:
    compared = filecmp.dircmp(a, b, ignore=list(ignore))
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
    assert same_tree(trained, landed_work, ignore=("bring",))  # WORK/bring: the kept cut
    assert sorted(p.name for p in (trained / "bring").glob(f"{SET}.tar.part*")) == parts
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


def part_names(first: int, last: int) -> list[str]:
    return [f"{SET}.tar.part{i:02d}" for i in range(first, last + 1)]


def listing(out: Path) -> list[str]:
    """The folder's files by name, the .sha256 last."""
    return sorted(
        (p.name for p in out.iterdir()), key=lambda name: (name.endswith(".sha256"), name)
    )


def fits_one_call(out: Path) -> bool:
    sizes = [p.stat().st_size for p in out.rglob("*") if p.is_file()]
    return len(sizes) <= 8 and max(sizes) <= 16 * MIB and sum(sizes) <= 64 * MIB


def next_command(brought: subprocess.CompletedProcess[str]) -> list[str]:
    """The command bring printed for the rest, as words (its scripts/mini-gpu.sh dropped)."""
    lines = [x for x in brought.stdout.splitlines() if "the rest, in the next call:" in x]
    assert len(lines) == 1, brought.stdout
    words = shlex.split(lines[0].split("the rest, in the next call:", 1)[1])
    assert words[:2] == ["scripts/mini-gpu.sh", "bring"], words
    return words[1:]


@pytest.fixture
def large(tmp_path: Path) -> Path:
    """A set of 70 MiB, as a real one (73 MiB): a sparse weights file with random blocks."""
    work = tmp_path / "large"
    (work / "models" / "target").mkdir(parents=True)
    (work / "models" / "mini.json").write_text('{"seed": 4}\n')
    (work / "train.log").write_text("==> trained\n")
    with (work / "models" / "target" / "model.safetensors").open("wb") as weights:
        for mib in range(70):
            weights.seek(mib * MIB)
            weights.write(os.urandom(4096))
        weights.truncate(70 * MIB)
    return work


def test_a_call_gets_what_fits_and_the_printed_command_the_rest(
    large: Path, tmp_path: Path
) -> None:
    """Parts of 9 MiB: 8 of them; six (54 MiB) and the .sha256 fit a call's 60 MiB and 8 files,
    a seventh (63 MiB) would not; the next call, the command bring printed, gets 06-07."""
    first_call, second_call = tmp_path / "call1", tmp_path / "call2"
    brought = stage("bring", "--seed", "4", "--work", str(large), "--part-mib", "9", out=first_call)
    assert brought.returncode == 0, brought.stderr
    assert listing(first_call) == [*part_names(0, 5), f"{SET}.sha256"]
    assert fits_one_call(first_call)
    assert "parts 00-05 of 8" in brought.stdout and brought.stderr == ""
    rest = next_command(brought)
    assert rest == ["bring", "--seed", "4", "--work", str(large), "--parts", "6-"]

    again = stage(*rest, out=second_call)
    assert again.returncode == 0, again.stderr
    assert listing(second_call) == [*part_names(6, 7), f"{SET}.sha256"]
    assert "parts 06-07 of 8" in again.stdout and "land --seed 4" in again.stdout
    assert again.stderr == ""
    assert "the rest" not in again.stdout
    assert (first_call / f"{SET}.sha256").read_bytes() == (
        second_call / f"{SET}.sha256"
    ).read_bytes()

    union = tmp_path / "union"
    shutil.copytree(first_call, union)
    shutil.copytree(second_call, union, dirs_exist_ok=True)
    landed = stage("land", "--seed", "4", "--work", str(tmp_path / "next"), "--from", str(union))
    assert landed.returncode == 0, landed.stderr
    assert "8 parts" in landed.stdout
    assert same_tree(large, tmp_path / "next", ignore=("bring",))

    # pack (no weights) leaves the kept cut out too
    packed = stage("pack", "--seed", "4", "--work", str(large), out=tmp_path / "packed")
    assert packed.returncode == 0, packed.stderr
    with tarfile.open(tmp_path / "packed" / "mini-gpu-seed4.tar.xz") as tar:
        names = tar.getnames()
    assert "./train.log" in names and not [n for n in names if n.startswith("./bring")]


@pytest.fixture
def ten_parts(tmp_path: Path) -> Path:
    """A set of about 9.5 MiB: ten parts of 1 MiB."""
    work = tmp_path / "small"
    (work / "models" / "target").mkdir(parents=True)
    (work / "models" / "mini.json").write_text('{"seed": 4}\n')
    (work / "models" / "target" / "model.safetensors").write_bytes(os.urandom(9 * MIB + MIB // 2))
    (work / "train.log").write_text("==> trained\n")
    (work / "train.rc").write_text("0\n")
    return work


def test_seven_parts_fill_a_call_and_parts_names_the_others(
    ten_parts: Path, tmp_path: Path
) -> None:
    work = ("--seed", "4", "--work", str(ten_parts))
    out = tmp_path / "out"
    brought = stage("bring", *work, "--part-mib", "1", "--out", str(out))
    assert brought.returncode == 0, brought.stderr
    assert listing(out) == [*part_names(0, 6), f"{SET}.sha256"]  # 8 files: a call's most
    assert brought.stderr == ""
    assert next_command(brought) == ["bring", *work, "--out", str(out), "--parts", "7-"]

    # the cut's size is kept: another --part-mib is refused, none keeps it
    other = stage("bring", *work, "--part-mib", "2", "--out", str(tmp_path / "o2"))
    assert other.returncode == 64 and "--part-mib 1" in other.stderr
    assert not (tmp_path / "o2").exists()
    one = stage("bring", *work, "--parts", "3", "--out", str(tmp_path / "o3"))
    assert one.returncode == 0, one.stderr
    assert listing(tmp_path / "o3") == [*part_names(3, 3), f"{SET}.sha256"]
    some = stage("bring", *work, "--parts", "08-9", "--out", str(tmp_path / "o3"))
    assert some.returncode == 0, some.stderr
    assert listing(tmp_path / "o3") == [*part_names(3, 3), *part_names(8, 9), f"{SET}.sha256"]
    assert "land --seed 4" in some.stdout

    # a part there already, or a range outside the set: refused, nothing copied
    overlap = stage("bring", *work, "--parts", "2-4", "--out", str(tmp_path / "o3"))
    assert overlap.returncode == 64 and "nothing is overwritten" in overlap.stderr
    assert not (tmp_path / "o3" / f"{SET}.tar.part02").exists()
    for spec in ("9-10", "5-4", "x", "1-2-3"):
        wrong = stage("bring", *work, "--parts", spec, "--out", str(tmp_path / "o4"))
        assert wrong.returncode == 64, (spec, wrong.stderr)
        assert "--parts" in wrong.stderr and not (tmp_path / "o4").exists()

    # the rest into the same folder (more than a call gives back: warned): all ten land
    rest = stage("bring", *work, "--parts", "7-", "--out", str(out))
    assert rest.returncode == 0 and "warning" in rest.stderr and "11 files" in rest.stderr
    assert listing(out) == [*part_names(0, 9), f"{SET}.sha256"]
    landed = stage("land", "--seed", "4", "--work", str(tmp_path / "next"), "--from", str(out))
    assert landed.returncode == 0, landed.stderr
    assert same_tree(ten_parts, tmp_path / "next", ignore=("bring",))
    everything = stage("bring", *work, "--parts", "all", "--out", str(tmp_path / "o5"))
    assert everything.returncode == 0 and len(listing(tmp_path / "o5")) == 11
    assert "warning" in everything.stderr and "11 files" in everything.stderr


def test_a_second_bring_gives_the_same_bytes(ten_parts: Path, tmp_path: Path) -> None:
    """The parts of later calls are copied from the one cut: the same bytes, the same sha256,
    even where the set's files were touched between the calls (their times are in the tar)."""
    work = ("--seed", "4", "--work", str(ten_parts), "--parts", "all")
    assert stage("bring", *work, "--part-mib", "1", out=tmp_path / "a").returncode == 0
    for file in (ten_parts / "train.log", ten_parts / "models" / "mini.json"):
        os.utime(file, (1_000_000_000, 1_000_000_000))
    again = stage("bring", *work, out=tmp_path / "b")
    assert again.returncode == 0, again.stderr
    assert (
        listing(tmp_path / "a")
        == listing(tmp_path / "b")
        == [
            *part_names(0, 9),
            f"{SET}.sha256",
        ]
    )
    for name in listing(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    mixed = tmp_path / "mixed"  # the first call's even parts, the second's odd ones
    mixed.mkdir()
    for i, name in enumerate(part_names(0, 9)):
        shutil.copy(tmp_path / ("a" if i % 2 == 0 else "b") / name, mixed)
    shutil.copy(tmp_path / "b" / f"{SET}.sha256", mixed)
    landed = stage("land", "--seed", "4", "--work", str(tmp_path / "next"), "--from", str(mixed))
    assert landed.returncode == 0, landed.stderr


def _all_parts(work: Path, out: Path) -> Path:
    """OUT holding every part of WORK's set in 1-MiB parts (`bring --parts all`) and the .sha256."""
    brought = stage(
        "bring", "--seed", "4", "--work", str(work), "--part-mib", "1", "--parts", "all",
        "--out", str(out),
    )  # fmt: skip
    assert brought.returncode == 0, brought.stderr
    return out


def test_land_names_the_missing_and_the_damaged_parts(ten_parts: Path, tmp_path: Path) -> None:
    out = _all_parts(ten_parts, tmp_path / "out")
    kept = {name: (out / name).read_bytes() for name in listing(out)}

    for name in part_names(3, 3) + part_names(5, 5):
        (out / name).unlink()
    missing = stage("land", "--seed", "4", "--work", str(tmp_path / "w1"), "--from", str(out))
    assert missing.returncode == 2 and not (tmp_path / "w1").exists()
    assert "lacks part03 part05 of the 10 parts" in missing.stderr, missing.stderr

    (out / part_names(3, 3)[0]).write_bytes(kept[part_names(3, 3)[0]])
    (out / part_names(5, 5)[0]).write_bytes(kept[part_names(5, 5)[0]])
    damaged_part = out / part_names(1, 1)[0]
    data = bytearray(kept[damaged_part.name])
    data[1000] ^= 0xFF
    damaged_part.write_bytes(bytes(data))
    damaged = stage("land", "--seed", "4", "--work", str(tmp_path / "w2"), "--from", str(out))
    assert damaged.returncode == 2 and not (tmp_path / "w2").exists()
    assert "a part is missing or damaged; damaged (its own sum differs): part01" in damaged.stderr


def test_an_older_bring_sha256_of_the_whole_alone_still_lands(
    ten_parts: Path, tmp_path: Path
) -> None:
    """An older bring wrote only the whole tar's line: land checks it, as before."""
    out = _all_parts(ten_parts, tmp_path / "out")
    sums = (out / f"{SET}.sha256").read_text().splitlines()
    assert sums[0].endswith(f"  {SET}.tar") and len(sums) == 11
    (out / f"{SET}.sha256").write_text(sums[0] + "\n")
    landed = stage("land", "--seed", "4", "--work", str(tmp_path / "w1"), "--from", str(out))
    assert landed.returncode == 0, landed.stderr
    (out / part_names(4, 4)[0]).unlink()
    missing = stage("land", "--seed", "4", "--work", str(tmp_path / "w2"), "--from", str(out))
    assert missing.returncode == 2 and "a part is missing or damaged" in missing.stderr
    assert "lacks" not in missing.stderr and not (tmp_path / "w2").exists()
