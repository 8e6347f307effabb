"""The corpus: Python source files of this machine (the standard library and site-packages),
3 kB-300 kB each, in sorted order, up to a size cap; one file in 50 held out by a fixed rule (the
sha256 of its path relative to its root), so the same machine gives the same split.

Standard library only. corpus.json lists every file with its root, relative path, size, sha256
and split."""

from __future__ import annotations

import hashlib
import os
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from j0.edge.document import Document
from j0.edge.fields import read_document, write_document
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.sizes import HELDOUT_ONE_IN, MAX_FILE_BYTES, MIN_FILE_BYTES


@dataclass(frozen=True)
class SourceFile(Document):
    """One of corpus.json's files (a typed document: every key needed)."""

    root: str
    relative: str
    size: int
    sha256: str
    heldout: bool

    @property
    def path(self) -> Path:
        return Path(self.root) / self.relative


@dataclass(frozen=True)
class Corpus:
    files: tuple[SourceFile, ...]

    @property
    def train(self) -> list[SourceFile]:
        return [f for f in self.files if not f.heldout]

    @property
    def heldout(self) -> list[SourceFile]:
        return [f for f in self.files if f.heldout]

    def texts(self, heldout: bool) -> list[str]:
        chosen = self.heldout if heldout else self.train
        return [f.path.read_text(encoding="utf-8", errors="replace") for f in chosen]

    def to_json(self) -> dict[str, object]:
        return {
            "rule": f"held out: int(sha256(relative path), 16) % {HELDOUT_ONE_IN} == 0",
            "file_bytes": [MIN_FILE_BYTES, MAX_FILE_BYTES],
            "train_files": len(self.train),
            "heldout_files": len(self.heldout),
            "train_bytes": sum(f.size for f in self.train),
            "heldout_bytes": sum(f.size for f in self.heldout),
            "files": [f.to_json() for f in self.files],
        }


def is_heldout(relative: str) -> bool:
    return int(hashlib.sha256(relative.encode("utf-8")).hexdigest(), 16) % HELDOUT_ONE_IN == 0


def default_roots() -> list[Path]:
    """The standard library, then site-packages (purelib and platlib, once each)."""
    seen: list[Path] = []
    for key in ("stdlib", "purelib", "platlib"):
        path = Path(sysconfig.get_paths()[key]).resolve()
        if path.is_dir() and path not in seen:
            seen.append(path)
    return seen


def candidates(roots: list[Path]) -> Iterator[tuple[Path, str]]:
    """(root, relative path) of every .py file of the right size, in order of root then path (as
    the relative paths sort as text), found as they are needed (collect stops once it has
    enough: a walk of the whole of site-packages took seconds); a file under two roots
    (site-packages inside the standard library's tree) is taken once."""
    taken: set[str] = set()
    for root in roots:
        top, real_top = str(root), str(root.resolve())
        for relative, linked in _python_files(root, ""):
            path = os.path.join(top, relative)
            try:
                # the folders walked are no links: only a linked file's own path resolves apart
                real = os.path.realpath(path) if linked else os.path.join(real_top, relative)
                size = os.stat(path).st_size
            except OSError:
                continue
            if real in taken or not (MIN_FILE_BYTES <= size <= MAX_FILE_BYTES):
                continue
            taken.add(real)
            yield root, relative


def _python_files(folder: Path, prefix: str) -> Iterator[tuple[str, bool]]:
    """What `folder.rglob("*.py")` finds (symbolic links to folders not followed, unreadable
    folders skipped), as (`prefix` + the path relative to `folder`, whether it is a symbolic
    link), in the order of those paths sorted as text: a folder's entries sorted by name, a
    folder's as NAME/ (so `a/x.py` comes after `a-b/x.py` and `a.py`, as its path does)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    keyed: list[tuple[str, bool, bool, str]] = []  # (key, a folder to walk, a link, name)
    for entry in entries:
        try:
            linked = entry.is_symlink()
            inside = entry.is_dir() and not linked
        except OSError:
            linked = inside = False
        if entry.name.endswith(".py"):
            keyed.append((entry.name, False, linked, entry.name))
        if inside:
            keyed.append((entry.name + "/", True, False, entry.name))
    for _, inside, linked, name in sorted(keyed, key=lambda k: k[0]):
        if inside:
            yield from _python_files(folder / name, f"{prefix}{name}/")
        else:
            yield prefix + name, linked


def collect(roots: list[Path], cap_bytes: int, min_heldout: int) -> Corpus:
    """Files in sorted order until the training files pass cap_bytes and min_heldout files are
    held out (whichever comes later)."""
    files: list[SourceFile] = []
    train_bytes = 0
    heldout = 0
    for root, relative in candidates(roots):
        if train_bytes >= cap_bytes and heldout >= min_heldout:
            break
        held = is_heldout(relative)
        if not held and train_bytes >= cap_bytes:
            continue
        data = (root / relative).read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(
            SourceFile(str(root), relative, len(data), hashlib.sha256(data).hexdigest(), held)
        )
        if held:
            heldout += 1
        else:
            train_bytes += len(data)
    corpus = Corpus(tuple(files))
    if not corpus.train or not corpus.heldout:
        raise J0Error(
            f"the corpus under {', '.join(str(r) for r in roots)}: {len(corpus.train)} training "
            f"and {len(corpus.heldout)} held-out .py files of {MIN_FILE_BYTES}-{MAX_FILE_BYTES} "
            "bytes; expected at least one of each",
            INPUT_LACKS,
        )
    return corpus


def write(corpus: Corpus, path: Path) -> None:
    write_document(path, corpus.to_json())


def read(path: Path) -> Corpus:
    """corpus.json back (for `j0 mini run`'s held-out prompts); each file checked by sha256."""
    if not path.is_file():
        raise J0Error(f"{path}: no such file; expected the corpus.json of `j0 mini train`", 2)
    data = read_document(path, "the corpus.json of `j0 mini train`")
    listed = data.get("files") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        raise J0Error(f"{path}: no 'files' list; expected the corpus.json of `j0 mini train`", 2)
    files = tuple(SourceFile.from_json(f, f"{path}: files[{i}]") for i, f in enumerate(listed))
    for f in files:
        if f.heldout and (
            not f.path.is_file() or hashlib.sha256(f.path.read_bytes()).hexdigest() != f.sha256
        ):
            raise J0Error(
                f"{path}: held-out file {f.path} is missing or changed (sha256 {f.sha256} "
                "expected); run `j0 mini train` again on this machine",
                INPUT_LACKS,
            )
    return Corpus(files)
