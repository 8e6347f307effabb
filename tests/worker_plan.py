"""How the tests are spread over workers where they run in several (scripts/test: pytest-xdist,
`--dist loadgroup`): tests/conftest.py takes the hook from here; tests/test_test_workers.py runs
it in a suite of its own.

- Every test marked `docker` is put in a group that pytest-xdist sends to one worker, in order:
  the group "docker", unless its module names another group starting with "docker"
  (`pytest.mark.xdist_group("docker-w")`).
- The modules with Docker tests, then those with tests marked `slow`, then those whose tests share
  one worker (an `xdist_group` of their own: the modules that build vLLM's parser, say), come
  first in the order the workers are handed tests, the rest after them: a long test or group
  handed out last keeps one worker busy while the others have nothing left (the run's tail);
  handed out first, the short tests fill in around it.
"""

from __future__ import annotations

import pytest

DEFAULT_GROUP = "docker"


def group_docker_tests(items: list[pytest.Item]) -> None:
    """The Docker tests go to at most a few workers, each group in order: a group shares the
    engine, its layer cache and the stand-ins its tests are made on. Three groups: compose and
    the engine check on stand-in B (the default group); the j0 image built and run on A, B and C
    ("docker-image"); and the tests on stand-ins W and F, a registry or none ("docker-w"), whose
    images are made in seconds once the rootfs is there. The groups wait on Docker side by side
    instead of one after the other; on a fresh machine the first two wait for B together."""
    for item in items:
        if not item.get_closest_marker("docker"):
            continue
        named = item.get_closest_marker("xdist_group")
        if named is not None and str(named.args[0] if named.args else "").startswith("docker"):
            continue
        item.add_marker(pytest.mark.xdist_group(DEFAULT_GROUP))


def longest_first(items: list[pytest.Item]) -> None:
    """The modules with Docker tests first, then those with slow tests, then those in a group of
    one worker (a fast-subset run has no slow test: the group of vLLM's parser, 25 s in one
    worker, came three quarters of the way through it), then the rest; each module whole and in
    its collected order (a stable sort, the same in every worker, as pytest-xdist requires; a
    module kept whole sets up its module fixtures once where the tests run in one process)."""

    def module(item: pytest.Item) -> str:
        return item.module.__name__ if item.module else ""

    has_docker = {module(item) for item in items if item.get_closest_marker("docker")}
    has_slow = {module(item) for item in items if item.get_closest_marker("slow")}
    grouped = {module(item) for item in items if item.get_closest_marker("xdist_group")}
    items.sort(
        key=lambda item: (
            module(item) not in has_docker,
            module(item) not in has_slow,
            module(item) not in grouped,
        )
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """First among the hooks: pytest-xdist's worker reads the group marks in its own collection
    hook, which runs before this conftest's unless told otherwise (tests/test_test_workers.py
    holds the order)."""
    group_docker_tests(items)
    longest_first(items)
