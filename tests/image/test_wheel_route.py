"""The wheel route without Docker: the engine step (j0.image.engine_step) against a local PEP 503
index of ours on 127.0.0.1 laid out as vLLM's (tests/servers/wheel_index_server.py: the root and
its `cu129/`, `cu130/`, `cpu/` variant folders; vLLM's https://wheels.vllm.ai cannot be reached
from the test machines), serving stand-in wheels made at test time (tests/standin/wheels.py)
around the pinned 0.33.0 wheel's base speculator.py.

The refusals before the install run the step as in the image: `python3 -I -S` (no site-packages,
no PYTHONPATH), with a fake site-packages holding what the "image" has installed (vllm 0.33.0,
pip 23.0.1 and a torch whose torch/version.py says CUDA 13.0, tests/standin/sites.py), so each
refusal is the real program's message and exit code, and an import of anything outside the
standard library would fail the run. None of them reaches the install; the runner replaces it by
a stop, so that a refusal that stopped working cannot pip-install into the test's Python.

The install and `pip check` run for real in a virtual environment that stands in for the image's
Python (tests/standin/sites.py's image_venv: the same distributions, and the real pip of this test
environment, which sees that environment alone): pip installs the wheel over the "release's"
vllm, and `pip check` there says which of the wheel's requirements the image does not meet.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from image_tree import put_j0_package

from j0.pins import Pins
from servers.base import free_port
from servers.wheel_index_server import WheelIndexServer
from standin import sites
from standin.wheels import ARTICLE_VERSION, RELEASE_VERSION, make_wheel

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
# In the stand-in image's venv the step runs whole, install included.
WHOLE = """\
import sys
sys.path[:0] = [sys.argv[1]]
from j0.image import engine_step
sys.exit(engine_step.main(sys.argv[2:]))
"""
# The pinned commit, and the release's (its vllm/_version.py: 'g4ba787ec9'), typed here.
ARTICLE_COMMIT = "c50aca14416ef29f6ed0ed256302f30646726dcd"
# What vLLM's build writes for a variant wheel of the article's commit (a `.cu129` after the
# local version, as vLLM's index generator parses names).
CU129 = ("0.33.1.dev3+gc50aca144.cu129", "gc50aca144")
CU130 = ("0.33.1.dev3+gc50aca144.cu130", "gc50aca144")


@pytest.fixture(scope="module")
def index() -> Iterator[WheelIndexServer]:
    with WheelIndexServer() as server:
        yield server


def j0_copy(tmp_path: Path) -> Path:
    """A copy of j0 with the checkout's pins, as the Dockerfile's early COPY makes one."""
    home = tmp_path / "opt-j0"
    put_j0_package(home / "scripts")
    (home / "overlay").mkdir()
    shutil.copy(ROOT / "overlay" / "pins.env", home / "overlay" / "pins.env")
    return home


@pytest.fixture
def image(tmp_path: Path) -> dict[str, Path]:
    """A copy of j0, and the fake site-packages of the "image": the release's vllm, Debian's pip
    and torch 2.14.0 for CUDA 13.0."""
    site = tmp_path / "dist-packages"
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")
    sites.torch(site, "13.0")
    return {
        "home": j0_copy(tmp_path),
        "site": site,
        "work": tmp_path / "work",
        "record": tmp_path / "rec.json",
    }


def run_step(image: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-I", "-S", "-c", RUNNER, str(image["home"] / "scripts")]
    cmd += [str(image["site"]), "--engine", "wheel", "--work", str(image["work"])]
    cmd += ["--record", str(image["record"]), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


def serve(
    index: WheelIndexServer,
    tmp_path: Path,
    prefix: str,
    pins: Pins,
    base: bytes,
    variant: str = "cu130",
    **kw: Any,
) -> str:
    """A stand-in wheel in `variant`'s folder of index `prefix` (CUDA 13.0's: the fixture's)."""
    wheel = make_wheel(tmp_path / f"{prefix}-{variant}", pins.speculator_relpath, base, **kw)
    return index.add(prefix, wheel, variant=variant)


def assert_refused(
    result: subprocess.CompletedProcess[str], code: int, image: dict[str, Path]
) -> None:
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr.startswith("j0 image engine step: error: ")
    assert "Traceback" not in result.stderr and "TEST STOP" not in result.stderr
    assert not image["record"].exists()  # nothing recorded, nothing installed


def assert_reached_install(result: subprocess.CompletedProcess[str], wheel: str) -> None:
    """Every check before the install passed, with this wheel."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"TEST STOP: the engine step reached the install of {wheel}" in result.stderr


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
    wheel = next((tmp_path / "shapin-cu130").glob("*.whl"))
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
    url = index.add("damaged", wheel, link_sha256="cd" * 32, variant="cu130")
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    assert f"but the index's link says {'cd' * 32}" in result.stderr


# --- the CUDA variant: the index's folder of the base's torch.version.cuda ------------------------


@pytest.fixture(scope="module")
def variants(
    index: WheelIndexServer, pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """Index `variants` as vLLM lays one out: the default variant at the root, a cu129/ and a
    cu130/ folder, each with a wheel of its own name: variant -> that wheel's file name."""
    folder = tmp_path_factory.mktemp("variants")
    rel = pins.speculator_relpath
    names = {}
    for variant, version in (("", ARTICLE_VERSION), ("cu129", CU129), ("cu130", CU130)):
        wheel = make_wheel(folder / (variant or "root"), rel, base_bytes, version=version)
        index.add("variants", wheel, variant=variant)
        names[variant] = wheel.name
    return names


@pytest.mark.parametrize(("cuda", "variant"), [("13.0", "cu130"), ("12.9", "cu129")])
def test_the_variant_folder_of_the_bases_torch_cuda_is_taken(
    index: WheelIndexServer,
    variants: dict[str, str],
    tmp_path: Path,
    cuda: str,
    variant: str,
) -> None:
    """A base whose torch is CUDA 13.0 gets the cu130/ folder's wheel, one of CUDA 12.9 cu129/'s;
    never the root's (vLLM's default variant of the day)."""
    site = tmp_path / "site"
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")
    sites.torch(site, cuda)
    image = {"home": j0_copy(tmp_path), "site": site}
    image.update(work=tmp_path / "work", record=tmp_path / "rec.json")
    result = run_step(image, "--wheel-index", index.index_url("variants"))
    assert_reached_install(result, variants[variant])
    assert f"/variants/{variant}/vllm/" in index.requested()
    assert "/variants/vllm/" not in index.requested()


def test_an_index_without_the_bases_variant_is_refused_naming_both(
    index: WheelIndexServer,
    tmp_path: Path,
    pins: Pins,
    base_bytes: bytes,
    image: dict[str, Path],
) -> None:
    """CUDA 13.0's torch, an index with cu129/ and cpu/ only, no wheel at its root: refused,
    exit 69, naming the torch, the folder it needs and the folders there are; with the choices.
    (A root with a wheel: tests/image/test_wheel_layouts.py.)"""
    for variant in ("cu129", "cpu"):
        url = serve(index, tmp_path, "no-cu130", pins, base_bytes, variant=variant)
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 69, image)
    assert "torch 2.14.0+cu130 (CUDA 13.0, " in result.stderr
    assert f"{url}: no cu130/ folder, which the base image's torch" in result.stderr
    assert "needs, and no vllm wheel at its root (vLLM's default CUDA variant); the index has " in (
        result.stderr
    )
    assert "the index has cpu/, cu129/.\n" in result.stderr
    assert "The choices:" in result.stderr


def test_an_index_url_of_a_variant_folder_is_taken_only_for_that_variant(
    index: WheelIndexServer, variants: dict[str, str], image: dict[str, Path]
) -> None:
    """WHEEL_INDEX may name the variant folder itself (`<commit>/cu130/`): taken for a CUDA 13.0
    torch; `<commit>/cu129/` is refused for it."""
    result = run_step(image, "--wheel-index", index.index_url("variants") + "cu130/")
    assert_reached_install(result, variants["cu130"])
    result = run_step(image, "--wheel-index", index.index_url("variants") + "cu129/")
    assert_refused(result, 69, image)
    assert "is the index's cu129/ folder, but the base image's torch" in result.stderr
    assert "needs cu130/" in result.stderr


def test_a_wheel_named_for_another_variant_is_refused(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    """A `.cu129` wheel in the cu130/ folder: not vLLM's layout; refused before the install,
    naming both CUDAs."""
    url = serve(index, tmp_path, "misfiled", pins, base_bytes, variant="cu130", version=CU129)
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 1, image)
    assert (
        "vllm-0.33.1.dev3+gc50aca144.cu129-py3-none-any.whl is CUDA 12.9 (its local version "
        "label .cu129: CUDA 12.9), but it came from the cu130/ folder" in result.stderr
    )
    assert ") is CUDA 13.0: the index is not vLLM's layout, or is damaged" in result.stderr


@pytest.mark.parametrize("broken", ["absent", "unreadable"])
def test_a_base_without_a_readable_torch_is_refused(
    index: WheelIndexServer, variants: dict[str, str], image: dict[str, Path], broken: str
) -> None:
    """Refused before the index is asked: the wheel's CUDA cannot be told."""
    if broken == "absent":
        shutil.rmtree(image["site"] / "torch")
    else:
        (image["site"] / "torch" / "version.py").write_bytes(b"\xff\xfe not text")
    asked = len(index.log)
    result = run_step(image, "--wheel-index", index.index_url("variants"))
    assert_refused(result, 1, image)
    assert "torch.version.cuda" in result.stderr and "VLLM_ENGINE=image" in result.stderr
    assert ("has no torch" if broken == "absent" else "version.py cannot be read") in result.stderr
    assert len(index.log) == asked


# --- an index that cannot give the wheel: the choices ---------------------------------------------


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
    assert f"{url}: HTTP 404" in result.stderr  # the root: no such commit
    choices_in(result.stderr, pins)


def test_a_closed_port_gives_the_choices(pins: Pins, image: dict[str, Path]) -> None:
    url = f"http://127.0.0.1:{free_port()}/{ARTICLE_COMMIT}/"
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 69, image)
    assert f"{url}cu130/vllm/: cannot connect:" in result.stderr
    choices_in(result.stderr, pins)


def test_a_pinned_name_the_index_does_not_list_is_refused_naming_what_it_lists(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    url = serve(index, tmp_path, "named", pins, base_bytes)
    listed = next((tmp_path / "named-cu130").glob("*.whl")).name
    result = run_step(image, "--wheel-index", url, "--wheel-name", "vllm-9-py3-none-any.whl")
    assert_refused(result, 69, image)
    assert "no file vllm-9-py3-none-any.whl (VLLM_WHEEL_NAME)" in result.stderr
    assert f"it lists {listed}" in result.stderr


def test_the_article_wheel_passes_every_check_before_the_install(
    index: WheelIndexServer, tmp_path: Path, pins: Pins, base_bytes: bytes, image: dict[str, Path]
) -> None:
    """In process, the steps before `pip install`: fetched by the {commit} template from the
    cu130/ folder, sha256 of the bytes served, commit c50aca144."""
    from j0.engine.source.torch_version import parse_version_file
    from j0.image import engine_step
    from j0.pins import wheel_index_for

    wheel = make_wheel(tmp_path / "good", pins.speculator_relpath, base_bytes, requires=["pip>=20"])
    index.add(ARTICLE_COMMIT, wheel, variant="cu130")
    url = wheel_index_for(index.url + "/{commit}/", pins.vllm_commit)
    torch_file = image["site"] / "torch" / "version.py"
    torch = parse_version_file(torch_file.read_text(), str(torch_file))
    assert (torch.version, torch.cuda, torch.hip) == ("2.14.0+cu130", "13.0", None)
    fetched = engine_step.fetch(pins, url, "", tmp_path / "dl", torch)
    path, digest, link = fetched.path, fetched.sha256, fetched.link
    assert (fetched.variant, fetched.source.folder) == ("cu130", "cu130")
    assert fetched.source.index == f"{url}cu130/"
    assert path.read_bytes() == wheel.read_bytes()
    assert digest == hashlib.sha256(wheel.read_bytes()).hexdigest() == link.sha256
    facts = engine_step.read_wheel(path, digest)
    engine_step.check_sha256(facts, digest, link.sha256, url)
    cuda, why = engine_step.check_cuda(fetched, facts, torch, pins, url)
    assert cuda.cuda == "" and why.endswith("; the wheel's own metadata names no CUDA")
    engine_step.check_commit(facts.engine, pins, "the wheel")
    assert facts.engine.commit == "c50aca144" and facts.requires_dist == ["pip>=20"]


# --- the install, then `pip check` in the image ---------------------------------------------------


@pytest.fixture
def venv_image(tmp_path: Path) -> dict[str, Path]:
    """The stand-in image's Python (a venv, real pip): the release's vllm, pip, torch 2.14.0 for
    CUDA 13.0, and a torchvision whose own requirement (pillow) the base lacks: a problem of the
    base that is not the wheel's, which pip check names too."""
    python, site = sites.image_venv(tmp_path / "venv")
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")  # the dist-info pip's own code lacks here
    sites.torch(site, "13.0")
    sites.installed(site, "torchvision", "0.29.0", requires=["pillow", "torch==2.14.0"])
    return {
        "python": python,
        "site": site,
        "home": j0_copy(tmp_path),
        "work": tmp_path / "work",
        "record": tmp_path / "rec.json",
    }


def run_whole(venv: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(venv["python"]), "-I", "-c", WHOLE, str(venv["home"] / "scripts")]
    cmd += ["--engine", "wheel", "--work", str(venv["work"]), "--record", str(venv["record"])]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False, timeout=180)


OTHER = "torchvision 0.29.0 requires pillow, which is not installed."


def test_pip_check_in_the_image_lists_the_wheels_unmet_requirements_each(
    index: WheelIndexServer,
    tmp_path: Path,
    pins: Pins,
    base_bytes: bytes,
    venv_image: dict[str, Path],
) -> None:
    """Installed with --no-deps, `pip check` finds two of the wheel's requirements unmet (a torch
    of another version, a package not installed): the build stops, listing both. What pip check
    says of the base's own torchvision is not the wheel's and is not listed; a requirement for
    another platform or an extra is none (pip's reading of markers)."""
    requires = [
        "torch==2.99.0",
        "xgrammar>=0.1.30",
        "pip>=20",
        "pywin32; sys_platform == 'win32'",
        "soundfile; extra == 'audio'",
    ]
    url = serve(index, tmp_path, "unmet", pins, base_bytes, requires=requires)
    result = run_whole(venv_image, "--wheel-index", url)
    assert result.returncode == 1, result.stdout + result.stderr
    err = result.stderr
    assert err.startswith("j0 image engine step: error: vllm-0.33.1.dev3+gc50aca144-py3-none-any")
    assert "`pip check` in the base image" in err
    assert "finds 2 of the wheel's requirements unmet by the image's packages" in err
    version = "vllm 0.33.1.dev3+gc50aca144"
    assert f"\n  {version} has requirement torch==2.99.0, but you have torch 2.14.0.\n" in err
    assert f"\n  {version} requires xgrammar, which is not installed.\n" in err
    for absent in ("torchvision", "pywin32", "soundfile", "pip>=20", "Traceback"):
        assert absent not in err, absent
    assert "VLLM_ENGINE=image" in err
    assert not venv_image["record"].exists()


def test_the_whole_route_installs_with_pip_and_records_the_variant(
    index: WheelIndexServer,
    tmp_path: Path,
    pins: Pins,
    base_bytes: bytes,
    venv_image: dict[str, Path],
) -> None:
    """The wheel's requirements met: pip replaces the release's vllm by the cu130/ wheel, the
    record names the variant and the base's torch, and pip check's line about the base's own
    torchvision is recorded and noted, not refused."""
    url = serve(index, tmp_path, "met", pins, base_bytes, requires=["pip>=20", "torch>=2.14"])
    result = run_whole(venv_image, "--wheel-index", url)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "variant cu130/ for the base's torch 2.14.0+cu130 (torch.version.cuda 13.0)" in out
    assert "`pip check`: the wheel's 2 Requires-Dist are met by the image" in out
    assert "problem(s) of the base's other packages (not the wheel's requirements" in out
    assert f"\n  {OTHER}" in out
    record = json.loads(venv_image["record"].read_text())
    assert record["route"] == "wheel" and record["installer"] == "pip"
    assert (record["wheel_variant"], record["wheel_variant_index"]) == ("cu130", f"{url}cu130/")
    assert record["wheel_folder"] == "cu130" and record["wheel_cuda"] == ""  # the folder's word
    assert record["wheel_folder_why"].startswith("the index's cu130/ folder, the variant of the ")
    assert record["wheel_folder_why"].endswith("; the wheel's own metadata names no CUDA")
    assert (record["torch_version"], record["torch_cuda"]) == ("2.14.0+cu130", "13.0")
    assert record["pip_check"] == "ok" and record["pip_check_other"] == [OTHER]
    assert record["engine_commit"] == "c50aca144"
    listing = sorted(p.name for p in venv_image["site"].iterdir())
    assert "vllm-0.33.1.dev3+gc50aca144.dist-info" in listing
    assert "vllm-0.33.0.dist-info" not in listing


def test_pip_check_lines_are_split_by_project() -> None:
    """pip's and uv's line forms (pip/_internal/commands/check.py; `uv pip check`), names
    compared canonicalised; lines that are no problem are neither."""
    from j0.image.engine_step import split_pip_check

    output = "\n".join(
        [
            "vllm 0.33.1 requires xgrammar, which is not installed.",
            "vLLM 0.33.1 has requirement torch==2.99.0, but you have torch 2.14.0.",
            "torchvision 0.29.0 requires pillow, which is not installed.",
            "vllm-flash-attn 2.7.0 has requirement vllm==0.33.0, but you have vllm 0.33.1.",
            "vllm 0.33.1 is not supported on this platform",
            "The package `vllm` requires `outlines`, but it's not installed",
            "No broken requirements found.",
            "Checked 3 packages in 0.55ms",
        ]
    )
    own, other = split_pip_check(output, "vllm")
    assert own == [
        "vllm 0.33.1 requires xgrammar, which is not installed.",
        "vLLM 0.33.1 has requirement torch==2.99.0, but you have torch 2.14.0.",
        "vllm 0.33.1 is not supported on this platform",
        "The package `vllm` requires `outlines`, but it's not installed",
    ]
    assert other == [
        "torchvision 0.29.0 requires pillow, which is not installed.",
        "vllm-flash-attn 2.7.0 has requirement vllm==0.33.0, but you have vllm 0.33.1.",
    ]


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
    from j0.engine.source.wheel_index import fits_here

    assert fits_here(name, machine) is fits


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("vllm-0.33.1.dev3+gc50aca144-cp38-abi3-manylinux_2_28_x86_64.whl", ""),
        ("vllm-0.33.1.dev3+gc50aca144.cu130-cp38-abi3-manylinux_2_28_x86_64.whl", "cu130"),
        ("vllm-0.10.2rc2+cu129-cp38-abi3-manylinux2014_aarch64.whl", "cu129"),
        ("vllm-0.11.0+cpu-cp38-abi3-manylinux_2_35_x86_64.whl", "cpu"),
        ("vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl", ""),
    ],
)
def test_a_wheels_variant_is_read_from_its_local_version(name: str, variant: str) -> None:
    """The file names of vLLM's index generator's docstring (generate-nightly-index.py)."""
    from j0.engine.source.wheel_index import wheel_variant

    assert wheel_variant(name) == variant


@pytest.mark.parametrize(
    ("cuda", "variant"), [("13.0", "cu130"), ("12.9", "cu129"), ("12.8", "cu128"), (None, "cpu")]
)
def test_torch_cuda_names_the_variant_folder(cuda: str | None, variant: str) -> None:
    from j0.engine.source.wheel_index import variant_of_cuda

    assert variant_of_cuda(cuda) == variant


def test_the_build_step_reads_the_engine_record_typed_and_refuses_other_kinds(
    tmp_path: Path,
) -> None:
    """What the engine step writes reads back as it was; a record of another route or with a
    key of another kind is refused naming the file and the key (exit 2), never put into the
    manifest."""
    from j0.errors import J0Error
    from j0.image.build_step import read_engine_record
    from j0.image.engine_step import EngineRecord

    made = EngineRecord(route="wheel", wheel_name="vllm-0.33.0.whl", torch_cuda="13.0")
    path = tmp_path / "engine.json"
    path.write_text(json.dumps(made.to_json(), indent=2) + "\n")
    assert read_engine_record(path) == made
    for key, value, said in (
        ("route", "docker", "'route' is \"docker\", expected wheel or image"),
        ("requires_dist", "3", "'requires_dist' is \"3\", expected a whole number"),
        ("torch_cuda", 13, "'torch_cuda' is 13, expected a string or null"),
    ):
        path.write_text(json.dumps({**made.to_json(), key: value}))
        with pytest.raises(J0Error) as caught:
            read_engine_record(path)
        assert f"{path}: {said}" in str(caught.value) and caught.value.exit_code == 2
