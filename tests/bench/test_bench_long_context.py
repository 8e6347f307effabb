"""Long-context sets (nvidia/SPEED-Bench, THUDM/LongBench-v2) through the real `datasets` library,
offline, from small local files in the sets' own formats (SPEED-Bench: parquet rows of
question_id, category, turns; LongBench-v2: its data.json, one JSON array of objects), and the
specs, cuts and refusals checked by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.bench.dataset import long_context
from j0.errors import J0Error

LOADER = """
import json, sys
from pathlib import Path
from j0.bench.dataset import prompts
from j0.errors import J0Error
out = {}
for spec, path in json.loads(sys.argv[1]):
    try:
        data = prompts.resolve(spec, data_files=Path(path))
        out[spec] = {"prompts": [[p.id, p.text] for p in data.take(data.available)],
                     "source": data.source}
    except J0Error as exc:
        out[spec] = {"error": str(exc), "code": exc.exit_code}
try:
    prompts.resolve("speed-bench:throughput_8k")
except J0Error as exc:
    out["offline"] = str(exc)
print(json.dumps(out))
"""


def run_loader(tmp_path: Path, specs: list[tuple[str, Path]]) -> dict:
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "J0_CACHE": str(tmp_path / "j0"),
    }
    arg = json.dumps([[spec, str(path)] for spec, path in specs])
    done = subprocess.run(
        [sys.executable, "-c", LOADER, arg], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    out: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_specs() -> None:
    found = long_context.parse("speed-bench:throughput_8k@abc123")
    assert (found.dataset_id, found.config, found.split, found.revision) == (
        "nvidia/SPEED-Bench", "throughput_8k", "test", "abc123"
    )  # fmt: skip
    found = long_context.parse("longbench-v2:2000,20000")
    assert (found.dataset_id, found.split, found.lengths) == (
        "THUDM/LongBench-v2", "train", (2000, 20000)
    )  # fmt: skip
    assert found.source(None).endswith("revision main (unpinned)")
    assert long_context.parse("longbench-v2").lengths == (2000, 8000, 16000)
    for bad in ("speed-bench:", "speed-bench:mmlu", "longbench-v2:8", "longbench-v2:x"):
        with pytest.raises(J0Error) as exc:
            long_context.parse(bad)
        assert exc.value.exit_code == 64


def test_cut_removes_the_middle() -> None:
    text = " ".join(f"w{i}" for i in range(10))
    assert long_context.cut_words(text, 4) == "w0 w1 w8 w9"
    assert long_context.cut_words(text, 5) == "w0 w1 w7 w8 w9"
    assert long_context.cut_words(text, 40) == text


# Slow: `datasets` reads both sets from local files (9 s in a fast-subset run of 2026-12-06).
@pytest.mark.slow
def test_both_sets_from_local_files_in_their_formats(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    speed = tmp_path / "throughput_8k-test.parquet"
    pq.write_table(
        pa.table(
            {
                "question_id": ["0" * 31 + "a", "0" * 31 + "b"],
                "category": ["low_entropy", "high_entropy"],
                "turns": [["Summarise the log below. " + "x " * 50], ["Sort these: 3 1 2"]],
            }
        ),
        speed,
    )
    placeholder = tmp_path / "throughput_1k-test.parquet"
    pq.write_table(
        pa.table(
            {
                "question_id": ["1" * 32, "2" * 32],
                "category": ["mixed", "mixed"],
                "turns": [
                    ["FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"],
                    ["a real prompt"],
                ],
            }
        ),
        placeholder,
    )
    longbench = tmp_path / "data.json"
    rows = [
        {
            "_id": f"66f36490821e116aacb2{i:04d}",
            "domain": "Single-Document QA",
            "sub_domain": "Financial",
            "difficulty": "easy",
            "length": "short",
            "question": f"Question {i}?",
            "choice_A": "one",
            "choice_B": "two",
            "choice_C": "three",
            "choice_D": "four",
            "answer": "B",
            "context": " ".join(f"c{i}w{j}" for j in range(100)),
        }
        for i in range(3)
    ]
    longbench.write_text(json.dumps(rows))
    out = run_loader(
        tmp_path,
        [
            ("speed-bench:throughput_8k", speed),
            ("speed-bench:throughput_1k", placeholder),
            ("longbench-v2:20,60", longbench),
        ],
    )
    got = out["speed-bench:throughput_8k"]
    assert got["prompts"] == [
        ["0" * 31 + "a", "Summarise the log below. " + "x " * 50],
        ["0" * 31 + "b", "Sort these: 3 1 2"],
    ]
    assert "a local copy of nvidia/SPEED-Bench config throughput_8k split test" in got["source"]
    refused = out["speed-bench:throughput_1k"]
    assert refused["code"] == 2 and "1 of 2 rows hold SPEED-Bench's placeholder" in refused["error"]
    got = out["longbench-v2:20,60"]["prompts"]
    assert [p[0] for p in got] == [
        "66f36490821e116aacb20000-20w", "66f36490821e116aacb20001-60w",
        "66f36490821e116aacb20002-20w",
    ]  # fmt: skip
    first = got[0][1]
    kept = (
        " ".join(f"c0w{j}" for j in range(10)) + " " + " ".join(f"c0w{j}" for j in range(90, 100))
    )
    assert first == (
        "Please read the following text and answer the question below.\n\n<text>\n"
        f"{kept}\n</text>\n\nWhat is the correct answer to this question: Question 0?\n"
        "Choices:\n(A) one\n(B) two\n(C) three\n(D) four\n\n"
        'Format your response as follows: "The correct answer is (insert answer here)".'
    )
    assert "could not load nvidia/SPEED-Bench config throughput_8k" in out["offline"]
    assert "--dataset-files FILE" in out["offline"]
