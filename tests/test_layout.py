"""The package's shape, read from the source with ast: no import cycle anywhere in `j0`; one
subpackage per command, each with a docstring and a `cli.py` that only the entry point imports; a
shared floor (packages without `cli.py`) that imports no command; no call through the front door
(`j0.cli`, `importlib`) below it; at most 8 top-level modules; no unit over 200 lines and no module
over 600 (scripts and tests alike); commands that meet only at their faces (a command
imports another only through its package `__init__`); and each class name defined once."""

from __future__ import annotations

import ast
import functools
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scripts" / "j0"


# Most tests here read every module's syntax tree: the trees are made once per file's text
# (`parsed`) and the module's tests run in one worker, so that each file is parsed once per run,
# not once per test (about 7 s of CPU before, spread over the workers).
pytestmark = pytest.mark.xdist_group("layout")


@functools.cache
def _tree(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def parsed(path: Path, text: str | None = None) -> ast.Module:
    """`path`'s syntax tree, as ast.parse makes it from the file's text as it is now (a tree is
    kept by text, so a changed or planted file is parsed again)."""
    return _tree(path.read_text() if text is None else text, str(path))


# The rules below each looked at every node of every tree (ast.walk, about 8,000 nodes a file):
# the walk, not the parse, was most of this module's CPU (2.3 million nodes walked per run). Each
# tree is walked once, its nodes kept by type in ast.walk's order; a rule reads the types it asks.
@functools.cache
def _nodes_by_type(tree: ast.Module) -> dict[type, list[tuple[int, ast.AST]]]:
    by_type: dict[type, list[tuple[int, ast.AST]]] = {}
    for index, node in enumerate(ast.walk(tree)):
        by_type.setdefault(type(node), []).append((index, node))
    return by_type


@pytest.fixture(autouse=True, scope="module")
def _trees_freed_after_the_module() -> Iterator[None]:
    """The trees (about two million objects) are let go when the module's tests end: kept, each
    of the worker's later full collections walked them all (pytest's two at the session's end
    took 1.5 s each here)."""
    yield
    _nodes_by_type.cache_clear()
    _tree.cache_clear()


def nodes(path: Path, *types: type, text: str | None = None) -> list[Any]:
    """The nodes of `path`'s tree that are instances of `types`, in ast.walk's order."""
    by_type = _nodes_by_type(parsed(path, text))
    found = [pair for kind, pairs in by_type.items() if issubclass(kind, types) for pair in pairs]
    return [node for _, node in sorted(found, key=lambda pair: pair[0])]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`path`'s dotted name in `package` (scripts/j0, or a test's own package named j0)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The j0 modules that `path` imports (at any depth: imports inside functions count too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes(path, ast.Import, ast.ImportFrom):
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


def top_packages() -> list[Path]:
    return sorted(p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def command_packages() -> list[Path]:
    """The rooms: a package with a `cli.py` is a command (its handlers live in the package)."""
    return [p for p in top_packages() if (p / "cli.py").is_file()]


def shared_packages() -> list[Path]:
    """The floor below the commands: what several commands share, named for what it holds."""
    return [p for p in top_packages() if not (p / "cli.py").is_file()]


def test_every_run_function_takes_its_options() -> None:
    """One role, one name: in every command's run.py (and its subcommands'), each `run_<verb>`
    takes the command's options as one typed value (`...Options`), never the parser's
    namespace or loose arguments, and returns the command's outcome as a type of its own
    (what the command prints and its --json are made from), never a bare exit code or dict."""
    found = []
    for command in command_packages():
        for run in sorted(command.rglob("run.py")):
            if "__pycache__" in run.parts:
                continue
            tree = parsed(run)
            functions = [
                node
                for node in tree.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.startswith("run_")
            ]
            assert functions, f"{run}: no run_<verb> function"
            for node in functions:
                first = node.args.args[0] if node.args.args else None
                annotation = ast.unparse(first.annotation) if first and first.annotation else ""
                if not annotation.endswith("Options"):
                    found.append(f"{run.relative_to(ROOT)}: {node.name}({annotation or '?'})")
                returns = ast.unparse(node.returns) if node.returns else ""
                if returns in ("", "int", "None", "bool", "dict", "Any") or "dict[" in returns:
                    found.append(f"{run.relative_to(ROOT)}: {node.name} -> {returns or '?'}")
    assert found == []


def test_every_folder_of_modules_is_a_package() -> None:
    """A folder of modules without `__init__.py` (a namespace package) would be left out of
    every rule here, which walk the packages."""
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert {f for f in folders if not (f / "__init__.py").is_file()} == set()


def test_every_package_has_a_two_line_docstring() -> None:
    for package in top_packages():
        for init in sorted(package.rglob("__init__.py")):
            doc = ast.get_docstring(parsed(init))
            assert doc and len(doc.splitlines()) >= 2, f"{init}: no two-line docstring"


def test_every_command_package_has_a_cli_the_entry_point_registers() -> None:
    from j0.cli import COMMAND_MODULES

    packages = command_packages()
    assert {p.name for p in packages} >= {"overlay", "selfcheck", "image", "drafter", "serve"}
    for package in packages:
        assert f"j0.{package.name}.cli" in COMMAND_MODULES, package.name
    assert len(COMMAND_MODULES) == len(packages), COMMAND_MODULES


def test_every_command_does_its_work_in_a_run_module() -> None:
    """One role, one name: cli.py parses; run.py (the command's, or each subcommand's folder's)
    holds the run functions. (The last command without one, dumps, gained dumps/run.py for show,
    audit and compare; check and replay have theirs in their folders.)"""
    for package in command_packages():
        has_run = (package / "run.py").is_file() or any(
            (sub / "run.py").is_file() for sub in package.iterdir() if sub.is_dir()
        )
        assert has_run, f"{package.name}: no run.py"


def test_the_shared_floor_imports_no_command() -> None:
    """A shared package (no cli.py) is below every command: it never imports one."""
    graph = import_graph()
    commands = {f"j0.{p.name}" for p in command_packages()}
    floors = {f"j0.{p.name}" for p in shared_packages()}
    assert floors >= {"j0.engine", "j0.article", "j0.reference"}, floors
    wrong = [
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if any(module == f or module.startswith(f + ".") for f in floors)
        for dep in deps
        if any(dep == c or dep.startswith(c + ".") for c in commands)
    ]
    assert not wrong, wrong


def test_at_most_eight_modules_at_the_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


# The roof: the entry point (and `python -m j0`). Nothing below it reaches a command through it.
ROOF = {"j0.cli", "j0.__main__"}
# Modules that import a computed name, and why: optional third-party packages (errors.require);
# vLLM's package above the speculator file under test (selfcheck.kernels). A constant "j0..."
# name is refused everywhere below the roof.
IMPORTS_BY_NAME = {"j0.errors", "j0.selfcheck.kernels", "j0.selfcheck.zygote"}


def front_door_uses(path: Path, package: Path = PACKAGE) -> list[str]:
    """Ways `path` reaches another command through the front door rather than its functions:
    importing `j0.cli` or any command's `cli` module from outside that command, or importing
    modules by name (`importlib.import_module`, `__import__`)."""
    name = module_name(path, package)
    own = ".".join(name.split(".")[:2])
    found: list[str] = []
    for node in nodes(path, ast.Import, ast.ImportFrom, ast.Call):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for target in targets:
            is_cli = target == "j0.cli" or (target.endswith(".cli") and target.startswith("j0."))
            if is_cli and not target.startswith(own + "."):
                found.append(f"{name}:{node.lineno}: imports {target}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called not in ("import_module", "__import__") or not node.args:
                continue
            arg = node.args[0]
            constant = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            if (constant and arg.value.startswith("j0")) or (
                not constant and name not in IMPORTS_BY_NAME
            ):
                found.append(f"{name}:{node.lineno}: {called}(...)")
    return found


# The finders' own tests plant their modules in a package of the test's own (tmp_path/j0, named
# as the real one), never in scripts/j0: other pytest-xdist workers scan and copy the real package
# while they run (test_output_sink.py's planted module failed them so, fast-subset runs of
# 2026-12-07), and tests/conftest.py's guard fails a run in which a file came or went there.


def planted_module(package: Path, relative: str, text: str) -> Path:
    path = package / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_front_door_finder_finds_planted_uses(tmp_path: Path) -> None:
    package = tmp_path / "j0"
    planted = planted_module(
        package,
        "bench/_planted_front_door.py",
        "import importlib\nfrom j0.cli import main\nfrom j0.dumps.cli import register\n"
        "def f(name):\n    importlib.import_module('j0.dumps.check.run')\n"
        "    importlib.import_module(name)\n    importlib.import_module('numpy')\n",
    )
    found = front_door_uses(planted, package)
    assert len(found) == 4, found  # the numpy import is not one
    assert front_door_uses(PACKAGE / "dumps" / "check" / "run.py") == []


def test_no_call_through_the_front_door_below_the_roof() -> None:
    uses = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts and module_name(path) not in ROOF
        for use in front_door_uses(path)
    ]
    assert not uses, uses


def front_door_processes(path: Path, package: Path = PACKAGE) -> list[str]:
    """Where a module starts the `j0` command in a process of its own: a list or tuple holding
    "-m" then "j0" (`python -m j0 COMMAND ...`); `-m j0.some.module` is not one."""
    found = []
    for node in nodes(path, ast.List, ast.Tuple):
        if not isinstance(node, ast.List | ast.Tuple):
            continue
        words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
        if any(a == "-m" and b == "j0" for a, b in itertools.pairwise(words)):
            found.append(f"{module_name(path, package)}:{node.lineno}: runs `python -m j0`")
    return found


def test_front_door_process_finder_finds_a_planted_one(tmp_path: Path) -> None:
    package = tmp_path / "j0"
    planted = planted_module(
        package,
        "_planted_process.py",
        "import sys\nA = [sys.executable, '-m', 'j0', 'image', 'identity']\n"
        "B = (sys.executable, '-m', 'j0.engine.server.speculator_identity')\n",
    )
    found = front_door_processes(planted, package)
    assert found == ["j0._planted_process:2: runs `python -m j0`"]


def test_no_module_below_the_roof_runs_the_front_door() -> None:
    """A floor or a command that needs another's work calls its face or a floor module, never
    the `j0` command in a child process (issue 56: the local launcher ran `j0 image identity`)."""
    uses = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts and module_name(path) not in ROOF
        for use in front_door_processes(path)
    ]
    assert not uses, uses


# `vllm serve`'s options that j0 writes into a server's command line (issue 56 item 2): a list
# that holds one is a command line being written, which only the server setting does
# (compose.serve.yaml is the other place; tests/compose/test_compose_render.py holds them equal).
VLLM_SERVE_FLAGS = {
    "--speculative-config",
    "--max-num-seqs",
    "--max-model-len",
    "--kv-cache-dtype",
    "--gpu-memory-utilization",
    "--per-request-spec-decode-metrics",
    "--enable-prompt-tokens-details",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--max-num-batched-tokens",
    "--kv-cache-memory-bytes",
    "--num-gpu-blocks-override",
    "--enforce-eager",
}
VLLM_ARGV_WRITERS = {
    "j0.article.server_setting": "ServerSetting.args(): the one writer",
    # `j0 image smoke` checks that the image's entrypoint passes words through to a stand-in
    # `vllm serve` unchanged; no server runs them.
    "j0.image.smoke": "the entrypoint's pass-through check",
}


def vllm_argv_lists(path: Path, package: Path = PACKAGE) -> list[str]:
    """Where a module writes a list holding one of `vllm serve`'s options (VLLM_SERVE_FLAGS)."""
    found = []
    for node in nodes(path, ast.List):
        if isinstance(node, ast.List):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant)}
            if flags := sorted(words & VLLM_SERVE_FLAGS):
                found.append(f"{module_name(path, package)}:{node.lineno}: a list of {flags}")
    return found


def test_the_vllm_argv_finder_finds_a_planted_list(tmp_path: Path) -> None:
    package = tmp_path / "j0"
    planted = planted_module(
        package,
        "_planted_argv.py",
        "A = ['m', '--max-num-seqs', '4']\nB = ('--max-num-seqs', 4)\nC = ['--max-num-seqs=4']\n",
    )
    found = vllm_argv_lists(planted, package)
    assert found == ["j0._planted_argv:1: a list of ['--max-num-seqs']"]


def test_vllm_argv_is_written_only_by_the_server_setting() -> None:
    uses = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts and module_name(path) not in VLLM_ARGV_WRITERS
        for use in vllm_argv_lists(path)
    ]
    assert not uses, uses


MAX_UNIT_LINES = 200
MAX_MODULE_LINES = 600


def oversized(path: Path, root: Path = ROOT) -> list[str]:
    """What in `path`, a file of the checkout at `root`, is over its size."""
    text = path.read_text()
    found = []
    if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{path.relative_to(root)}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in nodes(path, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, text=text):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_UNIT_LINES:
                found.append(
                    f"{path.relative_to(root)}:{node.lineno}: {node.name} is {length} lines"
                    f" (at most {MAX_UNIT_LINES})"
                )
    return found


def test_size_finder_finds_a_planted_long_function(tmp_path: Path) -> None:
    """Planted in a tests/ folder of the test's own (tmp_path/tests), not the checkout's."""
    planted = planted_module(
        tmp_path, "tests/_planted_long.py", "def f():\n" + "    x = 1\n" * MAX_UNIT_LINES
    )
    assert oversized(planted, tmp_path) == [
        f"tests/_planted_long.py:1: f is {MAX_UNIT_LINES + 1} lines (at most {MAX_UNIT_LINES})"
    ]


def test_no_unit_over_200_lines_and_no_module_over_600() -> None:
    found = [
        problem
        for top in (PACKAGE, ROOT / "tests")
        for path in sorted(top.rglob("*.py"))
        if "__pycache__" not in path.parts
        for problem in oversized(path)
    ]
    assert not found, "\n".join(found)


def test_help_imports_nothing_heavy() -> None:
    """`j0 --help` in a fresh interpreter loads none of the heavy libraries (what keeps it quick;
    its time is measured by scripts/bench_overheads.py, quoted in docs/bench.md, not asserted)."""
    code = (
        "import sys, contextlib, io\n"
        "from j0.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = {'torch', 'numpy', 'docker', 'huggingface_hub', 'matplotlib', 'triton',"
        " 'transformers', 'datasets', 'kubernetes', 'prometheus_client'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout


# Issue 32's face rule: a command imports another command only through that package's face (its
# __init__: the run function, its options and outcome, the document types it owns); what two
# commands share lives on a floor below both.


def into_other_commands_internals() -> set[str]:
    """'j0.A -> j0.B.module' for every import of a module inside command B from command A."""
    commands = {p.name for p in command_packages()}
    found: set[str] = set()
    for module, deps in import_graph().items():
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in commands:
            continue
        for dep in deps:
            target = dep.split(".")
            if len(target) > 2 and target[1] in commands and target[1] != parts[1]:
                found.add(f"j0.{parts[1]} -> {dep}")
    return found


def test_the_face_finder_finds_a_planted_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The finder names a planted import of another command's module, and not the import through
    that command's face. (Before issue 32's move the rule found 28 such imports in j0.)"""
    graph = {
        "j0.mini.run.run": {"j0.bench", "j0.bench.result.results"},
        "j0.bench.result.results": set(),
    }
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda: graph)
    assert into_other_commands_internals() == {"j0.mini -> j0.bench.result.results"}


def test_commands_meet_only_at_their_faces() -> None:
    found = sorted(into_other_commands_internals())
    assert not found, f"a command imports another's internals (use its face or a floor): {found}"


def unnamed_modules(tree_text: str, package: Path) -> list[str]:
    """The modules under `package` whose name is not a word of `tree_text`."""
    import re

    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", tree_text))
    return [
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if "__pycache__" not in p.parts
        and p.name not in ("__init__.py", "__main__.py")
        and p.stem not in words
    ]


def test_the_unnamed_module_finder_finds_a_planted_module(tmp_path: Path) -> None:
    (tmp_path / "floor").mkdir()
    (tmp_path / "floor" / "__init__.py").write_text("")
    (tmp_path / "floor" / "named.py").write_text("")
    (tmp_path / "floor" / "planted_here.py").write_text("")
    assert unnamed_modules("floor/  named (what it does)", tmp_path) == ["floor/planted_here.py"]


def test_the_architecture_tree_names_every_module() -> None:
    """Docs that follow the code: docs/architecture.md's package tree (its fenced block) names
    every module of scripts/j0, so a module added without a word there fails here."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    tree = text.split("```")[1]
    assert unnamed_modules(tree, PACKAGE) == []


def test_every_face_name_resolves() -> None:
    """A package's face (its FACE or __all__, resolved on first use) names only what it can
    give: a name left behind by a move (a module that went down a floor) fails here, not in the
    command that first asks for it."""
    import importlib

    found = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if "__pycache__" in init.parts:
            continue
        dotted = ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        tree = parsed(init)
        names: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in ("FACE", "__all__") for t in node.targets
            ):
                names += list(ast.literal_eval(node.value))
        module = importlib.import_module(dotted) if names else None
        found += [f"{dotted}.{n}" for n in names if not hasattr(module, n)]
    assert found == []


def duplicate_class_names(paths: list[Path], package: Path = PACKAGE) -> dict[str, list[str]]:
    """Each class name defined in more than one of `paths`, with the modules that define it."""
    defined: dict[str, list[str]] = {}
    for path in paths:
        for node in nodes(path, ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(module_name(path, package))
    return {name: where for name, where in defined.items() if len(where) > 1}


def test_the_duplicate_class_finder_finds_a_planted_pair(tmp_path: Path) -> None:
    package = tmp_path / "j0"
    planted = [
        planted_module(package, "_planted_a.py", "class Plan:\n    pass\nclass Alone:\n    pass\n"),
        planted_module(package, "_planted_b.py", "def f():\n    class Plan:\n        pass\n"),
    ]
    found = duplicate_class_names(planted, package)
    assert found == {"Plan": ["j0._planted_a", "j0._planted_b"]}


def test_one_meaning_per_class_name() -> None:
    """A class name is defined once in j0 (issue 56: `Plan`, `Server`, `Setting`, `Step` and ten
    more each named two different things), so a name read anywhere means one type."""
    paths = [p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts]
    assert duplicate_class_names(paths) == {}
