"""`j0 status` has one deadline for its whole conversation with the server (`--deadline`), against
a hostile server of ours on 127.0.0.1 (tests/servers/hostile_http.py) whose endpoints after /health
trickle one byte every 0.2 s forever. Before the deadline existed, each such request had its own
2 x 10 s, so /version, /v1/models and /metrics (twice, with the probe) took a minute or more; now
what the deadline leaves no time for is reported as not asked."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from j0.errors import USAGE, J0Error
from j0.status.run import StatusOptions, run_status
from servers.hostile_http import HostileServer


@pytest.fixture
def trickling() -> Iterator[HostileServer]:
    with HostileServer(trickle=frozenset({"/version", "/v1/models", "/metrics"})) as server:
        yield server


def test_what_the_deadline_leaves_no_time_for_is_not_asked(trickling: HostileServer) -> None:
    outcome = run_status(StatusOptions(url=trickling.url, probe=False, deadline_s=3.0))
    text = outcome.text()
    assert "not asked: j0 status's deadline of 3 s passed" in text
    assert outcome.exit_code == 1
    # /version took the time; /v1/models and /metrics were never sent.
    assert [path for path, _ in trickling.seen] == ["/health", "/version"]


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_a_deadline_that_is_not_a_positive_finite_number_is_a_usage_error(
    value: float,
) -> None:
    with pytest.raises(J0Error, match=r"--deadline .*: expected a positive, finite") as caught:
        run_status(StatusOptions(url="http://127.0.0.1:9", deadline_s=value))
    assert caught.value.exit_code == USAGE
