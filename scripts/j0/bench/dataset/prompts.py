"""The prompts of a benchmark run: a built-in generator, a JSONL file, or a named set.

    synthetic[:LEN,LEN,...]   long-context reasoning prompts made here, offline: a ledger of
                              LEN words (about LEN tokens) and a question that needs all of it;
                              request i gets length LEN[i mod n] and a ledger of its own, so no two
                              prompts share a prefix (no prefix-cache hit between them)
    FILE.jsonl                one {"prompt": "..."} per line ("id" optional; "source" optional:
                              prompts of one source are one unit of `j0 bench report`'s
                              statistics, j0.measure.stats)
    math500 | aime | gsm8k    through the `datasets` library (HuggingFaceH4/MATH-500,
                              HuggingFaceH4/aime_2024, openai/gsm8k), with the suffix the DFlash
                              authors' benchmark puts after each problem; the prompts are kept in
                              a JSONL cache after the first load (and `datasets` keeps its own)
    speed-bench:CONFIG, longbench-v2[:LEN,...]
                              long-context sets (nvidia/SPEED-Bench, THUDM/LongBench-v2): see
                              long_context.py; cached the same way

The sha256 of a dataset is taken over the prompts a run sends, in order (JSON lines of
{"id", "prompt"}), so two runs with the same hash sent the same text.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.dataset import long_context
from j0.edge.atomic import write_text_atomic
from j0.errors import INPUT_LACKS, USAGE, J0Error, parse_json, read_input_text, require

# dflash 0.1.0, benchmark.py (DATASETS): "{problem}\n" + this, for math500 and gsm8k alike.
REASONING_SUFFIX = "Please reason step by step, and put your final answer within \\boxed{}."
DEFAULT_SYNTHETIC_LENGTHS = (1000, 4000, 8000)


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    source: str | None = None  # where it was cut from (a file, a document), where known


@dataclass(frozen=True)
class NamedSet:
    path: str
    config: str | None
    split: str
    field: str

    def format(self, row: Mapping[str, Any]) -> str:
        return f"{row[self.field]}\n{REASONING_SUFFIX}"


NAMED: dict[str, NamedSet] = {
    "math500": NamedSet("HuggingFaceH4/MATH-500", None, "test", "problem"),
    "aime": NamedSet("HuggingFaceH4/aime_2024", None, "train", "problem"),
    "gsm8k": NamedSet("openai/gsm8k", "main", "test", "question"),
}


@dataclass
class Dataset:
    """What `--dataset` named: how to get `count` prompts."""

    name: str
    kind: str  # synthetic | jsonl | named
    make: Callable[[int], list[Prompt]]
    available: int | None  # how many distinct prompts there are (None: as many as asked)
    source: str

    def take(self, count: int) -> list[Prompt]:
        if self.available is not None and count > self.available:
            raise J0Error(
                f"--requests {count}: dataset {self.name} has {self.available} prompts",
                USAGE,
            )
        return self.make(count)


def sha256_of(prompts: list[Prompt]) -> str:
    text = "".join(
        json.dumps({"id": p.id, "prompt": p.text}, ensure_ascii=False) + "\n" for p in prompts
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("J0_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "j0"
    )
    return Path(base) / "bench" / "datasets"


def resolve(spec: str, *, data_files: Path | None = None, max_words: int | None = None) -> Dataset:
    """The dataset that `--dataset SPEC` names (data_files: a local copy of a named set)."""
    if spec == "synthetic" or spec.startswith("synthetic:"):
        lengths = synthetic_lengths(spec)
        if max_words is not None:
            lengths = [min(n, max_words) for n in lengths]
        return Dataset(
            name=f"synthetic:{','.join(str(n) for n in lengths)}",
            kind="synthetic",
            make=lambda count: [
                synthetic_prompt(i, lengths[i % len(lengths)]) for i in range(count)
            ],
            available=None,
            source="j0's built-in generator (j0.bench.dataset.prompts.synthetic_prompt)",
        )
    if spec in NAMED:
        prompts = load_named(spec, data_files=data_files)
        return Dataset(
            spec,
            "named",
            lambda count: prompts[:count],
            len(prompts),
            str(data_files) if data_files else NAMED[spec].path,
        )
    if long_context.is_long_set(spec):
        found = long_context.parse(spec)
        chosen = load_long(found, data_files)
        return Dataset(spec, "named", lambda count: chosen[:count], len(chosen),
                       found.source(data_files))  # fmt: skip
    path = Path(spec)
    if path.suffix == ".jsonl" or path.exists():
        prompts = read_jsonl(path)
        return Dataset(
            path.name, "jsonl", lambda count: prompts[:count], len(prompts), str(path.resolve())
        )
    raise J0Error(
        f"--dataset {spec!r}: expected synthetic[:LEN,...], a .jsonl file, one of "
        f"{', '.join(NAMED)}, speed-bench:CONFIG or longbench-v2[:LEN,...]",
        USAGE,
    )


def synthetic_lengths(spec: str) -> list[int]:
    _, _, rest = spec.partition(":")
    if not rest:
        return list(DEFAULT_SYNTHETIC_LENGTHS)
    try:
        lengths = [int(x) for x in rest.split(",") if x.strip()]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 16:
        raise J0Error(
            f"--dataset {spec!r}: expected synthetic:LEN[,LEN...] with lengths of 16 tokens or "
            "more, e.g. synthetic:2000,8000",
            USAGE,
        )
    return lengths


def read_jsonl(path: Path) -> list[Prompt]:
    if not path.is_file():
        raise J0Error(f"--dataset {path}: no such file", INPUT_LACKS)
    prompts: list[Prompt] = []
    text = read_input_text(path, "--dataset")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}:{number}")
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise J0Error(
                f'{path}:{number}: expected an object with a string "prompt", got {line[:80]!r}',
                INPUT_LACKS,
            )
        source = row.get("source")
        prompts.append(
            Prompt(
                str(row.get("id", f"{path.stem}-{len(prompts)}")),
                row["prompt"],
                None if source is None else str(source),
            )
        )
    if not prompts:
        raise J0Error(f"{path}: no prompts in it", INPUT_LACKS)
    return prompts


def load_named(name: str, *, data_files: Path | None = None) -> list[Prompt]:
    """A named set through `datasets`: from the Hub (then cached as JSONL) or from data_files.

    data_files (a parquet, JSON or CSV copy of the set) goes through the same `datasets` call
    with that file as the source; its prompts are not cached.
    """
    spec = NAMED[name]
    cached = cache_dir() / f"{name}.jsonl"
    if data_files is None and cached.is_file():
        return read_jsonl(cached)
    datasets = require("datasets", f"j0 bench --dataset {name}", extra="bench")
    try:
        if data_files is not None:
            rows = long_context.local_copy_rows(datasets, data_files)
        else:
            rows = datasets.load_dataset(spec.path, spec.config, split=spec.split)
    except J0Error:
        raise
    except Exception as exc:
        raise J0Error(
            f"--dataset {name}: could not load {data_files or spec.path} with `datasets` "
            f"({type(exc).__name__}: {str(exc)[:300]}); offline, give a local copy with "
            "--dataset-files FILE",
            INPUT_LACKS,
        ) from None
    if spec.field not in rows.column_names:
        raise J0Error(
            f"--dataset {name}: {data_files or spec.path} has no column {spec.field!r} "
            f"(columns: {', '.join(rows.column_names)})",
            INPUT_LACKS,
        )
    prompts = [Prompt(f"{name}-{i}", spec.format(row)) for i, row in enumerate(rows)]
    if data_files is None:
        write_text_atomic(
            cached,
            "".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in prompts),
        )
    return prompts


def load_long(found: long_context.LongSet, data_files: Path | None) -> list[Prompt]:
    """A long-context set's prompts: the JSONL cache where a Hub load made one, else through
    `datasets` (then cached; a --dataset-files copy is not)."""
    cached = cache_dir() / f"{found.slug}.jsonl"
    if data_files is None and cached.is_file():
        return read_jsonl(cached)
    rows = long_context.load_rows(found, data_files)
    made = [
        Prompt(i, text)
        for i, text in long_context.prompts_of(found, rows, found.source(data_files))
    ]
    if data_files is None:
        write_text_atomic(
            cached, "".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in made)
        )
    return made


# ---------------------------------------------------------------------------------------------
# The built-in generator

_NAMES = (
    "Avery Blake Casey Devon Emery Finley Harper Jordan Kendall Logan Morgan Parker Quinn Reese "
    "Rowan Sawyer Skyler Taylor"
).split()
_PLACES = "Aldgate Brixham Corrow Dunmere Elsworth Fairholm Glenrock Hallam Ivybridge".split()
_GOODS = "copper tin salt wool flax amber cedar resin pepper indigo".split()


def synthetic_prompt(index: int, words: int) -> Prompt:
    """A long-context reasoning task of about `words` words, the same for the same arguments.

    A ledger of shipments (the context) and a question whose answer needs every line of it; the
    ledger starts with an identifier of its own, so prompts differ from their first block.
    """
    rng = random.Random(f"j0-bench-synthetic:{index}:{words}")
    question = (
        "\n\nQuestion: using every line of the ledger above, find the town whose net stock of "
        f"{rng.choice(_GOODS)} is largest at the end (shipments add to the receiving town and "
        "subtract from the sending town), state that net stock, and check your sum by adding "
        f"the entries a second way. {REASONING_SUFFIX}"
    )
    lines = [f"Ledger {rng.getrandbits(64):016x} kept by {rng.choice(_NAMES)}."]
    count = len(lines[0].split()) + len(question.split())
    day = 1
    while count < words:
        day += rng.randrange(0, 3)
        line = (
            f"Day {day}: {rng.choice(_NAMES)} moved {rng.randrange(2, 400)} crates of "
            f"{rng.choice(_GOODS)} from {rng.choice(_PLACES)} to {rng.choice(_PLACES)}."
        )
        lines.append(line)
        count += len(line.split())
    return Prompt(f"synthetic-{words}-{index}", "\n".join(lines) + question)
