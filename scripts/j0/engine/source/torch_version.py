"""Which torch an installation holds, and for which CUDA: `torch.version.cuda`, read from
`torch/version.py` as text.

torch's wheels write `torch/version.py` at build time; the module `torch.version` is that file,
so its `cuda` is what `torch.version.cuda` returns (torch 2.13.0's CPU wheel, for one):

    __version__ = '2.13.0+cpu'
    cuda: Optional[str] = None
    hip: Optional[str] = None

and a CUDA 13.0 build says `cuda: Optional[str] = '13.0'`. The file is parsed with `ast` (literal
assignments only), never imported: importing torch loads its CUDA libraries, seconds of work that
the image build does not need and that can fail where no GPU is.

Self-contained on purpose (standard library, no j0 imports), like j0/engine/source/vllm_version.py:
the wheel route's engine step reads it on the base image's python3, and `python3 -c <this source>`
prints one JSON object.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

VERSION_RELPATH = "torch/version.py"


@dataclass(frozen=True)
class TorchVersion:
    """What `torch/version.py` says: `cuda` and `hip` are None for a build without them."""

    path: str
    version: str
    cuda: str | None
    hip: str | None

    def describe(self) -> str:
        stack = f"CUDA {self.cuda}" if self.cuda else (f"ROCm {self.hip}" if self.hip else "CPU")
        return f"torch {self.version or 'unknown'} ({stack}, {self.path})"


def parse_version_file(text: str, path: str = VERSION_RELPATH) -> TorchVersion:
    """`__version__`, `cuda` and `hip` from the file's text (plain or annotated assignments of
    a string or None); a file that is not Python gives empty values."""
    values: dict[str, str | None] = {}
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        return TorchVersion(path, "", None, None)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not isinstance(value, ast.Constant) or not isinstance(value.value, (str, type(None))):
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                values[target.id] = value.value
    version = values.get("__version__")
    return TorchVersion(path, version or "", values.get("cuda"), values.get("hip"))


def installed_torch() -> TorchVersion | None:
    """This Python's torch (found with find_spec, not imported); None without one."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return TorchVersion(str(path), "", None, None)
    return parse_version_file(text, str(path))


def _main() -> int:
    found = installed_torch()
    if found is None:
        print(json.dumps({"error": f"no torch package for {sys.executable}"}))
        return 2
    print(json.dumps({"path": found.path, "version": found.version, "cuda": found.cuda}))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
