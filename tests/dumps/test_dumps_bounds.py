"""Hostile dump files: a few kilobytes that claim huge tensors, histories or tables are refused,
naming the file, the value and the ceiling (j0/dumps/bounds.py, docs/dumps.md "Limits"), before
anything is allocated from the claim.

Each file is made here with torch.save of tiny tensors. The memory guard is tracemalloc (NumPy
reports its buffers to it): a refusal allocates next to nothing, while the claims below would
take from 1 GB (the history) to 8 GB (the expanded tensor); no timing is asserted.
"""

from __future__ import annotations

import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from dumpsets import ENGINE

from j0.cli import main
from j0.dumps import bounds

GUARD_BYTES = 200 << 20  # far below any of the claims, far above a refusal


def run_guarded(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, int]:
    """`j0 dumps ARGS` in this process: exit code, output, peak traced allocation."""
    tracemalloc.start()
    try:
        try:
            code = main(["dumps", *args])
        except SystemExit as ended:  # refused by the parser (a usage error, exit 64)
            code = int(ended.code or 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = capsys.readouterr()
    return code, out.out + out.err, peak


def one_good_step(folder: Path) -> Path:
    """A dump folder holding step0000.pt of the recorded H200 run (a valid dump)."""
    folder.mkdir()
    shutil.copy(ENGINE / "j0-on" / "step0000.pt", folder / "step0000.pt")
    return folder


def edited(key: str, value: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        data = torch.load(ENGINE / "j0-on" / "step0001.pt", weights_only=True)
        data[key] = value(data[key])
        torch.save(data, folder / "step0001.pt")

    return write


HOSTILE = {
    # 10^9 int64 positions from one stored element (stride 0): 8 GB once NumPy copies it.
    "expanded-positions": (
        edited("positions", lambda t: t[:1].expand(10**9)),
        "1000000000 elements in a storage of",
    ),
    # aux of 1 row x 2^31 columns from one element.
    "expanded-aux": (
        edited("aux", lambda t: t[:1, :1].expand(1, 1 << 31)),
        "2147483648 elements in a storage of",
    ),
    # A query block of 4096 slots (real, 16 KB): above MAX_QUERY_BLOCK.
    "long-query-block": (
        edited("query_ids", lambda t: torch.zeros(4096, dtype=torch.int32)),
        f"query_ids has 4096 query slots (axis 0), above the ceiling of {bounds.MAX_QUERY_BLOCK}",
    ),
    # torch's pre-zip format: its storage sizes are allocated as declared, before reading.
    "legacy-format": (
        lambda folder: torch.save(
            torch.load(ENGINE / "j0-on" / "step0001.pt", weights_only=True),
            folder / "step0001.pt",
            _use_new_zipfile_serialization=False,
        ),
        "not a zip archive",
    ),
    # A complex tensor is no dump's (and NumPy's int64 cast of it would be lossy).
    "complex-dtype": (
        edited("positions", lambda t: t.to(torch.complex64)),
        "positions is complex64, expected an integer, floating or bool tensor",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_step_file_is_refused_without_allocating(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write, message = HOSTILE[name]
    folder = one_good_step(tmp_path / "dumps")
    write(folder)
    assert (folder / "step0001.pt").stat().st_size < 64 << 10  # small files, huge claims
    for command in ("check", "show"):
        code, out, peak = run_guarded(capsys, command, str(folder))
        assert code == 1, out  # a dump folder with a file that is not what the patch writes
        assert "step0001.pt" in out and message in out, out
        assert peak < GUARD_BYTES, (command, peak)
    code, out, peak = run_guarded(capsys, "compare", str(folder), str(folder))
    assert code == 2 and "step0001.pt" in out and peak < GUARD_BYTES, out  # PARTIAL


def far_request(folder: Path, start: int, steps: int, num_spec: int = 7) -> None:
    """A one-step request at position 0 (so that what follows is no start-up warm-up), then one
    J0-on request of `steps` single-token decodes starting at position `start`: valid in form,
    each step continuing the previous one at its anchor (tiny files, huge positions)."""
    folder.mkdir()
    for i in range(steps + 1):
        pos = 0 if i == 0 else start + i
        anchor = pos + 1
        data = {
            "positions": torch.tensor([pos], dtype=torch.int64),
            "input_ids": torch.tensor([100 + i], dtype=torch.int32),
            "aux": torch.zeros(1, 8, dtype=torch.bfloat16),
            "num_rejected": torch.tensor([0], dtype=torch.int32),
            "num_sampled": torch.tensor([1], dtype=torch.int32),
            "ctx_noise": True,
            "query_ids": torch.tensor([101 + i] + [5] * num_spec, dtype=torch.int32),
            "query_positions": torch.arange(anchor, anchor + num_spec + 1, dtype=torch.int64),
            "draft_tokens": torch.full((1, num_spec), 5, dtype=torch.int64),
        }
        torch.save(data, folder / f"step{i:04d}.pt")


def test_far_positions_over_many_steps_are_refused_before_the_histories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Eight 1 KB steps at position 2^24: each J0 query step would keep a 128 MiB copy of the
    history (1.1 GiB in all); the request is refused, exit 2, naming the ceiling."""
    folder = tmp_path / "far"
    far_request(folder, 1 << 24, 8)
    code, out, peak = run_guarded(capsys, "check", str(folder))
    assert code == 2, out
    assert f"above the ceiling of {bounds.MAX_HISTORY_ENTRIES}" in out and "request 1" in out
    assert peak < GUARD_BYTES, peak


def test_the_same_request_near_zero_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same steps at position 1000 are checked (the draws here are made up, so
    the verdict is not PASS; what matters is that the check ran)."""
    folder = tmp_path / "near"
    far_request(folder, 1000, 8)
    code, out, _ = run_guarded(capsys, "check", str(folder))
    assert code in (1, 2) and "ceiling" not in out and "step0008.pt" in out, out


@pytest.mark.parametrize("value", [str(bounds.MAX_SLOTS + 1), "1000000000", "0", "-3"])
def test_max_slots_has_bounds(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, peak = run_guarded(capsys, "check", str(ENGINE / "j0-on"), "--max-slots", value)
    assert code == 64, out
    assert f"--max-slots: '{value}'" in out and f"1 to {bounds.MAX_SLOTS}" in out
    assert peak < GUARD_BYTES


def test_max_slots_at_the_bound_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    """At the ceiling, the recorded run (60 query steps of 7 draft slots) fits under the draw
    tables' ceiling and passes, slot 3 among 65536."""
    code, out, _ = run_guarded(
        capsys, "check", str(ENGINE / "j0-on"), "--max-slots", str(bounds.MAX_SLOTS)
    )
    assert code == 0 and "PASS" in out, out[-2000:]


@pytest.mark.parametrize("where", ["all", "last"])
def test_negative_positions_are_a_format_failure_naming_the_file_and_the_field(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A step of the recorded H200 run whose `positions` hold negative values (no token of a
    request sits before its start; vLLM never writes one): `check` and `show` fail that file as a
    format failure, exit 1 (as any file that is not what the patch writes), naming the file, the
    field and the value. Every position negative ended in exit 70 (NumPy refusing a history of
    negative length); `compare` says the folders are not comparable (PARTIAL, exit 2)."""
    folder = one_good_step(tmp_path / "dumps")
    data = torch.load(ENGINE / "j0-on" / "step0001.pt", weights_only=True)
    n = len(data["positions"])
    if where == "all":  # n positions in a row, ending at -5
        data["positions"] = torch.arange(-4 - n, -4, dtype=torch.int64)
        named = f"positions[0] is {-4 - n}"
    else:
        data["positions"][-1] = -5
        named = f"positions[{n - 1}] is -5"
    torch.save(data, folder / "step0001.pt")
    for command in ("check", "show"):
        code, out, _ = run_guarded(capsys, command, str(folder))
        assert code == 1, out
        assert "internal error" not in out
        line = next(x for x in out.splitlines() if "step0001.pt" in x and "positions" in x)
        assert named in line and "expected 0 or more" in line, line
    code, out, _ = run_guarded(capsys, "compare", str(folder), str(folder))
    assert code == 2 and "step0001.pt" in out and "internal error" not in out, out
