"""The package's shape: one subpackage per command, each with a docstring and a `cli.py` that the
entry point registers, and no import cycle anywhere in `j0` (read from the source with ast)."""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scripts" / "j0"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The j0 modules that `path` imports (at any depth: imports inside functions count too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    # A module importing its own package's __init__ (or a child) is not a cycle of interest.
    return {m for m in found if m in modules and m != name and not m.startswith(name + ".")}


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_j0() -> None:
    graph = import_graph()
    assert "j0.selfcheck.timing" in graph and "j0.cli" in graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def command_packages() -> list[Path]:
    return sorted(p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def test_every_command_package_has_a_docstring_and_a_cli_the_entry_point_registers() -> None:
    from j0.cli import COMMAND_MODULES

    packages = command_packages()
    assert {p.name for p in packages} >= {"overlay", "selfcheck", "image", "drafter", "serve"}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc and len(doc.splitlines()) >= 2, f"{package}/__init__.py: no two-line docstring"
        assert (package / "cli.py").is_file(), f"{package}: no cli.py"
        assert f"j0.{package.name}.cli" in COMMAND_MODULES, package.name


def test_help_is_fast_and_imports_nothing_heavy() -> None:
    """`j0 --help` in a fresh interpreter: under 1.5 s, and none of the heavy libraries loaded."""
    code = (
        "import sys, contextlib, io\n"
        "from j0.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = {'torch', 'numpy', 'docker', 'huggingface_hub', 'matplotlib', 'triton',"
        " 'transformers', 'datasets', 'kubernetes', 'prometheus_client'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    took = time.monotonic() - started
    assert out.stdout.strip() == "[]", out.stdout
    assert took < 1.5, f"j0 --help took {took:.2f} s"
