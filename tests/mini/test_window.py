"""`j0 mini run` against the target's training window (issue 54, item 1): a context whose prompt
plus output passes the window the target was trained on (mini.json's sizes.target_seq) is refused
before anything is made or started (exit 64, naming the file, the window and the contexts), or,
with --beyond-training, served and labelled; and --long-requests gives the longest context more
prompts, each from a file of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from j0.errors import UNAVAILABLE, USAGE, J0Error
from j0.mini.run.compare import window_words
from j0.mini.run.prompts import Pool, select
from j0.mini.run.run import MiniRunOptions, run_mini_run
from j0.mini.run.run_summary import RunSummary

ROOT = Path(__file__).resolve().parents[2]
KEPT_TRAIN = ROOT / "docs" / "results" / "mini-h200" / "train"


@pytest.fixture
def h200_folder(tmp_path: Path) -> Path:
    """The committed H200 training's mini.json and model configs (its target: windows of
    2048), copied: what `j0 mini run` reads before it serves anything."""
    out = tmp_path / "mini"
    out.mkdir()
    shutil.copy(KEPT_TRAIN / "mini.json", out / "mini.json")
    for model in ("target", "drafter-mask", "drafter-j0"):
        (out / model).mkdir()
        shutil.copy(KEPT_TRAIN / model / "config.json", out / model / "config.json")
    return out


def test_contexts_past_the_window_are_refused_before_anything(h200_folder: Path) -> None:
    run_dir = h200_folder.parent / "run"
    options = MiniRunOptions(out=h200_folder, contexts=(512, 2048, 4096), run_dir=run_dir)
    with pytest.raises(J0Error) as caught:
        run_mini_run(options, say=lambda line: None)
    text = str(caught.value)
    assert caught.value.exit_code == USAGE
    assert str(h200_folder / "mini.json") in text
    assert "windows of 2048 tokens" in text and "contexts 2048, 4096 plus 256" in text
    assert "--beyond-training" in text
    assert not run_dir.exists()


def test_beyond_training_passes_the_window_check(h200_folder: Path) -> None:
    """With --beyond-training the run goes on to its next check (a GPU: none here, exit 69)."""
    notes: list[str] = []
    options = MiniRunOptions(
        out=h200_folder, contexts=(4096,), run_dir=h200_folder / "run", beyond_training=True
    )
    with pytest.raises(J0Error) as caught:
        run_mini_run(options, say=notes.append)
    assert caught.value.exit_code == UNAVAILABLE
    assert any("NOTE" in n and "4096" in n and "--beyond-training" in n for n in notes)


def test_contexts_inside_the_window_pass(h200_folder: Path) -> None:
    options = MiniRunOptions(
        out=h200_folder, contexts=(512, 1792), max_tokens=256, run_dir=h200_folder / "run"
    )
    with pytest.raises(J0Error) as caught:  # 1792 + 256 = 2048: inside; the GPU check next
        run_mini_run(options, say=lambda line: None)
    assert caught.value.exit_code == UNAVAILABLE


def test_a_folder_that_does_not_say_its_window_is_refused(h200_folder: Path) -> None:
    doc = json.loads((h200_folder / "mini.json").read_text())
    del doc["sizes"]["target_seq"]
    (h200_folder / "mini.json").write_text(json.dumps(doc))
    options = MiniRunOptions(out=h200_folder, contexts=(256,), run_dir=h200_folder / "run")
    with pytest.raises(J0Error) as caught:
        run_mini_run(options, say=lambda line: None)
    assert caught.value.exit_code == USAGE
    assert "does not say how long the target's training windows were" in str(caught.value)


def test_the_summary_labels_contexts_beyond_the_window() -> None:
    summary = RunSummary(
        contexts=[512, 4096],
        requests_by_context={"512": 48, "4096": 200},
        target_seq=2048,
        beyond_training=[4096],
    )
    words = "\n".join(window_words(summary))
    assert "48 at 512, 200 at 4096" in words
    assert "windows of 2048 tokens" in words
    assert "Beyond the target's training window" in words and "contexts 4096" in words
    assert window_words(RunSummary(contexts=[512])) == []


class WordTokenizer:
    """Token ids: one per whitespace-separated word (the Pool calls tokenizer(text, ...))."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [len(word) for word in text.split()]}


def test_more_prompts_at_the_longest_context(tmp_path: Path) -> None:
    files = []
    for number in range(12):
        path = tmp_path / f"f{number:02d}.py"
        words = ["x" * (50 + number)] + ["w" * (1 + (number + i) % 7) for i in range(39)]
        path.write_text(" ".join(words))  # each file's first word its own: no two alike
        files.append((tmp_path, path.name, "held out"))
    pool = Pool(files, WordTokenizer(), set())
    chosen = select(pool, (8, 32), {8: 2, 32: 9})
    by_context = {c: [p for p in chosen if p.context == c] for c in (8, 32)}
    assert len(by_context[32]) == 9 and len(by_context[8]) == 2
    assert len({p.source for p in chosen}) == 11  # each from a file of its own
    with pytest.raises(J0Error) as caught:
        select(Pool(files, WordTokenizer(), set()), (8, 32), {8: 2, 32: 13})
    assert "13 prompts of 32 tokens were asked for" in str(caught.value)
