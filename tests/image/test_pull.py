"""Images that are not here: `j0 image build` and `j0 overlay build --from-image` pull them, and a
failed pull is explained by its cause; `j0 image smoke` of an absent image is refused.

The engine's answers are real: a registry of ours on 127.0.0.1 that has no images
(tests/servers/registry_server.py: the answer for a deleted tag) and a closed port on 127.0.0.1
(the answer of a registry that cannot be reached, as when DNS fails). No outside registry is
used. The first tests need no engine: the engine's error texts, as seen here, classified.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from j0.cli import main
from j0.engine.source.pull import (
    DENIED,
    NOT_FOUND,
    OTHER,
    UNREACHABLE,
    PullError,
    pull_failure,
    registry_of,
)
from j0.image.build import pull_advice
from j0.pins import Pins
from servers.base import free_port
from servers.registry_server import RegistryServer

# The second Docker worker (tests/worker_plan.py), beside stand-in B's chain.
pytestmark = pytest.mark.xdist_group("docker-w")

RUN = uuid.uuid4().hex[:8]  # unique names for this run's images

# Texts of failed pulls as Docker engines report them (the first two seen on this machine).
DNS = (
    'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on '
    "10.255.255.53:53: no such host"
)
REFUSED = 'Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused'
DELETED_TAG = (
    "manifest for vllm/vllm-openai:nightly-c50aca14416ef29f6ed0ed256302f30646726dcd not found: "
    "manifest unknown: manifest unknown"
)
NO_REPO = (
    "pull access denied for j0-test/none, repository does not exist or may require "
    "'docker login': denied: requested access to the resource is denied"
)
LOGIN = 'Head "https://ghcr.io/v2/org/img/manifests/1": unauthorized: authentication required'
TIMEOUT = (
    'Get "https://registry-1.docker.io/v2/": net/http: request canceled while waiting for '
    "connection (Client.Timeout exceeded while awaiting headers)"
)


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (DNS, UNREACHABLE),
        (REFUSED, UNREACHABLE),
        (TIMEOUT, UNREACHABLE),
        (DELETED_TAG, NOT_FOUND),
        (NO_REPO, NOT_FOUND),
        (LOGIN, DENIED),
        ("write /var/lib/docker/tmp/x: no space left on device", OTHER),
    ],
)
def test_a_failed_pull_is_classified_by_its_cause(text: str, cause: str) -> None:
    assert pull_failure(text) == cause


def test_registry_of_an_image_reference() -> None:
    assert registry_of("vllm/vllm-openai:v0.33.0") == "registry-1.docker.io (Docker Hub)"
    assert registry_of("ubuntu") == "registry-1.docker.io (Docker Hub)"
    assert registry_of("ghcr.io/org/img:1") == "ghcr.io"
    assert registry_of("127.0.0.1:5000/x:1") == "127.0.0.1:5000"
    assert registry_of("localhost/x") == "localhost"


def test_an_unreachable_registry_is_not_blamed_on_a_deleted_tag(pins: Pins) -> None:
    """DNS fails for Docker Hub: the pinned nightly and the fallback live there alike, so the
    fallback is not offered as the way out."""
    error = PullError(pins.vllm_image, DNS)
    message = f"{error}. {pull_advice(error, pins.vllm_image, pins.vllm_image_fallback)}"
    assert "cannot reach the registry registry-1.docker.io (Docker Hub)" in message
    assert "deleted" not in message and "try --base" not in message
    assert f"the fallback {pins.vllm_image_fallback} is on the same registry" in message
    # The fallback itself, unreachable: not offered again either.
    error = PullError(pins.vllm_image_fallback, DNS)
    advice = pull_advice(error, pins.vllm_image_fallback, pins.vllm_image_fallback)
    assert "try --base" not in advice


def test_a_deleted_tag_points_to_the_fallback_unless_it_is_the_fallback(pins: Pins) -> None:
    error = PullError(pins.vllm_image, DELETED_TAG)
    assert "the registry has no such repository or tag" in str(error)
    advice = pull_advice(error, pins.vllm_image, pins.vllm_image_fallback)
    assert f"try --base {pins.vllm_image_fallback}" in advice
    error = PullError(pins.vllm_image_fallback, DELETED_TAG)
    advice = pull_advice(error, pins.vllm_image_fallback, pins.vllm_image_fallback)
    assert "--base" not in advice and "digest" in advice


# --- with a Docker engine ----------------------------------------------------------------------


@pytest.fixture
def registry() -> Iterator[RegistryServer]:
    from conftest import require_docker

    require_docker()
    server = RegistryServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.docker
def test_image_build_on_a_deleted_tag_suggests_the_fallback(
    registry: RegistryServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    base = f"{registry.address}/vllm/vllm-openai:nightly-gone-{RUN}"
    assert main(["image", "build", "--base", base, "--tag", f"j0-test/never:{RUN}"]) == 69
    out, err = capsys.readouterr()
    assert f"{base} is not present here: pulling it" in out
    assert f"cannot pull {base}: the registry has no such repository or tag" in err
    assert f"try --base {pins.vllm_image_fallback}" in err
    assert ("GET", "/v2/vllm/vllm-openai/manifests/nightly-gone-" + RUN) in registry.log


@pytest.mark.docker
def test_image_build_without_a_registry_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import require_docker

    require_docker()
    where = f"127.0.0.1:{free_port()}"
    base = f"{where}/vllm/vllm-openai:v0.33.0"
    assert main(["image", "build", "--base", base, "--tag", f"j0-test/never:{RUN}"]) == 69
    err = capsys.readouterr().err
    assert f"cannot pull {base}: cannot reach the registry {where}" in err
    assert "no such repository" not in err and "deleted" not in err
    assert main(["image", "build", "--base", base, "--no-pull"]) == 69
    assert f"base image {base} is not present and --no-pull was given" in capsys.readouterr().err


@pytest.mark.docker
def test_overlay_build_from_an_absent_image_pulls_it(
    registry: RegistryServer, capsys: pytest.CaptureFixture[str]
) -> None:
    image = f"{registry.address}/vllm/vllm-openai:absent-{RUN}"
    assert main(["overlay", "build", "--from-image", image, "-o", "/nonexistent/x.py"]) == 69
    err = capsys.readouterr().err
    assert f"{image} is not present here: pulling it" in err
    assert f"cannot pull {image}: the registry has no such repository or tag" in err
    assert ("GET", f"/v2/vllm/vllm-openai/manifests/absent-{RUN}") in registry.log


@pytest.mark.docker
def test_smoke_of_an_absent_image_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import require_docker

    require_docker()
    image = f"j0-test/absent:{RUN}"
    assert main(["image", "smoke", image]) == 69  # not here (README: 69), never pulled
    assert f"image {image} is not present" in capsys.readouterr().err
