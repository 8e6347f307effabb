"""Shared fixtures: the pins, the pinned vllm wheel's base file, and a fresh output dir."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from j0 import base_sources
from j0.pins import Pins, load_pins

ROOT = Path(__file__).resolve().parents[1]


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


def require_docker() -> None:
    """Skip without a Docker engine, except where J0_REQUIRE_DOCKER=1 (CI), where it fails."""
    import docker

    try:
        docker.from_env().ping()
    except Exception as exc:
        if os.environ.get("J0_REQUIRE_DOCKER") == "1":
            pytest.fail(f"J0_REQUIRE_DOCKER=1 but no Docker engine answers: {exc}")
        pytest.skip(f"no Docker engine: {exc}")


def prune_dangling_j0_images() -> None:
    """Remove untagged images built from docker/Dockerfile (its j0.manifest label), which
    rebuilds and refused builds leave behind; tagged images and the stand-ins stay."""
    subprocess.run(
        ["docker", "image", "prune", "-f", "--filter", "label=j0.manifest"],
        capture_output=True,
        check=False,
    )
