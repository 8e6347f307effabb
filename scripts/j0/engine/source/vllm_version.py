"""Which vLLM an installation is: its version and git commit, read from `vllm/_version.py` as text.

vLLM's wheels and images carry `vllm/_version.py`, written by setuptools-scm / vcs-versioning at
build time, with lines such as (vLLM 0.33.0's wheel):

    __version__ = version = '0.33.0'
    __commit_id__ = commit_id = 'g4ba787ec9'

The commit is git-describe style: a `g` and the abbreviated hash. The file is parsed with `ast`
(literal assignments only), never imported: importing vLLM starts torch and more.

Self-contained on purpose (standard library, no j0 imports): `j0 image build` runs this very file
with the base image's python3 (`python3 -c <this source>`) to read the commit before the build,
and prints one JSON object then.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

VERSION_RELPATH = "vllm/_version.py"
_HEX = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class VllmVersion:
    """What `vllm/_version.py` says; empty strings where it says nothing."""

    path: str
    version: str
    commit: str  # abbreviated or full hex, the `g` of git-describe removed

    def matches(self, pinned_commit: str) -> bool:
        """Whether this is the pinned commit (one is a prefix of the other, 7 hex at least)."""
        if not self.commit or not pinned_commit:
            return False
        short, long = sorted((self.commit.lower(), pinned_commit.lower()), key=len)
        return len(short) >= 7 and long.startswith(short)

    def describe(self) -> str:
        return f"vLLM {self.version or 'unknown'} commit {self.commit or 'unknown'}"


def _commit(raw: str) -> str:
    """`g4ba787ec9` -> `4ba787ec9`; a hex string as it is; anything else -> ""."""
    text = raw.strip().lower()
    for candidate in (text, text[1:] if text.startswith("g") else ""):
        if _HEX.fullmatch(candidate):
            return candidate
    return ""


def parse_version_file(text: str, path: str = VERSION_RELPATH) -> VllmVersion:
    """Read `__version__`/`version` and `__commit_id__`/`commit_id` from the file's text."""
    values: dict[str, str] = {}
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        return VllmVersion(path, "", "")
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Constant):
            continue
        if not isinstance(node.value.value, str):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                values[target.id] = node.value.value
    version = values.get("__version__") or values.get("version") or ""
    commit = _commit(values.get("__commit_id__") or values.get("commit_id") or "")
    return VllmVersion(path, version, commit)


def read_version(site_dir: Path) -> VllmVersion:
    """The version of the vllm package under `site_dir` (the directory holding `vllm/`)."""
    path = site_dir / VERSION_RELPATH
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return VllmVersion(str(path), "", "")
    return parse_version_file(text, str(path))


def installed_version() -> VllmVersion | None:
    """The version of this Python's vLLM (found with find_spec, not imported); None if absent."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return read_version(Path(next(iter(spec.submodule_search_locations))).parent)


def _main() -> int:
    found = installed_version()
    if found is None:
        print(json.dumps({"error": f"no vllm package for {sys.executable}"}))
        return 2
    print(json.dumps({"path": found.path, "version": found.version, "commit": found.commit}))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
