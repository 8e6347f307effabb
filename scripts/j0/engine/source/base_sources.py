"""Where the unpatched speculator.py comes from: a file, a site-packages dir, the installed vLLM,
the vllm wheel of the pinned release (downloaded once, cached), or a Docker image.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from j0.errors import J0Error
from j0.pins import Pins


@dataclass(frozen=True)
class BaseFile:
    data: bytes
    origin: str


def from_file(path: Path) -> BaseFile:
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise J0Error(f"{path}: {what} (expected vLLM's speculator.py)", exit_code=2)
    return BaseFile(path.read_bytes(), str(path))


def from_site_packages(directory: Path, pins: Pins) -> BaseFile:
    path = directory / pins.speculator_relpath
    if not path.is_file():
        raise J0Error(
            f"{directory}: no {pins.speculator_relpath} there "
            "(expected the directory that holds the vllm package)",
            exit_code=2,
        )
    return from_file(path)


def installed_vllm_dir() -> Path:
    """The directory holding the installed vllm package, found without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise J0Error(f"vLLM is not installed for {sys.executable}", exit_code=2)
    return Path(next(iter(spec.submodule_search_locations))).parent


_VERSION_LINE = re.compile(r"^__version__ = version = '([^']+)'$", re.MULTILINE)


def installed_vllm_version() -> tuple[str, Path] | None:
    """The release of the vllm package this Python imports and its folder, read from its
    generated vllm/_version.py (else the vllm-*.dist-info beside it) without importing vLLM; None
    where vLLM is not installed or names no version."""
    try:
        folder = installed_vllm_dir() / "vllm"
    except J0Error:
        return None
    version = folder / "_version.py"
    if version.is_file():
        match = _VERSION_LINE.search(version.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1), folder
    infos = sorted(folder.parent.glob("vllm-*.dist-info"))
    if len(infos) == 1:
        return infos[0].name.removeprefix("vllm-").removesuffix(".dist-info"), folder
    return None


def installed_speculator(pins: Pins) -> Path:
    """The speculator.py of this Python's vLLM (found without importing vLLM)."""
    path = installed_vllm_dir() / pins.speculator_relpath
    if not path.is_file():
        raise J0Error(f"{path}: no such file (the installed vLLM lacks its speculator.py)", 2)
    return path


def from_installed(pins: Pins) -> BaseFile:
    return from_site_packages(installed_vllm_dir(), pins)


def wheel_cache_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("J0_WHEEL_CACHE", str(Path(cache) / "j0" / "wheels")))


# What `pip download` fetches, for the message before it (measured sizes of the PyPI wheels).
WHEEL_SIZES = {"0.33.0": "about 336 MB", "0.34.0": "about 239 MB"}


def vllm_wheel(pins: Pins, cache: Path | None = None, release: str | None = None) -> Path:
    """The cached vllm==<release> wheel (default: the pinned VLLM_RELEASE), downloaded with
    `pip download --no-deps` if missing."""
    cache = wheel_cache_dir() if cache is None else cache
    release = release or pins.vllm_release
    pattern = f"vllm-{release}-*.whl"
    found = sorted(cache.glob(pattern))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        print(
            f"downloading vllm=={release} ({WHEEL_SIZES.get(release, 'some hundred MB')}) "
            f"into {cache} ...",
            file=sys.stderr,
            flush=True,
        )
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--progress-bar",
            "on",
            "-d",
            str(cache),
            f"vllm=={release}",
        ]
        result = subprocess.run(cmd, check=False, stdout=sys.stderr)
        found = sorted(cache.glob(pattern))
        if result.returncode != 0 or not found:
            raise J0Error(
                f"`{' '.join(cmd)}` failed (exit {result.returncode}); no {pattern} in {cache}"
            )
    return found[-1]


def from_wheel(pins: Pins, cache: Path | None = None, release: str | None = None) -> BaseFile:
    wheel = vllm_wheel(pins, cache, release)
    try:
        with zipfile.ZipFile(wheel) as archive:
            return BaseFile(
                archive.read(pins.speculator_relpath), f"{wheel}!{pins.speculator_relpath}"
            )
    except (KeyError, zipfile.BadZipFile) as exc:
        raise J0Error(f"{wheel}: cannot read {pins.speculator_relpath}: {exc}") from exc


FIND_VLLM_DIR = (
    "import importlib.util as u; s = u.find_spec('vllm'); "
    "print(list(s.submodule_search_locations)[0] if s else '')"
)


def from_image(image: str, pins: Pins) -> BaseFile:
    """Read speculator.py out of a Docker image (docker-py; pulled first when absent); its own
    python3 finds vLLM."""
    from j0.errors import require

    docker = require("docker", "j0 overlay build --from-image")  # heavy and optional
    from docker.errors import DockerException

    from j0.engine.source.pull import ensure_image

    try:
        client = docker.from_env()
        ensure_image(client, image, log=lambda *a, **k: print(*a, **k, file=sys.stderr))
        output = client.containers.run(
            image, ["-c", FIND_VLLM_DIR], entrypoint="python3", network_mode="none", remove=True
        )
        vllm_dir = output.decode().strip()
        if not vllm_dir:
            raise J0Error(f"image {image}: its python3 finds no vllm package", exit_code=2)
        path = str(Path(vllm_dir).parent / pins.speculator_relpath)
        container = client.containers.create(image, entrypoint="true", network_disabled=True)
        try:
            stream, _ = container.get_archive(path)
            archive = tarfile.open(fileobj=io.BytesIO(b"".join(stream)))
            member = archive.extractfile(archive.getmembers()[0])
            assert member is not None
            return BaseFile(member.read(), f"{image}:{path}")
        finally:
            container.remove(force=True)
    except DockerException as exc:
        raise J0Error(f"image {image}: {exc}") from exc
