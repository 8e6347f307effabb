"""The Docker tests' worker: where the tests run in several (scripts/test: pytest-xdist,
`--dist loadgroup`), every test marked `docker` is put in the group "docker", which pytest-xdist
sends to one worker, in order. tests/conftest.py takes the hook from here;
tests/test_test_workers.py runs it in a suite of its own."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Where the tests run in several workers (scripts/test: pytest-xdist, `--dist loadgroup`),
    every Docker test goes to one worker, in order: they share the engine, its layer cache and the
    stand-ins, and two image builds at once would only wait on each other. First among the hooks:
    pytest-xdist's worker reads the group marks in its own collection hook, which runs before this
    conftest's unless told otherwise (tests/test_test_workers.py holds the order)."""
    for item in items:
        if item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.xdist_group("docker"))
