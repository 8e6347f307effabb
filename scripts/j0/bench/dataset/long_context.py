"""Long-context sets on the Hub, as `--dataset` names them (loaded through `datasets`):

    speed-bench:CONFIG[@REV]        nvidia/SPEED-Bench, split test, a throughput config by input
                                    length (throughput_1k, throughput_2k, throughput_8k,
                                    throughput_32k, ...; vLLM 0.33's `vllm bench serve` has them
                                    built in) or `qualitative`; the prompt is a row's first turn
                                    (`turns[0]`, or `messages[0].content`)
    longbench-v2[:LEN,...][@REV]    THUDM/LongBench-v2, split train: request i takes row i, its
                                    `context` cut to about LEN[i mod n] words (the middle removed,
                                    as LongBench's scripts truncate), in LongBench-v2's zero-shot
                                    template with the question and its four choices

@REV pins the Hub revision (a commit or tag; default: main, recorded as unpinned). SPEED-Bench
publishes a placeholder in place of the text of rows whose source does not allow
redistribution; those rows are refused (NVIDIA's preparation script fills them: give its output
with --dataset-files). This module reads specs and rows; j0.bench.dataset.prompts makes the prompts,
caches them and records where they came from. Standard library only (`datasets` where loaded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.errors import INPUT_LACKS, USAGE, J0Error, require

SPEED_BENCH = "nvidia/SPEED-Bench"
LONGBENCH_V2 = "THUDM/LongBench-v2"
DEFAULT_LONGBENCH_LENGTHS = (2000, 8000, 16000)
PLACEHOLDER_MARK = "SHOULD BE FETCHED FROM THE SOURCE"  # SPEED-Bench's placeholder rows
LONGBENCH_TEMPLATE = (
    "Please read the following text and answer the question below.\n\n<text>\n{context}\n"
    "</text>\n\nWhat is the correct answer to this question: {question}\nChoices:\n"
    "(A) {choice_A}\n(B) {choice_B}\n(C) {choice_C}\n(D) {choice_D}\n\n"
    'Format your response as follows: "The correct answer is (insert answer here)".'
)
PREFIXES = ("speed-bench:", "longbench-v2")


@dataclass(frozen=True)
class LongSet:
    """A parsed `--dataset` spec of one of these sets."""

    family: str  # speed-bench | longbench-v2
    dataset_id: str
    config: str | None
    split: str
    revision: str | None
    lengths: tuple[int, ...] = ()

    @property
    def slug(self) -> str:
        """A file name for the prompt cache."""
        parts = [self.family, self.config or "", "-".join(map(str, self.lengths))]
        parts.append(self.revision or "main")
        return "_".join(p for p in parts if p).replace("/", "-")

    def source(self, data_files: Path | None) -> str:
        where = f"{self.dataset_id}" + (f" config {self.config}" if self.config else "")
        where += f" split {self.split} revision {self.revision or 'main (unpinned)'}"
        return f"{data_files} (a local copy of {where})" if data_files else where


def is_long_set(spec: str) -> bool:
    return spec.startswith(PREFIXES)


def parse(spec: str) -> LongSet:
    body, _, revision = spec.partition("@")
    rev = revision or None
    if body.startswith("speed-bench:"):
        config = body.removeprefix("speed-bench:")
        if not config or not (config == "qualitative" or config.startswith("throughput_")):
            raise J0Error(
                f"--dataset {spec!r}: expected speed-bench:throughput_1k (or throughput_2k, "
                "throughput_8k, throughput_32k, ..., qualitative)",
                USAGE,
            )
        return LongSet("speed-bench", SPEED_BENCH, config, "test", rev)
    if body == "longbench-v2" or body.startswith("longbench-v2:"):
        _, _, rest = body.partition(":")
        try:
            lengths = tuple(int(x) for x in rest.split(",")) if rest else DEFAULT_LONGBENCH_LENGTHS
        except ValueError:
            lengths = ()
        if not lengths or min(lengths) < 16:
            raise J0Error(
                f"--dataset {spec!r}: expected longbench-v2[:LEN,...] with lengths of 16 words "
                "or more, e.g. longbench-v2:2000,8000",
                USAGE,
            )
        return LongSet("longbench-v2", LONGBENCH_V2, None, "train", rev, lengths)
    raise J0Error(f"--dataset {spec!r}: not a long-context set ({', '.join(PREFIXES)})", USAGE)


def local_copy_rows(datasets: Any, data_files: Path) -> Any:
    """A dataset's rows from a local parquet/JSON/JSONL/CSV copy (`--dataset-files`)."""
    if not data_files.is_file():
        raise J0Error(f"--dataset-files {data_files}: no such file", INPUT_LACKS)
    builder = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
    kind = builder.get(data_files.suffix)
    if kind is None:
        raise J0Error(
            f"--dataset-files {data_files}: expected .parquet, .json, .jsonl or .csv", USAGE
        )
    return datasets.load_dataset(kind, data_files=str(data_files), split="train")


def load_rows(found: LongSet, data_files: Path | None) -> list[dict[str, Any]]:
    """The set's rows through `datasets`: from the Hub, or from a local parquet/JSON/CSV copy."""
    datasets = require("datasets", f"j0 bench --dataset {found.family}", extra="bench")
    try:
        if data_files is not None:
            rows = local_copy_rows(datasets, data_files)
        else:
            rows = datasets.load_dataset(
                found.dataset_id, found.config, split=found.split, revision=found.revision
            )
    except J0Error:
        raise
    except Exception as exc:
        raise J0Error(
            f"--dataset {found.family}: could not load {found.source(data_files)} with "
            f"`datasets` ({type(exc).__name__}: {str(exc)[:300]}); offline, give a local copy "
            "with --dataset-files FILE",
            INPUT_LACKS,
        ) from None
    return [dict(row) for row in rows]


def _speed_bench_prompt(row: Mapping[str, Any]) -> str | None:
    turns = row.get("turns")
    if isinstance(turns, Sequence) and not isinstance(turns, str) and turns:
        first = turns[0]
        return first if isinstance(first, str) else None
    messages = row.get("messages")
    if isinstance(messages, Sequence) and messages and isinstance(messages[0], Mapping):
        content = messages[0].get("content")
        return content if isinstance(content, str) else None
    return None


def cut_words(text: str, words: int) -> str:
    """`text` cut to `words` words by removing the middle (the whole text when shorter)."""
    parts = text.split()
    if len(parts) <= words:
        return text
    head = words // 2
    return " ".join(parts[:head] + parts[len(parts) - (words - head) :])


def prompts_of(found: LongSet, rows: list[dict[str, Any]], where: str) -> list[tuple[str, str]]:
    """(id, prompt) of every row, in order; J0Error for rows that lack what is needed."""
    out: list[tuple[str, str]] = []
    placeholders = 0
    for i, row in enumerate(rows):
        if found.family == "speed-bench":
            text = _speed_bench_prompt(row)
            if text is None:
                raise J0Error(
                    f"{where}: row {i} has neither turns[0] nor messages[0].content as text",
                    INPUT_LACKS,
                )
            if PLACEHOLDER_MARK in text:
                placeholders += 1
                continue
            out.append((str(row.get("question_id") or f"{found.config}-{i}"), text))
            continue
        missing = [k for k in ("context", "question", "choice_A", "choice_B", "choice_C",
                               "choice_D") if not isinstance(row.get(k), str)]  # fmt: skip
        if missing:
            raise J0Error(
                f"{where}: row {i} lacks {', '.join(missing)} (expected LongBench-v2's columns)",
                INPUT_LACKS,
            )
        words = found.lengths[len(out) % len(found.lengths)]
        text = LONGBENCH_TEMPLATE.format(**{**row, "context": cut_words(row["context"], words)})
        out.append((f"{row.get('_id') or i}-{words}w", text))
    if placeholders:
        raise J0Error(
            f"{where}: {placeholders} of {len(rows)} rows hold SPEED-Bench's placeholder instead "
            "of the prompt (their source does not allow redistribution): run NVIDIA's "
            "preparation script for SPEED-Bench and give its output with --dataset-files FILE",
            INPUT_LACKS,
        )
    if not out:
        raise J0Error(f"{where}: no rows in it", INPUT_LACKS)
    return out
