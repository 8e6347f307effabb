"""The Docker tests share one worker when the tests run in several (scripts/test: pytest-xdist,
`--dist loadgroup`). tests/worker_plan.py marks them with `xdist_group("docker")`; pytest-xdist
reads that mark in its worker's collection hook and appends `@docker` to the test's id, and its
scheduler sends every id of one suffix to one worker. Two things have broken this silently
before, and both would only show as a slower run: the hook running after pytest-xdist's (the
marks arrive too late), and a pytest whose node ids pytest-xdist can no longer change (pytest 9.2
with pytest-xdist 3.8.0). This runs pytest itself, in two real workers, with that hook, on a suite
of its own (Docker tests in two modules among plain ones, none needing Docker), and reads where
each test ran."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = re.compile(r"^\[(gw\d+)\] .*?(PASSED|FAILED|ERROR|SKIPPED) (\S+)", re.MULTILINE)
MODULE = """import pytest

@pytest.mark.docker
@pytest.mark.parametrize("n", range(3))
def test_docker(n):
    pass

@pytest.mark.parametrize("n", range(6))
def test_plain(n):
    pass
"""


def test_the_docker_tests_run_in_one_worker_per_group(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    docker: a Docker test\n")
    (suite / "conftest.py").write_text(
        "from worker_plan import pytest_collection_modifyitems  # noqa: F401\n"
    )
    for name in ("test_one.py", "test_two.py"):
        (suite / name).write_text(MODULE)
    # A module that names the second Docker group, as the wheel route's tests do.
    own_group = 'import pytest\n\npytestmark = pytest.mark.xdist_group("docker-w")\n'
    (suite / "test_three.py").write_text(MODULE.replace("import pytest\n", own_group))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "run")],
        cwd=suite, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    where = {nodeid: worker for worker, _, nodeid in REPORT.findall(run.stdout)}
    assert len(where) == 27, sorted(where)
    docker = {
        nodeid: worker
        for nodeid, worker in where.items()
        if "test_docker" in nodeid and "test_three" not in nodeid
    }
    assert len(docker) == 6
    assert all(nodeid.endswith("@docker") for nodeid in docker), (
        f"the Docker tests' ids carry no @docker group (pytest-xdist did not see the mark): "
        f"{sorted(docker)}"
    )
    assert len(set(docker.values())) == 1, f"the Docker tests ran in several workers: {docker}"
    # The module's own group is kept, and all of that module's tests run in one worker.
    second = {nodeid: worker for nodeid, worker in where.items() if "test_three" in nodeid}
    assert len(second) == 9 and all(nodeid.endswith("@docker-w") for nodeid in second), second
    assert len(set(second.values())) == 1, f"the second group ran in several workers: {second}"


def test_modules_with_docker_then_slow_tests_come_first_each_kept_whole(tmp_path: Path) -> None:
    """The order the workers are handed tests (tests/worker_plan.py): a module with a Docker test,
    then one with a slow test, then one whose tests share a worker (an xdist_group), then the
    rest, each module's tests together and in their order."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    docker: a Docker test\n    slow: a slow test\n"
    )
    (suite / "conftest.py").write_text(
        "from worker_plan import pytest_collection_modifyitems  # noqa: F401\n"
    )
    plain = "def test_first():\n    pass\n\ndef test_second():\n    pass\n"
    marked = "import pytest\n\n" + plain + "\n@pytest.mark.{}\ndef test_third():\n    pass\n"
    (suite / "test_a_plain.py").write_text(plain)
    (suite / "test_b_slow.py").write_text(marked.format("slow"))
    (suite / "test_c_docker.py").write_text(marked.format("docker"))
    (suite / "test_d_plain.py").write_text(plain)
    grouped = 'import pytest\n\npytestmark = pytest.mark.xdist_group("g")\n\n' + plain
    (suite / "test_e_grouped.py").write_text(grouped)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=suite, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    order = [line for line in run.stdout.splitlines() if "::" in line]
    assert order == [
        f"test_{module}.py::test_{name}"
        for module in ("c_docker", "b_slow")
        for name in ("first", "second", "third")
    ] + [f"test_{module}.py::test_{name}" for module in ("e_grouped", "a_plain", "d_plain")
         for name in ("first", "second")], order  # fmt: skip
