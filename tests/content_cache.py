"""Folders the tests make slowly and the same way each time, cached by content.

    key(files, options, packages)     a sha256 of the files' paths and bytes, `options` (JSON),
                                      the Python, and the versions of `packages`
    cached_folder(kind, key, workdir, make)
                                      workdir/<name>: a copy of $J0_CACHE/<kind>/<key> (default
                                      ~/.cache/j0), made first by `make(tmp) -> folder` where
                                      missing

Used for the dump sets that tests/dumps/simulate.py makes with the real kernels under Triton's
interpreter (tests/dumps/dumpsets.py) and the smoke miniature that tests/mini/conftest.py trains.
A key takes in every file the making reads, so any change makes the folder again; each test
session gets its own copy, so no test can alter the cache. Delete the cache freely
(scripts/clean-test-caches).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def key(files: Iterable[Path], options: object, packages: Iterable[str]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(options).encode())
    digest.update(sys.version.encode())
    for package in packages:
        try:
            digest.update(f"{package}=={version(package)}".encode())
        except PackageNotFoundError:
            digest.update(f"{package} absent".encode())
    for path in files:
        digest.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else "").encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:24]


def cache_root() -> Path:
    base = os.environ.get("J0_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "j0"
    )
    return Path(base)


def cached_folder(
    kind: str, key: str, workdir: Path, make: Callable[[Path], Path], name: str = "sets"
) -> Path:
    """workdir/name: a copy of the cached output of `make(tmp) -> folder` under this key, made
    (into a temporary folder beside the cache, then moved in place) where missing. One process
    makes it while the others wait on a lock (pytest-xdist's workers start together); a complete
    cache is never replaced, so a copy from it cannot lose files halfway. Before the lock, two
    workers both made the dump sets and the second one's replace removed the first one's cache
    while the first was copying it (12 errors in one fresh `.ci/run`)."""
    import fcntl

    cached = cache_root() / kind / key
    if not (cached / ".complete").is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        with (cached.parent / f".{cached.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (cached / ".complete").is_file():  # another process may have made it
                with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".making-") as tmp:
                    made = make(Path(tmp))
                    (made / ".complete").write_text(key + "\n")
                    shutil.rmtree(cached, ignore_errors=True)  # an incomplete leftover only
                    os.replace(made, cached)
    out = workdir / name
    shutil.copytree(cached, out, ignore=shutil.ignore_patterns(".complete"))
    return out


J0 = ROOT / "scripts" / "j0"
_J0_NAME = re.compile(r"j0(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _j0_file(name: str) -> Path | None:
    """The file of j0 module `name` (a package's __init__.py), or None where there is none."""
    base = J0.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _j0_names(path: Path, package: str) -> frozenset[str]:
    """The j0 modules `path` names (_named_in), read once per file's state."""
    stat = path.stat()
    return _named_in(path, package, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _named_in(path: Path, package: str, _mtime: int, _size: int) -> frozenset[str]:
    """Every j0 module `path` may load: its imports at any depth (inside functions too, so a
    package face's lazy imports count), relative ones resolved against `package`, `from M import
    N` as M and M.N, and every string constant that names a j0 module (`python -m j0.x` in an
    argument list, with its __main__; `"-m", "j0"` in a list as the package's __main__)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _J0_NAME.fullmatch(node.value):
                found |= {node.value, f"{node.value}.__main__"}
        elif isinstance(node, ast.List | ast.Tuple):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "-m" and b == "j0" for a, b in itertools.pairwise(words)):
                found |= {"j0", "j0.__main__"}
    return frozenset(name for name in found if name == "j0" or name.startswith("j0."))


def j0_code(*starts: Path) -> list[Path]:
    """The files of j0's code that running the files `starts` can read: the j0 modules they
    import, at any depth, with the __init__.py of every package on the way (an import runs
    them). Sound because j0 names the j0 modules it imports in its source: below the entry point
    no module imports j0 by a computed name (tests/test_layout.py), and a constant name counts
    here. A cache keyed by these files is made again when any of them changes, and only then."""
    seen: dict[Path, None] = {}
    todo = [(path.resolve(), "") for path in starts]
    while todo:
        path, package = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        for name in _j0_names(path, package):
            parts = name.split(".")
            for end in range(1, len(parts) + 1):  # the packages on the way, then the module
                module = ".".join(parts[:end])
                found = _j0_file(module)
                if found is not None and found not in seen:
                    own = module if found.name == "__init__.py" else module.rpartition(".")[0]
                    todo.append((found, own))
    return sorted(p for p in seen if p.is_relative_to(J0))
