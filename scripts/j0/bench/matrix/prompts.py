"""The prompts of a matrix, made once: every setting (and every shard) runs the same requests.

They are written to OUT/prompts.jsonl as `j0 bench run --dataset FILE.jsonl` reads them
({"id", "prompt"} a line, in order), with their sha256 as j0.bench.dataset.prompts takes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from j0.bench.matrix.layout import PROMPTS
from j0.edge.atomic import write_text_atomic


@dataclass(frozen=True)
class MatrixPrompts:
    dataset: str
    lines: list[str]  # JSONL lines, one request each
    sha256: str

    @property
    def count(self) -> int:
        return len(self.lines)


def make_prompts(dataset: str | None, requests: int | None) -> MatrixPrompts:
    """The first `requests` prompts of `dataset` (`j0 bench run`'s defaults where None)."""
    from j0.bench.dataset import prompts
    from j0.bench.run.options import DEFAULT_REQUESTS, RunOptions

    spec = dataset if dataset is not None else RunOptions.dataset
    found = prompts.resolve(spec)
    if requests is None:  # as `j0 bench run`: 10, or all prompts of a smaller dataset
        requests = min(DEFAULT_REQUESTS, found.available or DEFAULT_REQUESTS)
    chosen = found.take(requests)
    lines = [json.dumps({"id": p.id, "prompt": p.text}, ensure_ascii=False) for p in chosen]
    return MatrixPrompts(dataset=spec, lines=lines, sha256=prompts.sha256_of(chosen))


def write_prompts(out: Path, made: MatrixPrompts) -> Path:
    path = out / PROMPTS
    write_text_atomic(path, "".join(line + "\n" for line in made.lines))
    return path
