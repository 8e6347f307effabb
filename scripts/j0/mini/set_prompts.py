"""The prompts a model set served, known by the sha256 of the prompts.jsonl its `j0 mini run` sent
(`j0 mini sets`: issue 54 asks for the same prompts served by at least three sets). Where it comes
from, in this order:

  1. its mini-run.json's prompts_sha256 (`j0 mini run` records it from 2026-12-08 on);
  2. a prompts.jsonl in the set's folder (PROMPTS_PLACES), hashed;
  3. the member run/prompts.jsonl of its run.tar.xz (a committed results folder) or of
     scripts/mini-gpu.sh's mini-gpu-seedN.tar.xz, hashed as the archive is read as a stream:
     nothing is unpacked to disk, and at most ARCHIVE_LIMIT bytes are unpacked in memory, a piece
     at a time (an archive that holds more before the member ends is refused, named);
  4. else unknown (a run from before prompts_sha256 whose prompts were not kept beside it).

Standard library only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from j0.errors import INPUT_LACKS, InputLimit, J0Error, read_input_bytes
from j0.mini.run.run_summary import RunSummary

PROMPTS_PLACES = ("prompts.jsonl", "run/prompts.jsonl")
ARCHIVE_PLACES = ("run.tar.xz", "mini-gpu-seed*.tar.xz")
MEMBER = "run/prompts.jsonl"
ARCHIVE_LIMIT = InputLimit.ANY  # bytes unpacked (in memory, a piece at a time) to find MEMBER
RECORDED = "mini-run.json's prompts_sha256"
NOT_RECORDED = (
    "a run from before mini-run.json's prompts_sha256, with no prompts.jsonl or run.tar.xz "
    "in its folder"
)


@dataclass(frozen=True)
class SetPrompts:
    """A set's prompts: their sha256 (None: unknown), how many (None: not known), and where the
    sha256 came from, or why it is unknown."""

    sha256: str | None
    count: int | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "prompts": self.count, "from": self.source}


def place(folder: Path, summary: RunSummary) -> str | Path | None:
    """Where the set's digest comes from, nothing read: RECORDED, a prompts.jsonl, an archive,
    or None (unknown)."""
    if summary.prompts_sha256 is not None:
        return RECORDED
    for where in (PROMPTS_PLACES, ARCHIVE_PLACES):
        for pattern in where:
            found = sorted(p for p in folder.glob(pattern) if p.is_file())
            if len(found) > 1:
                names = ", ".join(str(p) for p in found)
                raise J0Error(f"{folder}: {names}: more than one; expected one", INPUT_LACKS)
            if found:
                return found[0]
    return None


def prompts_of(folder: Path, summary: RunSummary, limit: int = ARCHIVE_LIMIT) -> SetPrompts:
    """The set's prompts as the module's docstring says; J0Error (exit 2) naming a prompts.jsonl
    or archive that cannot be read, or an archive over `limit` bytes before its member ends."""
    where = place(folder, summary)
    if where is None:
        return SetPrompts(None, None, NOT_RECORDED)
    if where == RECORDED:
        by_context = summary.requests_by_context
        count = sum(by_context.values()) if by_context else None
        return SetPrompts(summary.prompts_sha256, count, RECORDED)
    path = Path(where)
    if path.name.endswith(".jsonl"):
        data = read_input_bytes(path, "a set's prompts.jsonl")  # bounded: InputLimit.ANY
        return SetPrompts(hashlib.sha256(data).hexdigest(), data.count(b"\n"), str(path))
    return from_archive(path, limit)


class _Bounded:
    """A stream's read() that refuses to give more than `limit` bytes in all."""

    def __init__(self, stream: BinaryIO, limit: int, path: Path) -> None:
        self.stream, self.limit, self.path, self.total = stream, limit, path, 0

    def read(self, size: int = -1) -> bytes:
        wanted = self.limit + 1 - self.total
        data = self.stream.read(wanted if size < 0 else min(size, wanted))
        self.total += len(data)
        if self.total > self.limit:
            raise J0Error(
                f"{self.path}: more than {self.limit} bytes unpacked before its {MEMBER} ends; "
                "expected a run's archive (a few tens of MB unpacked)",
                INPUT_LACKS,
            )
        return data


def from_archive(path: Path, limit: int = ARCHIVE_LIMIT) -> SetPrompts:
    """The sha256 of the archive's MEMBER, read as a stream (tarfile's "r|"), the archive's
    members before it skipped; unknown where it holds none."""
    import lzma
    import tarfile

    digest, count = hashlib.sha256(), 0
    try:
        with lzma.open(path) as packed:
            bounded: Any = _Bounded(packed, limit, path)  # tarfile reads it as a file object
            with tarfile.open(fileobj=bounded, mode="r|") as archive:
                for member in archive:
                    if member.isfile() and member.name.removeprefix("./") == MEMBER:
                        handle = archive.extractfile(member)
                        assert handle is not None  # a regular file's member
                        while piece := handle.read(InputLimit.PIECE):
                            digest.update(piece)
                            count += piece.count(b"\n")
                        return SetPrompts(digest.hexdigest(), count, f"{path}: {MEMBER}")
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as exc:
        raise J0Error(
            f"{path}: not a readable .tar.xz ({type(exc).__name__}: {exc}); expected a run's "
            "archive",
            INPUT_LACKS,
        ) from None
    return SetPrompts(None, None, f"{path} holds no {MEMBER}")


def _theirs(labels: list[str]) -> str:
    return " and ".join(f"{label}'s" for label in labels)


def differences(named: dict[str, SetPrompts]) -> tuple[list[str], list[str]]:
    """(the sets whose prompts are not the first set's, the sets whose prompts are unknown)."""
    known = [(label, p.sha256) for label, p in named.items() if p.sha256 is not None]
    other = [label for label, sha in known if sha != known[0][1]] if known else []
    return other, [label for label, p in named.items() if p.sha256 is None]


def row_words(named: dict[str, SetPrompts]) -> str:
    """Why the sets counted in one comparison cannot be said to have served the same prompts,
    in short (the Prompts line says it in full); "" where they did."""
    other, unknown = differences(named)
    first = next((label for label, p in named.items() if p.sha256 is not None), "")
    words = []
    if other:
        words.append(
            f"the sets counted served different prompts ({_theirs(other)} are not {first}'s)"
        )
    if unknown:
        words.append(f"{_theirs(unknown)} prompts are not known (see Prompts)")
    return "; ".join(words)


def _many(group: list[SetPrompts], what: str = "prompts") -> str:
    count = next((p.count for p in group if p.count is not None), None)
    return f"{count} {what}" if count is not None else what


def line(named: dict[str, SetPrompts], others: dict[str, SetPrompts] | None = None) -> str:
    """The report's Prompts line: whether the replications (`named`) served the same prompts,
    then what the sets of other recipes (`others`) served beside them."""
    if not named:
        return "Prompts: no replication."
    other, unknown = differences(named)
    known = {label: p for label, p in named.items() if p.sha256 is not None}
    words = []
    if known and not other:
        sha = next(iter(known.values())).sha256 or ""
        whose = (
            f"the {len(known)} replications ({', '.join(known)}) served the same "
            if len(known) > 1
            else f"the replication {next(iter(known))} served "
        )
        words.append(f"{whose}{_many(list(known.values()))} (sha256 {sha[:8]}…)")
    elif other:
        first = next(iter(known))
        shown = ", ".join(f"{label} {(p.sha256 or '')[:8]}…" for label, p in known.items())
        words.append(
            f"the replications served different prompts: {_theirs(other)} are not {first}'s "
            f"(sha256 {shown}); a comparison over sets that served different prompts is not "
            "resolved"
        )
    if unknown:
        why = "; ".join(f"{label}: {named[label].source}" for label in unknown)
        words.append(
            f"not known for {', '.join(unknown)} ({why}): that they served the same prompts "
            "cannot be shown, so no comparison counting them is resolved"
        )
    text = "Prompts: " + "; ".join(words) + "."
    if others:
        text += " " + _others(others, None if other else next(iter(known.values()), None))
    return text


def _others(others: dict[str, SetPrompts], common: SetPrompts | None) -> str:
    """What the sets of other recipes served: the replications' prompts (`common`, where they
    served the same) or others, grouped by sha256."""
    groups: dict[str | None, list[str]] = {}
    for label, p in others.items():
        groups.setdefault(p.sha256, []).append(label)
    words = []
    for sha, labels in groups.items():
        sets = " and ".join(labels)
        if sha is None:
            words.append(f"{sets}: not known")
        elif common is not None and sha == common.sha256:
            words.append(f"{sets} served the replications' prompts")
        else:
            many = _many([others[label] for label in labels], "other prompts")
            words.append(f"{sets} served {many} (sha256 {sha[:8]}…)")
    return "The sets of other recipes: " + "; ".join(words) + "."
