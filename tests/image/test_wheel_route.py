"""The wheel route without Docker: the engine step (j0.image.engine_step) against a local PEP 503
index of ours on 127.0.0.1 (tests/servers/wheel_index_server.py; vLLM's https://wheels.vllm.ai
cannot be reached from the test machines), serving stand-in wheels made at test time
(tests/standin/wheels.py) around the pinned 0.33.0 wheel's base speculator.py.

The step is run as in the image: `python3 -I -S` (no site-packages, no PYTHONPATH), with a fake
site-packages holding what the "image" has installed (vllm 0.33.0 and pip 23.0.1 as dist-infos),
so each refusal is the real program's message and exit code, and an import of anything outside
the standard library would fail the run. No refusal case reaches the install; the runner replaces
it by a stop, so that a refusal that stopped working cannot pip-install into the test's Python.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from j0.pins import Pins
from servers.base import free_port
from servers.wheel_index_server import WheelIndexServer
from standin.wheels import RELEASE_VERSION, make_wheel

ROOT = Path(__file__).resolve().parents[2]
# The step may never install here: `pip install` would go into the Python running the tests
# (a refusal that stopped working would replace the test environment's vllm). The runner puts a
# stop in the install's place, so such a case fails loudly instead.
RUNNER = """\
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from j0.image import engine_step
def _no_install(path):
    raise SystemExit(f"TEST STOP: the engine step reached the install of {path.name}")
engine_step.install_wheel = _no_install
sys.exit(engine_step.main(sys.argv[3:]))
"""
# The pinned commit, and the release's (its vllm/_version.py: 'g4ba787ec9'), typed here.
ARTICLE_COMMIT = "c50aca14416ef29f6ed0ed256302f30646726dcd"


@pytest.fixture(scope="module")
def index() -> Iterator[WheelIndexServer]:
    with WheelIndexServer() as server:
        yield server


@pytest.fixture
def image(tmp_path: Path) -> dict[str, Path]:
    """A copy of j0 with the checkout's pins, and the fake site-packages of the "image"."""
    home = tmp_path / "opt-j0"
    shutil.copytree(ROOT / "scripts" / "j0", home / "scripts" / "j0")
    (home / "overlay").mkdir()
    shutil.copy(ROOT / "overlay" / "pins.env", home / "overlay" / "pins.env")
    site = tmp_path / "dist-packages"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "_version.py").write_text(
        "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    )
    for name, version in (("vllm", "0.33.0"), ("pip", "23.0.1")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return {"home": home, "site": site, "work": tmp_path / "work", "record": tmp_path / "rec.json"}


def run_step(image: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-I", "-S", "-c", RUNNER, str(image["home"] / "scripts")]
    cmd += [str(image["site"]), "--engine", "wheel", "--work", str(image["work"])]
    cmd += ["--record", str(image["record"]), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


def serve(
    index: WheelIndexServer, tmp_path: Path, prefix: str, pins: Pins, base: bytes, **kw: Any
) -> str:
    wheel = make_wheel(tmp_path / prefix, pins.speculator_relpath, base, **kw)
    return index.add(prefix, wheel)


def assert_refused(
    result: subprocess.CompletedProcess[str], code: int, image: dict[str, Path]
) -> None:
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr.startswith("j0 image engine step: error: ")
    assert not image["record"].exists()  # nothing recorded, nothing installed


def test_a_wheel_of_the_release_commit_is_refused(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    url = serve(index, tmp_path, "release", pins, base_bytes, version=RELEASE_VERSION)
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    assert "says vLLM 0.33.0 commit 4ba787ec9" in result.stderr
    assert "the 0.33.0 release's commit" in result.stderr
    assert f"not VLLM_COMMIT {ARTICLE_COMMIT}" in result.stderr


def test_a_wheel_whose_sha256_is_not_the_pinned_one_is_refused(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    url = serve(index, tmp_path, "shapin", pins, base_bytes)
    wheel = next((tmp_path / "shapin").glob("*.whl"))
    pins_file = image["home"] / "overlay" / "pins.env"
    pinned = "ab" * 32
    text = pins_file.read_text()
    assert "\nVLLM_WHEEL_SHA256=\n" in text
    pins_file.write_text(text.replace("\nVLLM_WHEEL_SHA256=\n", f"\nVLLM_WHEEL_SHA256={pinned}\n"))
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    actual = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert f"sha256 {actual}, expected {pinned} (VLLM_WHEEL_SHA256" in result.stderr
    # A build arg that contradicts the pin is refused before any download.
    result = run_step(image, "--wheel-index", url, "--wheel-sha256", actual)
    assert_refused(result, 2, image)
    assert (
        f"build arg VLLM_WHEEL_SHA256={actual} is not VLLM_WHEEL_SHA256={pinned}" in result.stderr
    )


def test_a_download_that_is_not_what_the_index_says_is_refused(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    wheel = make_wheel(tmp_path / "damaged", pins.speculator_relpath, base_bytes)
    url = index.add("damaged", wheel, link_sha256="cd" * 32)
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    assert f"but the index's link says {'cd' * 32}" in result.stderr


def test_requirements_the_image_lacks_are_listed_each(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    requires = [
        "torch==2.14.0",
        "pip<1",
        "pip>=20",
        "pywin32; sys_platform == 'win32'",
        "soundfile; extra == 'audio'",
    ]
    url = serve(index, tmp_path, "unmet", pins, base_bytes, requires=requires)
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    assert "2 of its Requires-Dist not satisfied" in result.stderr
    assert "  torch==2.14.0 (not installed)\n" in result.stderr
    assert "  pip<1 (installed: 23.0.1)\n" in result.stderr
    for met in ("pip>=20", "pywin32", "soundfile"):
        assert f"  {met}" not in result.stderr


def choices_in(stderr: str, pins: Pins) -> None:
    assert "The choices:" in stderr
    assert "WHEEL_INDEX=<url>" in stderr and "--wheel-index URL" in stderr
    assert f"VLLM_ENGINE=image: vLLM's nightly image {pins.vllm_image}" in stderr
    assert f"VLLM_ENGINE=image VLLM_IMAGE={pins.vllm_image_fallback}" in stderr
    assert "commit 4ba787ec9" in stderr
    assert "Traceback" not in stderr


def test_an_index_without_the_commit_gives_the_choices(
    index: WheelIndexServer, pins: Pins, image: dict[str, Path]
) -> None:
    url = index.index_url("no-such-commit")
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 69, image)
    assert f"{url}vllm/: HTTP 404" in result.stderr
    choices_in(result.stderr, pins)


def test_a_closed_port_gives_the_choices(pins: Pins, image: dict[str, Path]) -> None:
    url = f"http://127.0.0.1:{free_port()}/{ARTICLE_COMMIT}/"
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 69, image)
    assert f"{url}vllm/: cannot connect:" in result.stderr
    choices_in(result.stderr, pins)


def test_a_pinned_name_the_index_does_not_list_is_refused_naming_what_it_lists(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    url = serve(index, tmp_path, "named", pins, base_bytes)
    listed = next((tmp_path / "named").glob("*.whl")).name
    result = run_step(image, "--wheel-index", url, "--wheel-name", "vllm-9-py3-none-any.whl")
    assert_refused(result, 69, image)
    assert "no file vllm-9-py3-none-any.whl (VLLM_WHEEL_NAME)" in result.stderr
    assert f"it lists {listed}" in result.stderr


def test_the_article_wheel_passes_every_check_before_the_install(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    """In process, the steps before `pip install`: fetched by the {commit} template, sha256 of
    the bytes served, commit c50aca144, requirements met by the fake site."""
    from j0.image import engine_step
    from j0.image.requirements import installed_distributions
    from j0.pins import wheel_index_for

    wheel = make_wheel(tmp_path / "good", pins.speculator_relpath, base_bytes, requires=["pip>=20"])
    index.add(ARTICLE_COMMIT, wheel)
    url = wheel_index_for(index.url + "/{commit}/", pins.vllm_commit)
    link, path, digest = engine_step.fetch(pins, url, "", tmp_path / "dl")
    assert path.read_bytes() == wheel.read_bytes()
    assert digest == hashlib.sha256(wheel.read_bytes()).hexdigest() == link.sha256
    facts = engine_step.read_wheel(path, digest)
    engine_step.check_sha256(facts, digest, link.sha256, url)
    engine_step.check_commit(facts.engine, pins, "the wheel")
    assert facts.engine.commit == "c50aca144" and facts.requires_dist == ["pip>=20"]
    engine_step.check_requirements(facts, installed_distributions([str(image["site"])]))


@pytest.mark.parametrize(
    ("name", "machine", "fits"),
    [
        ("vllm-0.33.1.dev3+gc50aca144-cp38-abi3-manylinux_2_31_x86_64.whl", "x86_64", True),
        ("vllm-0.33.1.dev3+gc50aca144-cp38-abi3-manylinux_2_31_aarch64.whl", "x86_64", False),
        ("vllm-0.33.1.dev3+gc50aca144-cp38-abi3-manylinux_2_31_aarch64.whl", "aarch64", True),
        ("vllm-0.33.1-py3-none-any.whl", "x86_64", True),
        ("vllm-0.33.1-cp399-cp399-manylinux1_x86_64.whl", "x86_64", False),
        ("vllm-0.33.1-cp38-abi3-win_amd64.whl", "x86_64", False),
        ("vllm-0.33.1.tar.gz", "x86_64", False),
    ],
)
def test_which_wheel_fits_this_python_and_machine(name: str, machine: str, fits: bool) -> None:
    """PEP 427 tags read from the file name: CPython abi3 wheels of an older minor fit, another
    architecture or platform does not (names in the shape of vLLM's per-commit wheels)."""
    from j0.image.wheel_index import fits_here

    assert fits_here(name, machine) is fits
