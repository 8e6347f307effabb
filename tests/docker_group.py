"""The Docker tests' workers: where the tests run in several (scripts/test: pytest-xdist,
`--dist loadgroup`), every test marked `docker` is put in a group that pytest-xdist sends to one
worker, in order: the group "docker", unless its module names another group starting with
"docker" (`pytest.mark.xdist_group("docker-w")`). tests/conftest.py takes the hook from here;
tests/test_test_workers.py runs it in a suite of its own."""

from __future__ import annotations

import pytest

DEFAULT_GROUP = "docker"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Where the tests run in several workers (scripts/test: pytest-xdist, `--dist loadgroup`),
    the Docker tests go to at most a few workers, each group in order: a group shares the engine,
    its layer cache and the stand-ins its tests are made on. Two groups: the tests on stand-in B's
    chain (A, B, C: the default group), and those on stand-ins W and F, a registry or none
    ("docker-w"), whose images are made from a debootstrap of their own or in seconds, so that
    the two chains wait on the network and on Docker side by side instead of one after the other.
    First among the hooks: pytest-xdist's worker reads the group marks in its own collection hook,
    which runs before this conftest's unless told otherwise (tests/test_test_workers.py holds the
    order)."""
    for item in items:
        if not item.get_closest_marker("docker"):
            continue
        named = item.get_closest_marker("xdist_group")
        if named is not None and str(named.args[0] if named.args else "").startswith("docker"):
            continue
        item.add_marker(pytest.mark.xdist_group(DEFAULT_GROUP))
