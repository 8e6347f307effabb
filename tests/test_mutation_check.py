"""scripts/mutation-check and its list of guards: every guard's text is in its file exactly once,
its tests exist, docs/ci.md's table is the list, a guard's text that is missing stops the check,
and (slow) a real run kills a real guard and reports a replacement that disables nothing as a
survivor.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "mutation-check"


def harness() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("mutation_check", str(SCRIPT))
    spec = importlib.util.spec_from_loader("mutation_check", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_check"] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


def test_every_guard_text_is_in_its_file_exactly_once() -> None:
    check = harness()
    guards = check.load_guards()
    assert len(guards) >= 25
    for guard in guards:
        text = (ROOT / guard.file).read_text(encoding="utf-8")
        assert text.count(guard.find) == 1, (guard.name, guard.find)
        assert guard.find != guard.replace, guard.name
        for test in guard.tests:
            assert (ROOT / test).is_file(), (guard.name, test)


def test_docs_ci_lists_the_guards() -> None:
    check = harness()
    table = check.table(check.load_guards())
    assert table in (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def test_a_guard_text_not_found_once_stops_the_check(tmp_path: Path) -> None:
    check = harness()
    (tmp_path / "f.py").write_text("x = 1\nx = 1\n")
    for find in ("y = 2\n", "x = 1\n"):
        guard = check.Guard("g", "f.py", find, "pass\n", ("tests/x.py",))
        with pytest.raises(check.CheckError, match="expected once"):
            check.mutate(tmp_path, guard)
    assert (tmp_path / "f.py").read_text() == "x = 1\nx = 1\n"


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--python", sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.mark.slow
def test_a_real_guard_is_killed_and_a_no_op_survives(tmp_path: Path) -> None:
    result = run_check("--guard", "pins: key set twice")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pins: key set twice" in result.stdout and "killed by tests/test_pins.py::" in (
        result.stdout
    )
    assert "1 guards, 1 killed, 0 survived" in result.stdout
    # A "guard" whose replacement changes nothing the tests can see: it must survive.
    no_op = tmp_path / "guards.toml"
    no_op.write_text(
        "[[guard]]\n"
        'name = "a comment"\n'
        'file = "scripts/j0/pins.py"\n'
        'find = "# Every KEY=VALUE of the file as written"\n'
        'replace = "# every KEY=VALUE of the file as written"\n'
        'tests = ["tests/test_pins.py"]\n'
    )
    result = run_check("--guards", str(no_op), "--no-baseline")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "a comment" in result.stdout and "SURVIVED" in result.stdout
    assert "survived: a comment" in result.stderr
