"""The ceilings a dump file is held to before anything is allocated from what it claims.

Dump files come from elsewhere. A few kilobytes can claim a great deal: a tensor saved with a
stride of 0 (`torch.zeros(1).expand(10**9)`) is a 1.4 KB file of 10^9 elements, which NumPy then
materialises; a position of 2^25 makes every query step copy a history of 2^25 entries; a large
`--max-slots` or query block multiplies the draw tables. So, in this order:

1. the file (before torch.load): at most MAX_FILE_BYTES on disk, a zip archive (what torch.save
   writes since torch 1.6; the older format declares storage sizes that torch.load allocates
   unread) whose entries declare at most MAX_FILE_BYTES unpacked;
2. each tensor (after torch.load, which reads only the storages those entries hold): its
   elements fit in its own storage (no element stands for two: refuses stride 0 and
   overlapping strides), an integer, floating or bool dtype, and the per-key ceilings of
   MAX_STEP_TOKENS rows, MAX_AUX_WIDTH columns of aux and MAX_QUERY_BLOCK query slots;
3. the check (before its tables): `--max-slots` at most MAX_SLOTS (a usage error), and per request
   the rebuilt histories (one per J0 query step, as long as the request's reach) at most
   MAX_HISTORY_ENTRIES and the draw tables (slots x draft slots x query steps) at most
   MAX_DRAW_ENTRIES.

docs/dumps.md ("Limits") states the same numbers.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 2 << 30  # one stepNNNN.pt, on disk and unpacked: 2 GiB
MAX_STEP_TOKENS = 1 << 20  # target tokens of one step (positions, input_ids, aux rows)
MAX_AUX_WIDTH = 1 << 18  # aux columns: hidden size x taps (a 16384-wide model with 16 taps)
MAX_QUERY_BLOCK = 1 << 10  # query slots of one step (the anchor plus the draft slots)
MAX_SLOTS = 1 << 16  # --max-slots: request slots tried (vLLM's max_num_seqs)
MAX_HISTORY_ENTRIES = 1 << 26  # history entries one request's check holds (512 MiB as int64)
MAX_DRAW_ENTRIES = 1 << 25  # slots x draft slots x (J0 query steps + 1) of one request

# Dtype families a dump tensor may have (lenient loads accept other widths of these).
_ALLOWED_KINDS = ("int", "uint", "float", "bfloat", "bool")


def file_problem(path: Path) -> str | None:
    """Why `path` is refused before torch.load, or None: its size, format, unpacked size."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if size > MAX_FILE_BYTES:
        return f"is {size} bytes, above the ceiling of {MAX_FILE_BYTES} bytes for one step file"
    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return (
            "cannot be read as a torch file: not a zip archive, the format torch.save writes "
            "(since torch 1.6); older or other formats are not read"
        )
    if unpacked > MAX_FILE_BYTES:
        return (
            f"declares {unpacked} bytes unpacked, above the ceiling of {MAX_FILE_BYTES} bytes "
            "for one step file"
        )
    return None


def tensor_problem(key: str, tensor: Any) -> str | None:
    """Why one loaded tensor is refused, or None: its dtype, its elements against its storage,
    its size against the key's ceiling."""
    dtype = str(tensor.dtype).removeprefix("torch.")
    if not dtype.startswith(_ALLOWED_KINDS) or "complex" in dtype:
        return f"{key} is {dtype}, expected an integer, floating or bool tensor"
    shape = list(tensor.shape)
    numel = 1
    for dim in shape:
        numel *= int(dim)
    if numel:
        held = tensor.untyped_storage().nbytes() - tensor.storage_offset() * tensor.element_size()
        if numel * tensor.element_size() > held:
            return (
                f"{key} has shape {shape} and strides {list(tensor.stride())}: {numel} elements "
                f"in a storage of {max(held, 0)} bytes (a tensor whose elements repeat, e.g. "
                "saved from .expand(), is not a dump)"
            )
    ceilings = _ceilings(key)
    for axis, (dim, (ceiling, what)) in enumerate(zip(shape, ceilings, strict=False)):
        if dim > ceiling:
            return f"{key} has {dim} {what} (axis {axis}), above the ceiling of {ceiling}"
    return None


def _ceilings(key: str) -> list[tuple[int, str]]:
    rows = (MAX_STEP_TOKENS, "rows")
    if key == "aux":
        return [rows, (MAX_AUX_WIDTH, "columns")]
    if key in ("query_ids", "query_positions"):
        return [(MAX_QUERY_BLOCK, "query slots")]
    if key == "draft_tokens":
        return [rows, (MAX_QUERY_BLOCK, "draft slots")]
    return [rows, rows]


def request_problem(
    label: str, reach: int, committed: list[int], max_slots: int, num_spec: int
) -> str | None:
    """Why checking one request would hold too much, or None. reach: the history's length (the
    request's highest position plus the query block); committed: L of each J0 query step (each
    keeps a copy of the history it drew from); max_slots x num_spec: one draw table."""
    entries = reach + sum(min(c, reach) for c in committed)
    if entries > MAX_HISTORY_ENTRIES:
        return (
            f"{label}: checking it holds {entries} history entries (reach {reach} over "
            f"{len(committed)} J0 query steps), above the ceiling of {MAX_HISTORY_ENTRIES}"
        )
    draws = max_slots * num_spec * (len(committed) + 1)
    if committed and draws > MAX_DRAW_ENTRIES:
        return (
            f"{label}: its draw tables hold {draws} entries ({max_slots} slots x {num_spec} "
            f"draft slots x {len(committed) + 1}), above the ceiling of {MAX_DRAW_ENTRIES}; "
            "a smaller --max-slots checks it"
        )
    return None
