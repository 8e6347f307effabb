"""OUT/logs/target-positions.json: the target's held-out loss by position in its window, one
bucket of positions each ({"buckets": [{"from", "to", "tokens", "loss"}, ...]}), as a type owned
by its writer (`j0 mini train` writes it, `j0 mini curves` plots it). `from` is no Python field
name: the field `start` holds it (KeyName). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from j0.edge.document import Document, KeyName
from j0.edge.fields import read_document, write_document

POSITIONS = "target-positions.json"
EXPECTED = "the target-positions.json of `j0 mini train` ({'buckets': [{from, to, tokens, loss}]})"


@dataclass(frozen=True)
class PositionBucket(Document):
    """Positions `start` ("from") to `to` of the window: the loss of predicting the token after
    each, over `tokens` predicted tokens."""

    start: Annotated[int, KeyName("from")]
    to: int
    tokens: int
    loss: float


@dataclass(frozen=True)
class TargetPositions(Document):
    buckets: tuple[PositionBucket, ...]


def write_positions(logs: Path, buckets: list[PositionBucket]) -> Path:
    """logs/target-positions.json (atomically); its path."""
    return write_document(logs / POSITIONS, TargetPositions(tuple(buckets)).to_json())


def read_positions(path: Path) -> list[PositionBucket]:
    """The buckets in the file at `path`, [] where it is not there (folders trained before issue
    54); a file that is not such a document is refused naming it, the key and the value (exit
    2)."""
    if not path.is_file():
        return []
    return list(TargetPositions.from_json(read_document(path, EXPECTED), str(path)).buckets)
