"""tests/content_cache.py's j0_code: the j0 files a cached folder's making can read, which key the
smoke miniature (tests/mini/conftest.py) and the dump sets (tests/dumps/dumpsets.py). Too few
files would keep a folder made by older code; the lists here are written by hand from the
sources, and a fresh process that imports every module found loads no j0 module outside them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import content_cache
from content_cache import J0, j0_code

ROOT = Path(__file__).resolve().parents[1]


def names(files: list[Path]) -> set[str]:
    return {str(path.relative_to(J0)) for path in files}


def test_imports_at_any_depth_faces_and_module_names_are_followed(tmp_path: Path) -> None:
    start = tmp_path / "start.py"
    start.write_text(
        "import sys\n"
        "def f():\n"
        "    from j0.measure import stats  # inside a function\n"
        "    return [sys.executable, '-m', 'j0.selfcheck', 'x']  # a module run by name\n"
        "def g():\n"
        "    return ['python', '-m', 'j0', 'status']  # the entry point\n"
    )
    found = names(j0_code(start))
    assert {"measure/__init__.py", "measure/stats.py", "selfcheck/__main__.py"} <= found
    assert {"__init__.py", "__main__.py", "cli.py", "selfcheck/__init__.py"} <= found
    # the entry point registers every command: their modules come with it
    assert {"status/cli.py", "mini/cli.py"} <= found
    start.write_text("from j0.measure import stats\nprint('j0 status', 'j0')\n")
    assert "cli.py" not in names(j0_code(start))  # the words j0 and j0 status are no module


def test_a_relative_import_and_a_packages_face(tmp_path: Path) -> None:
    """j0.bench's face imports its commands' modules inside __getattr__: they count."""
    found = names(j0_code(J0 / "bench" / "__init__.py"))
    assert {"bench/run/__init__.py", "bench/report/__init__.py", "bench/result/results.py"} <= found
    relative = [p for p in J0.rglob("*.py") if "from ." in p.read_text()]
    for path in relative[:5]:
        assert path in j0_code(path)


def test_the_smoke_trainings_code_is_mini_and_what_it_imports_only() -> None:
    found = names(j0_code(J0 / "mini" / "train" / "run.py"))
    assert {"mini/train/run.py", "mini/train/drafter.py", "errors.py", "mini/__init__.py"} <= found
    assert not {"cli.py", "serve/vllm_args.py", "bench/run/run.py"} & found
    assert content_cache.J0 == ROOT / "scripts" / "j0"


def test_a_fresh_process_loads_no_j0_module_outside_the_list() -> None:
    """Importing every module of each list in a process of its own loads no other j0 file."""
    for start in (J0 / "mini" / "train" / "run.py", ROOT / "tests" / "dumps" / "simulate.py"):
        files = j0_code(start)
        modules = [
            ".".join(p.relative_to(J0.parent).with_suffix("").parts).removesuffix(".__init__")
            for p in files
            if p.name != "__main__.py"
        ]
        code = (
            "import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "print('\\n'.join(m.__file__ for n, m in list(sys.modules.items())"
            " if (n == 'j0' or n.startswith('j0.')) and getattr(m, '__file__', None)))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONPATH": str(ROOT / "scripts"), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        loaded = {Path(line).resolve() for line in done.stdout.split()}
        assert loaded <= set(files), sorted(str(p) for p in loaded - set(files))
