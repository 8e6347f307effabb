"""The image with J0_VARIANT=prefix-safe: the build step installs the variant (standard library
only, on a fake site-packages), and, with Docker, the real docker/Dockerfile on the stand-in
(tests/standin/build.py) holds it and its entrypoint names it. Fixtures and helpers are
test_image.py's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import OwnImages
from image import test_image as image_tests
from image.test_image import ARTICLE_SHA, FIND, docker_build, docker_run, run_step, sha
from j0.pins import Pins

# A Docker worker of its own (tests/worker_plan.py): these build and run the j0 image on A, B
# and C while the other group's tests run compose on B.
pytestmark = pytest.mark.xdist_group("docker-image")

PREFIX_SAFE_SHA = "38d5625e42113ced60fe43ef47434d0b88bed0e5f7217787d81efb441dce6d02"
# test_image.py's fixtures, used here by name.
step_tree = image_tests.step_tree
standins = image_tests.standins
built = image_tests.built


def test_build_step_installs_the_prefix_safe_variant_when_asked(
    step_tree: dict[str, Path], pins: Pins
) -> None:
    """J0_VARIANT=prefix-safe: the variant goes in (its own sha256, typed here), the manifest says
    so, and the article's file is still what `j0 overlay verify` diffs against."""
    result = run_step(step_tree, "--variant", "prefix-safe")
    assert result.returncode == 0, result.stderr
    assert "MODULES []" in result.stdout
    assert sha(step_tree["target"].read_bytes()) == PREFIX_SAFE_SHA
    assert "identity=prefix-safe" in result.stdout
    assert "not the article's file" in result.stdout
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert (manifest["identity"], manifest["variant"]) == ("prefix-safe", "prefix-safe")
    assert manifest["speculator_sha256"] == manifest["speculator_sha256_pinned"] == PREFIX_SAFE_SHA
    copy = step_tree["home"] / "overlay" / pins.speculator_relpath
    assert sha(copy.read_bytes()) == ARTICLE_SHA
    refused = run_step(step_tree, "--variant", "prefix-unsafe")
    assert refused.returncode == 64
    assert "J0_VARIANT 'prefix-unsafe'" in refused.stderr and "prefix-safe" in refused.stderr


def test_the_variant_is_refused_on_an_engine_that_breaks_its_contract(
    step_tree: dict[str, Path],
) -> None:
    """The variant reads req_states from init_speculator's frame: an engine whose
    init_speculator lost that parameter fails the build, naming the file; the article's file,
    which does not depend on it, still goes in."""
    from engine.contract_lookalike import write_lookalike

    write_lookalike(step_tree["site"], "parameter renamed")
    refused = run_step(step_tree, "--variant", "prefix-safe")
    assert refused.returncode == 1, refused.stderr
    assert "J0_VARIANT=prefix-safe: the installed vLLM breaks the prefix-safe variant's" in (
        refused.stderr
    )
    assert "spec_decode/__init__.py: init_speculator has no parameter req_states" in refused.stderr
    assert sha(step_tree["target"].read_bytes()) != PREFIX_SAFE_SHA
    assert run_step(step_tree).returncode == 0


@pytest.mark.docker
@pytest.mark.slow
def test_j0_variant_prefix_safe_installs_the_variant_and_the_entrypoint_names_it(
    standins: dict[str, str], built: OwnImages, pins: Pins
) -> None:
    """The build arg compose passes for J0_VARIANT=prefix-safe: the variant is installed (its
    sha256, typed here), the manifest and the label say so, the entrypoint's identity line says
    identity=prefix-safe."""
    tag = built.tag("on-a-prefix-safe")
    result = docker_build(built, standins["a"], tag, "--build-arg", "J0_VARIANT=prefix-safe")
    assert result.returncode == 0, result.stdout + result.stderr
    rel = pins.speculator_relpath.removeprefix("vllm/")
    _, digest = docker_run(tag, "-c", FIND.format(rel=rel), entrypoint="python3").split()
    assert digest == PREFIX_SAFE_SHA
    manifest = json.loads(docker_run(tag, "/opt/j0/manifest.json", entrypoint="cat"))
    assert (manifest["variant"], manifest["identity"]) == ("prefix-safe", "prefix-safe")
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", tag],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert labels["j0.variant"] == "prefix-safe"
    from j0.image.smoke import FAKE_VLLM

    out = docker_run(tag, "-c", FAKE_VLLM, "/usr/local/bin/j0-entrypoint", entrypoint="/bin/sh")
    assert f"speculator.py sha256={PREFIX_SAFE_SHA} identity=prefix-safe" in out
    assert "identity=article" not in out
