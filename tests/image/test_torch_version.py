"""j0.engine.source.torch_version: torch.version.cuda read from torch/version.py as text, the way
the wheel route's engine step reads the base image's torch (never importing it).

Checked against torch itself: the test environment's installed torch (its module `torch.version`,
executed here), and the file of a CUDA 13.0 build recorded on an H200 (torch 2.11.0+cu130, whose
`torch.version.cuda` said '13.0' there).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from j0.engine.source.torch_version import TorchVersion, installed_torch, parse_version_file
from j0.engine.source.wheel_index import variant_of_cuda

ROOT = Path(__file__).resolve().parents[2]
# /opt/torch/.venv/lib/python3.12/site-packages/torch/version.py on the H200 (2026-12-02), as
# `print(path.read_text())` showed it; `torch.version.cuda` there: '13.0', `hip`: None.
H200_TORCH_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.11.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""


def test_a_cuda_13_builds_file_gives_cu130() -> None:
    found = parse_version_file(H200_TORCH_VERSION_PY, "torch/version.py")
    assert found == TorchVersion("torch/version.py", "2.11.0+cu130", "13.0", None)
    assert variant_of_cuda(found.cuda) == "cu130"
    assert found.describe() == "torch 2.11.0+cu130 (CUDA 13.0, torch/version.py)"


def test_the_installed_torch_agrees_with_torch_version_cuda() -> None:
    """The test environment's torch: the values read equal those of the module `torch.version`
    (that file, executed as Python: what `torch.version.cuda` returns, without the half minute
    that importing all of torch takes on a busy machine)."""
    found = installed_torch()
    if found is None:
        pytest.skip("no torch in the test environment")
    spec = importlib.util.spec_from_file_location("torch_version_module", found.path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (found.version, found.cuda, found.hip) == (module.__version__, module.cuda, module.hip)
    assert found.version  # the test environment's torch 2.13.0+cpu: cuda None, read as such


def test_the_module_runs_alone_on_a_python_and_prints_one_json_line() -> None:
    """As `python3 -c <source>` on a base image's python3: standard library, no j0 imports."""
    source = (ROOT / "scripts" / "j0" / "engine" / "source" / "torch_version.py").read_text()
    done = subprocess.run(
        [sys.executable, "-I", "-c", source], capture_output=True, text=True, check=False
    )
    found = installed_torch()
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if found is None:
        assert done.returncode == 2 and "error" in answer
    else:
        assert done.returncode == 0, done.stderr
        assert answer == {"path": found.path, "version": found.version, "cuda": found.cuda}


@pytest.mark.parametrize(
    "text",
    [
        "not python (",
        "cuda = compute()\n__version__ = '2.14.0'\n",  # not a literal: nothing read
    ],
)
def test_what_is_not_a_literal_is_not_read(text: str) -> None:
    found = parse_version_file(text)
    assert found.cuda is None and found.hip is None
