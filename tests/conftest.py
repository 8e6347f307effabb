"""Shared fixtures: the pins, the pinned vllm wheel's base file, and a fresh output dir."""

from __future__ import annotations

import atexit
import functools
import gc
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from j0.engine.source import base_sources
from j0.pins import Pins, load_pins

# The Docker tests to their workers, the longest first: a hook of tests/worker_plan.py, found here.
from worker_plan import pytest_collection_modifyitems  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
# `j0 serve` reads ARGS with vLLM's own parser where vLLM is importable, as it is here (the test
# environment has vLLM 0.33.0 and torch): building that parser imports torch and vLLM's engine
# arguments, seconds per process. The tests of `j0 serve` read ARGS with j0's table of vLLM's
# options instead; tests/serve/test_vllm_args.py checks that table against vLLM's parser.
os.environ.setdefault("J0_SERVE_ARGS_READER", "table")

_ZYGOTES = pytest.StashKey[Path]()


@pytest.fixture(scope="session", autouse=True)
def checkout_unchanged() -> Iterator[None]:
    """No file comes or goes in scripts/j0 or tests/ while this test process runs its tests
    (tests/checkout_guard.py: a file planted there for a moment failed other workers' tests).
    Read twice a session, about 80 folders: a few milliseconds."""
    from checkout_guard import changes, snapshot

    tops = (ROOT / "scripts" / "j0", ROOT / "tests")
    before = snapshot(*tops)
    yield
    if found := changes(before, snapshot(*tops)):
        pytest.fail(
            "files came or went in the checkout while the tests ran (a test writes there: plant"
            " in tmp_path instead; or the checkout was changed meanwhile, by git or by hand):\n"
            + "\n".join(found),
            pytrace=False,
        )


def pytest_configure(config: pytest.Config) -> None:
    """One folder of selfcheck zygotes for the whole run (j0.selfcheck.zygote): the workers of
    `j0 selfcheck --device cpu` that the tests start fork from a process that imported vLLM
    once, instead of importing it again each (8 s of CPU each, about twenty of them). Set here,
    before pytest-xdist starts its workers, so that all of them share it; a run inside a test
    (the mutation check's) keeps its caller's."""
    from j0.selfcheck.zygote import ZYGOTES_ENV

    # At the process's exit, after pytest's own clean-up: the objects alive then are left out of
    # the interpreter's last garbage collections. Python's shutdown in a process that imported
    # torch took about 0.5-1 s of CPU in those collections, in the worker that imported vLLM's
    # parser about 3 s (14.1 -> 11.0 s for tests/serve/test_vllm_args.py in one worker); what a
    # test could observe has happened by then. Registered first, so run last.
    atexit.register(gc.freeze)
    if hasattr(config, "workerinput") or os.environ.get(ZYGOTES_ENV):
        return
    import tempfile

    folder = tempfile.mkdtemp(prefix="j0-zygotes-")
    os.environ[ZYGOTES_ENV] = folder
    config.stash[_ZYGOTES] = Path(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_ZYGOTES, None)
    if folder is not None:
        from j0.selfcheck.zygote import stop_all

        stop_all(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pins() -> Pins:
    return load_pins(ROOT)


@pytest.fixture(scope="session")
def base_bytes(pins: Pins) -> bytes:
    """vLLM 0.33.0's unpatched speculator.py, read from the real wheel (downloaded once)."""
    return base_sources.from_wheel(pins).data


@pytest.fixture(scope="session")
def base_file(base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("base") / "speculator.py"
    path.write_bytes(base_bytes)
    return path


@pytest.fixture(scope="session")
def article_file(pins: Pins, base_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The article's file, made with GNU patch (not with j0's code) from the committed patch."""
    work = tmp_path_factory.mktemp("article")
    out = work / "speculator.py"
    shutil.copy(base_file, out)
    import subprocess

    subprocess.run(
        ["patch", "--batch", "--fuzz=0", str(out), "-i", str(pins.patch_file)],
        check=True,
        capture_output=True,
    )
    return out


@functools.cache
def cuda_gpu_here() -> bool:
    """Whether torch sees a CUDA GPU here: no driver (no nvidia-smi, no /dev/nvidiactl) says no at
    once; else a child process asks torch (so that this one never initialises CUDA), once per
    test process."""
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        return False
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    return subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0


def require_docker() -> None:
    """Skip without a Docker engine, except where J0_REQUIRE_DOCKER=1 (CI), where it fails."""
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:
        if os.environ.get("J0_REQUIRE_DOCKER") == "1":
            pytest.fail(f"J0_REQUIRE_DOCKER=1 but no Docker engine answers: {exc}")
        pytest.skip(f"no Docker engine: {exc}")


def standin_images(*builders: Callable[[], str]) -> list[str]:
    """The stand-in base images (tests/standin/build.py), made if need be. Where this machine
    cannot make them (no debootstrap, not root) the test skips, as without an engine, except
    where J0_REQUIRE_DOCKER=1 (CI), where it fails."""
    from standin.build import MissingPrerequisite

    try:
        return [build() for build in builders]
    except MissingPrerequisite as exc:
        if os.environ.get("J0_REQUIRE_DOCKER") == "1":
            pytest.fail(f"J0_REQUIRE_DOCKER=1 but the stand-in images cannot be made: {exc}")
        pytest.skip(f"cannot make the stand-in images: {exc}")


# Docker tests name what they build with this run's id and remove only that.
RUN_ID = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})\s*$", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class OwnImages:
    """The images one group of tests makes: unique tags, and the intermediate images its legacy
    builds leave (a refused build keeps the steps before the failing one). remove() deletes
    those and nothing else: another run's images, and the cached stand-ins, stay."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.ids: list[str] = []

    def tag(self, name: str) -> str:
        """j0-test/<name>:<run id>, removed at the end."""
        tag = f"j0-test/{name}:{RUN_ID}"
        self.tags.append(tag)
        return tag

    def record_output(self, output: str) -> None:
        """Keep the step images (` ---> <id>` lines) of a legacy build's output."""
        self.ids += _STEP_IMAGE.findall(_ANSI.sub("", output))

    def record_tag(self, tag: str) -> None:
        """Keep the image a tag names now (a rebuild moves the tag and leaves it dangling)."""
        result = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 0:
            self.ids.append(result.stdout.strip())

    def remove(self) -> None:
        for tag in self.tags:
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
        # Untagged only (`docker rmi` without -f refuses a tagged image or one with children);
        # newest first, so that a step's parent is free when its turn comes.
        # A tagged one (the FROM step's base, a cached stand-in) is not ours: `docker rmi <id>`
        # would delete an image with one tag, so it is skipped.
        for image in reversed(dict.fromkeys(self.ids)):
            tags = subprocess.run(
                ["docker", "image", "inspect", "--format", "{{len .RepoTags}}", image],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            if tags not in ("", "0"):
                continue
            subprocess.run(["docker", "rmi", image], capture_output=True, check=False)


@pytest.fixture(scope="session")
def own_images() -> Iterator[OwnImages]:
    """One set for the whole run, removed at its end: the step images of one module's build stay
    while later modules build the same Dockerfile on the same stand-in, so Docker's layer cache
    serves those builds instead of running every step again."""
    images = OwnImages()
    try:
        yield images
    finally:
        images.remove()


# Time by kind of test, printed at the end of every run (scripts/test's phase report): the fast
# tests and the Docker tests apart, so that the next growth is seen the day it happens. A test's
# time is its set-up, call and tear-down; read from the reports, so that it also works where the
# tests ran in several worker processes (pytest-xdist: then it is the time summed over workers).
_TIME_BY_KIND: dict[str, list[float]] = {}


def _report_kind(report: pytest.TestReport) -> str:
    if "docker" in report.keywords:
        return "docker"
    if "slow" in report.keywords:
        return "slow"
    return "fast"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _TIME_BY_KIND.setdefault(_report_kind(report), [0.0, 0])
    entry[0] += report.duration
    if report.when == "call" or (report.when == "setup" and report.skipped):
        entry[1] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _TIME_BY_KIND:
        return
    terminalreporter.section("time by kind of test (set-up + call + tear-down)")
    for kind in ("fast", "slow", "docker"):
        if kind in _TIME_BY_KIND:
            seconds, count = _TIME_BY_KIND[kind]
            terminalreporter.write_line(f"{kind:<8} {seconds:8.1f} s  {int(count):5d} tests")
