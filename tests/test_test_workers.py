"""The Docker tests share one worker when the tests run in several (scripts/test: pytest-xdist,
`--dist loadgroup`). tests/conftest.py marks them with `xdist_group("docker")`; pytest-xdist reads
that mark in its worker's collection hook and appends `@docker` to the test's id, and its scheduler
sends every id of one suffix to one worker. Two things have broken this silently before, and both
would only show as a slower run: the conftest hook running after pytest-xdist's (the marks arrive
too late), and a pytest whose node ids pytest-xdist can no longer change (pytest 9.2 with
pytest-xdist 3.8.0). This runs pytest itself, in two real workers, on two Docker tests of two
modules that refuse before they need the Docker engine, and reads where each ran."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKER_TESTS = (
    "tests/image/test_pull.py::test_smoke_of_an_absent_image_is_refused",
    "tests/image/test_wheel_image.py::test_a_closed_port_is_refused_with_the_choices",
)
OTHER_TESTS = ("tests/test_pins.py",)
REPORT = re.compile(r"^\[(gw\d+)\] .*?(PASSED|FAILED|ERROR|SKIPPED) (\S+)", re.MULTILINE)


def test_the_docker_tests_run_in_one_worker_under_their_group(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "run"),
            *DOCKER_TESTS,
            *OTHER_TESTS,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    where = {nodeid: worker for worker, _, nodeid in REPORT.findall(run.stdout)}
    docker = {nodeid: worker for nodeid, worker in where.items() if "@" in nodeid}
    assert sorted(docker) == sorted(f"{test}@docker" for test in DOCKER_TESTS), (
        f"the Docker tests' ids carry no @docker group (pytest-xdist did not see the mark): "
        f"{sorted(where)}"
    )
    assert len(set(docker.values())) == 1, f"the Docker tests ran in several workers: {docker}"
    assert len(where) > len(DOCKER_TESTS), "the other tests did not run"
