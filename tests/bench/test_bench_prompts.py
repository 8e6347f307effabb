"""The prompts of `j0 bench run`: the built-in generator, JSONL files, and named sets loaded
with the real `datasets` library from a local parquet file (the Hub is not reachable from tests;
the named path is the same `datasets.load_dataset` call with the file as its source)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.bench.dataset import prompts
from j0.errors import J0Error

SUFFIX = "Please reason step by step, and put your final answer within \\boxed{}."


def test_synthetic_prompts_are_long_distinct_and_reproducible() -> None:
    data = prompts.resolve("synthetic:300,1200")
    assert data.name == "synthetic:300,1200"
    first = data.take(4)
    assert first == prompts.resolve("synthetic:300,1200").take(4)
    words = [len(p.text.split()) for p in first]
    assert 300 <= words[0] < 330 and 1200 <= words[1] < 1230 and 300 <= words[2] < 330
    # no two prompts share their first 16 words (a prefix-cache block)
    assert len({tuple(p.text.split()[:16]) for p in first}) == 4
    assert all(p.text.endswith(SUFFIX) for p in first)
    assert prompts.sha256_of(first) != prompts.sha256_of(first[::-1])


def test_synthetic_lengths_are_capped_and_checked() -> None:
    assert prompts.resolve("synthetic:5000,100", max_words=1000).name == "synthetic:1000,100"
    for bad in ("synthetic:abc", "synthetic:8", "synthetic:"):
        if bad == "synthetic:":
            assert prompts.resolve(bad).name == "synthetic:1000,4000,8000"
            continue
        with pytest.raises(J0Error, match="synthetic:LEN"):
            prompts.resolve(bad)


def test_jsonl(tmp_path: Path) -> None:
    good = tmp_path / "p.jsonl"
    good.write_text('{"prompt": "a"}\n\n{"id": "x", "prompt": "b"}\n')
    data = prompts.resolve(str(good))
    assert [(p.id, p.text) for p in data.take(2)] == [("p-0", "a"), ("x", "b")]
    with pytest.raises(J0Error, match="has 2 prompts"):
        data.take(3)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{"text": "b"}\n')
    with pytest.raises(J0Error, match=r'bad.jsonl:2: expected an object with a string "prompt"'):
        prompts.resolve(str(bad))
    with pytest.raises(J0Error, match="no such file"):
        prompts.resolve(str(tmp_path / "missing.jsonl"))
    with pytest.raises(J0Error, match="one of math500, aime, gsm8k"):
        prompts.resolve("mmlu")


LOADER = """
import json, sys
from pathlib import Path
from j0.bench.dataset import prompts
from j0.errors import J0Error
out = {}
data = prompts.resolve("math500", data_files=Path(sys.argv[1]))
out["math500"] = [[p.id, p.text] for p in data.take(2)]
out["available"] = data.available
try:
    prompts.load_named("gsm8k")
except J0Error as exc:
    out["offline"] = str(exc)
print(json.dumps(out))
"""


# Slow: `datasets` in a child process (7 s in a fast-subset run of 2026-12-06).
@pytest.mark.slow
def test_named_set_through_datasets_from_a_local_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "math500.parquet"
    pq.write_table(
        pa.table({"problem": ["What is 1+1?", "Solve x^2=4."], "answer": ["2", "2"]}), source
    )
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "J0_CACHE": str(tmp_path / "j0"),
    }
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["math500"] == [
        ["math500-0", f"What is 1+1?\n{SUFFIX}"],
        ["math500-1", f"Solve x^2=4.\n{SUFFIX}"],
    ]
    assert out["available"] == 2
    # offline, with nothing cached: a clear error that names the set and the way out
    assert "--dataset gsm8k: could not load openai/gsm8k" in out["offline"]
    assert "--dataset-files FILE" in out["offline"]


def test_named_set_cache_is_read_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("J0_CACHE", str(tmp_path))
    cached = tmp_path / "bench" / "datasets" / "aime.jsonl"
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps({"id": "aime-0", "prompt": "P\n" + SUFFIX}) + "\n")
    assert prompts.resolve("aime").take(1)[0].text == "P\n" + SUFFIX
