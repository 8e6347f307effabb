"""Credentials in a URL (`http://user:password@host`): masked wherever a URL is shown
(j0.edge.urls), and sent, where they are used, as a Basic Authorization header to the URL's own
origin only. The server is our hostile HTTP stand-in on 127.0.0.1 (tests/servers/hostile_http.py),
which records the Authorization header of every request; the client is urllib through
j0.engine.server.endpoints, as every command asks a server."""

from __future__ import annotations

import base64
import urllib.error
from collections.abc import Iterator

import pytest

from j0.edge import urls
from j0.engine.server import endpoints
from servers.hostile_http import HostileServer

BASIC = "Basic " + base64.b64encode(b"user:s3cret").decode()


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as s:
        yield s


@pytest.fixture
def other() -> Iterator[HostileServer]:
    with HostileServer() as s:
        yield s


def with_credentials(url: str, userinfo: str = "user:s3cret") -> str:
    return url.replace("http://", f"http://{userinfo}@", 1)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:s3cret@127.0.0.1:8000", "http://***@127.0.0.1:8000"),
        (
            "https://tok@mirror.example/c50aca14/vllm/?x=1",
            "https://***@mirror.example/c50aca14/vllm/?x=1",
        ),
        ("http://a%40b:p%3Aw@[::1]:8000/v1", "http://***@[::1]:8000/v1"),
        ("http://user:p@ss@host:1/", "http://***@host:1/"),
        ("http://127.0.0.1:8000/v1/models", "http://127.0.0.1:8000/v1/models"),
        ("not a url", "not a url"),
    ],
)
def test_redact_masks_the_userinfo_only(url: str, shown: str) -> None:
    assert urls.redact(url) == shown


def test_redact_text_masks_every_url_in_a_message() -> None:
    text = "GET http://u:pw@a:1/x failed, then https://tok@b/y; see http://c/z (user@example.org)"
    assert urls.redact_text(text) == (
        "GET http://***@a:1/x failed, then https://***@b/y; see http://c/z (user@example.org)"
    )


def test_split_gives_the_bare_url_and_a_basic_header() -> None:
    bare, header = urls.split("http://a%40b:p%3Aw@127.0.0.1:8000/v1")
    assert bare == "http://127.0.0.1:8000/v1"
    assert header == "Basic " + base64.b64encode(b"a@b:p:w").decode()
    assert urls.split("http://127.0.0.1:8000") == ("http://127.0.0.1:8000", None)


def test_credentials_go_as_a_header_to_their_own_host(server: HostileServer) -> None:
    """Before, urllib took `user:s3cret@127.0.0.1` for the host name and nothing answered."""
    status, body = endpoints.request(with_credentials(server.url) + "/json")
    assert status == 200 and b'"id": "m"' in body
    assert server.seen == [("/json", BASIC)]


def test_a_bearer_key_wins_over_the_url_credentials(server: HostileServer) -> None:
    endpoints.request(with_credentials(server.url) + "/json", api_key="k")
    assert server.seen == [("/json", "Bearer k")]


def test_no_redirect_carries_the_url_credentials(
    server: HostileServer, other: HostileServer
) -> None:
    status, _ = endpoints.request(with_credentials(server.url) + f"/redirect?to={other.url}/json")
    assert status == 302 and other.seen == []
    status, _ = endpoints.request(with_credentials(server.url) + "/redirect?to=/json")
    assert status == 200
    assert server.seen[-2:] == [("/redirect", BASIC), ("/json", None)]


def test_messages_name_the_url_without_its_credentials(server: HostileServer) -> None:
    from servers.base import free_port

    with pytest.raises(endpoints.BodyTooLarge) as big:
        endpoints.get_text(with_credentials(server.url) + f"/big?bytes={3 << 20}", limit=1 << 20)
    assert "s3cret" not in str(big.value) and "***@127.0.0.1" in str(big.value)
    gone = with_credentials(f"http://127.0.0.1:{free_port()}")
    ok, why = endpoints.health(gone)
    assert not ok and "s3cret" not in why
    with pytest.raises(Exception) as waited:
        endpoints.wait_for_health(gone, 0.5, poll=0.1)
    assert "s3cret" not in str(waited.value) and "http://***@127.0.0.1" in str(waited.value)
    with pytest.raises(urllib.error.HTTPError) as moved:
        endpoints.get_text(f"{server.url}/redirect?to={with_credentials(other_url(server))}/json")
    assert "s3cret" not in str(moved.value)


def other_url(server: HostileServer) -> str:
    """Another origin than `server`: a port nothing listens on."""
    from servers.base import free_port

    return f"http://127.0.0.1:{free_port()}"
