"""corpus.json (j0.mini.train.corpus): a corpus written reads back the same, and a file entry of
other kinds is refused naming the file, the entry, the key and the value (never a TypeError from
unpacking it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.mini.train import corpus as corpus_mod


def _corpus(tmp_path: Path) -> corpus_mod.Corpus:
    files = []
    for name, held in (("a.py", False), ("b.py", True)):
        data = f"# {name}\n".encode()
        (tmp_path / name).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        files.append(corpus_mod.SourceFile(str(tmp_path), name, len(data), digest, held))
    return corpus_mod.Corpus(tuple(files))


def test_a_written_corpus_reads_back_the_same(tmp_path: Path) -> None:
    made = _corpus(tmp_path)
    corpus_mod.write(made, tmp_path / "corpus.json")
    assert corpus_mod.read(tmp_path / "corpus.json") == made
    written = json.loads((tmp_path / "corpus.json").read_text())
    assert written["files"][1] == {
        "root": str(tmp_path),
        "relative": "b.py",
        "size": 7,
        "sha256": hashlib.sha256(b"# b.py\n").hexdigest(),
        "heldout": True,
    }


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["files"][0].pop("sha256"), "files[0]: no 'sha256' (expected a string)"),
        (lambda d: d["files"][1].update(size="7"), "files[1]: 'size' is \"7\", expected a whole"),
        (lambda d: d["files"].append([]), "files[2]: [], expected an object"),
        (lambda d: d.pop("files"), "no 'files' list"),
    ],
)
def test_a_corpus_of_other_kinds_is_refused_naming_where(tmp_path: Path, edit, said: str) -> None:
    path = tmp_path / "corpus.json"
    corpus_mod.write(_corpus(tmp_path), path)
    value = json.loads(path.read_text())
    edit(value)
    path.write_text(json.dumps(value))
    with pytest.raises(J0Error) as caught:
        corpus_mod.read(path)
    assert said in str(caught.value) and str(path) in str(caught.value)


def test_the_candidates_come_in_the_order_of_their_sorted_paths(tmp_path: Path) -> None:
    """candidates() walks lazily (collect stops once it has enough); the files and their order are
    what sorting every `rglob("*.py")` path relative to its root gives, as before: `a-b/` sorts
    before `a/` ('-' < '/'), a folder named `c.py` before its own files, links to folders not
    followed, a file linked from two places taken once, sizes outside the bounds left out."""
    root = tmp_path / "root"
    body = b"#" * corpus_mod.MIN_FILE_BYTES
    names = [
        "a.py", "a-b/x.py", "a/x.py", "a/y.py", "a/b/z.py", "a0.py", ".hidden/h.py", "A.py",
        "c.py/inner.py", "c.py-d/e.py", "d/not-python.txt", "e/deep/er/f.py",
    ]  # fmt: skip
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(body)
    (root / "small.py").write_bytes(b"#")
    (root / "big.py").write_bytes(b"#" * (corpus_mod.MAX_FILE_BYTES + 1))
    (root / "linked").symlink_to(root / "a", target_is_directory=True)
    (root / "same.py").symlink_to(root / "a0.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_bytes(body)
    roots = [root, outside, root / "e"]
    reference = []
    seen: set[Path] = set()
    for top in roots:
        for path in sorted(top.rglob("*.py"), key=lambda p: p.relative_to(top).as_posix()):
            size = path.stat().st_size
            if path.resolve() not in seen:  # the rule before, whatever the path is
                if corpus_mod.MIN_FILE_BYTES <= size <= corpus_mod.MAX_FILE_BYTES:
                    seen.add(path.resolve())
                    reference.append((top, path.relative_to(top).as_posix()))
    got = [(top, relative) for top, relative in corpus_mod.candidates(roots)]
    assert got == reference
    assert [r for t, r in got if t == root][:4] == [".hidden/h.py", "A.py", "a-b/x.py", "a.py"]
    assert (root, "linked/x.py") not in got and (root / "e", "deep/er/f.py") not in got
