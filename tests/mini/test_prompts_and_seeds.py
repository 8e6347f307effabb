"""j0.mini.run.prompts (files no model saw, one per prompt, none a prefix of another, longest bins
first) on made-up files with a tokenizer of one id per byte; j0.mini.run.seeds' import hook in a
real Python process on a made-up vllm package."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from j0.errors import J0Error
from j0.mini.run import prompts as mp
from j0.mini.run import seeds
from j0.mini.train.corpus import Corpus, SourceFile, is_heldout
from j0.pins import load_pins


class Bytes:
    """One token per byte."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(text.encode())}

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode(errors="replace")


def source(root: Path, relative: str, text: str, heldout: bool) -> SourceFile:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return SourceFile(str(root), relative, len(text.encode()), digest, heldout)


def names(count: int, held: bool) -> list[str]:
    """`count` relative paths that the corpus rule holds out (held) or does not."""
    found, i = [], 0
    while len(found) < count:
        name = f"pkg/m{i:04d}.py"
        if is_heldout(name) == held:
            found.append(name)
        i += 1
    return found


def body(seed: int, size: int) -> str:
    line = f"x{seed} = {seed}  # file {seed}\n"
    return (line * (size // len(line) + 1))[:size]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Corpus, Path]:
    root = tmp_path / "site"
    files = [source(root, n, body(i, 3200), False) for i, n in enumerate(names(3, False))]
    held = names(3, True)
    files += [source(root, n, body(100 + i, 3000 + 2000 * i), True) for i, n in enumerate(held)]
    # past the corpus: more files the rule holds out, other files, and a copy of a training file
    for i, n in enumerate(names(6, True)[3:]):
        source(root, n, body(200 + i, 4000), True)
    for i, n in enumerate(names(8, False)[3:]):
        source(root, n, body(300 + i, 9000), False)
    (root / "pkg" / "zz_copy.py").write_text(body(0, 3200))
    return Corpus(tuple(files)), root


def test_each_prompt_from_a_file_of_its_own_longest_first(tree: tuple[Corpus, Path]) -> None:
    corpus, root = tree
    chosen = mp.make_prompts(corpus, Bytes(), (1000, 3500, 6000), 3, roots=[root])
    assert [p.id for p in chosen[:3]] == ["ctx1000-00", "ctx3500-00", "ctx6000-00"]  # interleaved
    assert len({p.source for p in chosen}) == 9
    assert all(len(p.ids) == p.context and p.text == bytes(p.ids).decode() for p in chosen)
    # the corpus's own held-out files come first: 3000, 5000 and 7000 bytes
    longest = [p for p in chosen if p.context == 6000]
    assert longest[0].group == mp.HELDOUT and longest[0].source == names(3, True)[2]
    training = {f.sha256 for f in corpus.train}
    copy = hashlib.sha256(body(0, 3200).encode()).hexdigest()
    assert copy in training and all(p.sha256 not in training for p in chosen)
    assert all(p.source != "pkg/zz_copy.py" for p in chosen)
    groups = {p.group for p in chosen}
    assert groups <= {mp.HELDOUT, mp.HELDOUT_RULE, mp.UNSEEN} and mp.UNSEEN in groups
    for a in chosen:
        for b in chosen:
            if a is not b:
                short, long = sorted((a.ids, b.ids), key=len)
                assert long[: len(short)] != short


def test_too_few_files_is_an_error_unless_files_may_be_reused(tree: tuple[Corpus, Path]) -> None:
    corpus, root = tree
    with pytest.raises(J0Error, match=r"files of at least 8000 tokens"):
        mp.make_prompts(corpus, Bytes(), (8000,), 6, roots=[root])
    chosen = mp.make_prompts(corpus, Bytes(), (4000,), 12, roots=[root], reuse=True)
    assert len(chosen) == 12 and len({p.source for p in chosen}) == 10
    shared = [p for p in chosen if p.offset > 0]
    assert shared and all(p.offset % 4000 == 0 for p in shared)


def test_a_prompt_that_is_a_prefix_of_another_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "site"
    a, b = names(2, True)
    files = (
        source(root, names(1, False)[0], body(1, 3100), False),
        source(root, a, "header\n" * 600, True),
        source(root, b, "header\n" * 900, True),
    )
    corpus = Corpus(files)
    with pytest.raises(J0Error, match="none a prefix of another"):
        mp.make_prompts(corpus, Bytes(), (1000, 2000), 1, roots=[tmp_path / "none"])


def fake_vllm(root: Path, module: str, text: str) -> Path:
    parts = module.split(".")
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    path = folder / f"{parts[-1]}.py"
    path.write_text(text)
    return path


def test_the_seed_variant_is_imported_in_the_place_of_vllms(tmp_path: Path) -> None:
    pins = load_pins()
    article = 'SEED = "tl.randint(20261031, offsets)"\n'
    fake_vllm(tmp_path / "site", pins.speculator_module, article)
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    env: dict[str, Any] = seeds.prepare(tmp_path / "seed7", 7, pins, article)
    assert seeds.prepare(tmp_path / "none", pins.j0_seed, pins, article) == {}
    code = (
        f"import os, {pins.speculator_module} as m; "
        "print(m.SEED, os.path.basename(m.__file__), os.environ.get('CHAINED'))"
    )
    path = env["PYTHONPATH"].split(":")[0]
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={
            "PYTHONPATH": f"{path}:{tmp_path / 'site'}:{other}",
            seeds.ENV_FILE: env[seeds.ENV_FILE],
        },
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["tl.randint(7,", "offsets)", "speculator.py", "yes"]
    assert Path(env[seeds.ENV_FILE]).parent == (tmp_path / "seed7").resolve()
    assert (
        seeds.sha256_of(env) == hashlib.sha256(Path(env[seeds.ENV_FILE]).read_bytes()).hexdigest()
    )


def test_a_file_without_the_one_seed_literal_is_refused() -> None:
    with pytest.raises(J0Error, match="2 times"):
        seeds.variant_text("tl.randint(5, a) tl.randint(5, b)", 5, 6)
    with pytest.raises(J0Error, match="0 times"):
        seeds.variant_text("nothing", 5, 6)
