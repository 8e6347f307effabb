"""j0.engine.server.endpoints against a hostile server of ours on 127.0.0.1
(tests/servers/hostile_http.py): a redirect to another host is refused and never carries the
bearer key, a body over its cap is refused without being read whole, and a body that trickles
forever ends at the deadline. Each of these hung or leaked before (urllib follows redirects and
copies Authorization; `read()` reads everything; the socket timeout bounds only idle reads)."""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Iterator

import pytest

from j0.engine.server import endpoints
from servers.hostile_http import HostileServer


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as s:
        yield s


@pytest.fixture
def other() -> Iterator[HostileServer]:
    """Another origin: same loopback, another port."""
    with HostileServer() as s:
        yield s


def test_a_redirect_to_another_host_is_refused_and_the_key_stays(
    server: HostileServer, other: HostileServer
) -> None:
    status, _ = endpoints.request(
        f"{server.url}/redirect?to={other.url}/json", api_key="secret-key"
    )
    assert status == 302
    assert other.seen == []
    assert server.seen == [("/redirect", "Bearer secret-key")]


def test_a_redirect_on_the_same_origin_is_followed_without_the_key(server: HostileServer) -> None:
    status, body = endpoints.request(f"{server.url}/redirect?to=/json", api_key="secret-key")
    assert status == 200 and b'"id": "m"' in body
    assert server.seen == [("/redirect", "Bearer secret-key"), ("/json", None)]


def test_a_body_over_its_cap_is_refused(server: HostileServer) -> None:
    with pytest.raises(endpoints.BodyTooLarge, match="more than 1048576 bytes"):
        endpoints.request(f"{server.url}/big?bytes={3 << 20}", limit=1 << 20)
    assert endpoints.request(f"{server.url}/big?bytes={1 << 20}", limit=1 << 20)[0] == 200


def test_metrics_text_is_capped_too(server: HostileServer) -> None:
    with pytest.raises(OSError, match="more than"):
        endpoints.get_text(f"{server.url}/big?bytes={3 << 20}", limit=2 << 20)


def test_a_trickling_body_ends_at_the_deadline(server: HostileServer) -> None:
    started = time.monotonic()
    with pytest.raises(endpoints.DeadlineExceeded):
        endpoints.request(f"{server.url}/trickle", timeout=1.0)
    # Bounded: 2 x the timeout plus one read, not forever (the server never stops sending).
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("ask", ["request", "get_text"])
def test_a_trickling_status_line_and_headers_end_at_the_deadline(
    server: HostileServer, ask: str
) -> None:
    """The status line and headers a byte every 0.05 s (each read well inside the 1 s timeout),
    a valid answer after 30 s: the exchange's deadline (2 x the timeout) covers the headers too,
    so the client goes with the head half sent. Before: urllib waited out the whole head (the
    server sent all of it) and only the body's read saw the deadline passed."""
    url = f"{server.url}/trickle-head"
    with pytest.raises(OSError, match=r"deadline|in time"):
        if ask == "request":
            endpoints.request(url, timeout=1.0)
        else:
            endpoints.get_text(url, timeout=1.0)
    waited = 0
    while server.head_sent is None and waited < 1200:  # the server notices the client gone
        time.sleep(0.05)
        waited += 1
    assert server.head_sent is not None and server.head_sent < server.headers_size


def test_no_answer_is_an_oserror(server: HostileServer) -> None:
    from servers.base import free_port

    with pytest.raises((urllib.error.URLError, OSError)):
        endpoints.request(f"http://127.0.0.1:{free_port()}/json", timeout=2.0)
