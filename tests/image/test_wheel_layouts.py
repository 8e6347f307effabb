"""The wheel route against the three ways vLLM's per-commit index may hold a commit's CUDA 13
wheel, without Docker: the engine step (j0.image.engine_step) against a local PEP 503 index of
ours on 127.0.0.1 laid out as vLLM's (tests/servers/wheel_index_server.py; vLLM's
https://wheels.vllm.ai cannot be reached from the test machines), serving stand-in wheels made at
test time (tests/standin/wheels.py) whose file names and METADATA say their CUDA as vLLM's do.

vLLM's index scripts alias the root's default-variant wheel as `cu129/` whatever its CUDA, while
vLLM 0.33/0.34 build CUDA 13.0 by default and other variants on demand, so a commit may have:
(a) a `cu130/` folder: taken; (b) only its root, holding the CUDA 13 wheel, with a `cu129/`
alias beside it: the root taken, because its wheel's own METADATA says CUDA 13; (c) a root whose
wheel is CUDA 12.9: refused, naming both CUDAs. The same layouts go through the real
`docker build` in tests/image/test_wheel_image.py.

The runs that stop before the install are as in tests/image/test_wheel_route.py (the step run by
`python3 -I -S` on a fake site-packages, the install replaced by a stop); the install and
`pip check` run for real in a virtual environment that stands in for the image's Python.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from image.test_wheel_route import (
    assert_reached_install,
    assert_refused,
    j0_copy,
    run_step,
    run_whole,
)
from j0.pins import Pins
from servers.wheel_index_server import WheelIndexServer
from standin import sites
from standin.wheels import ARTICLE_VERSION, CUDA13_REQUIRES, CUDA129_REQUIRES, make_wheel

# A variant wheel of the article's commit carries its CUDA in its local version; the root's
# (vLLM's default variant) carries none.
CU130 = ("0.33.1.dev3+gc50aca144.cu130", "gc50aca144")
ROOT_NAME = "vllm-0.33.1.dev3+gc50aca144-py3-none-any.whl"
CU130_NAME = "vllm-0.33.1.dev3+gc50aca144.cu130-py3-none-any.whl"


@pytest.fixture(scope="module")
def index(
    pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WheelIndexServer]:
    """The three layouts, one index prefix each, and a root whose wheel names no CUDA:
    layout-a  cu130/ (a `.cu130` wheel), beside a root of CUDA 12.9 with its cu129/ alias;
    layout-b  the root's CUDA 13 wheel and its cu129/ alias (the same file), no cu130/;
    layout-c  the root's CUDA 12.9 wheel and its cu129/ alias, no cu130/;
    no-cuda   the root's wheel, whose METADATA names no CUDA, and its cu129/ alias."""
    folder = tmp_path_factory.mktemp("layouts")
    rel = pins.speculator_relpath

    def wheel(name: str, version: tuple[str, str] = ARTICLE_VERSION, **kw: list[str]) -> Path:
        return make_wheel(folder / name, rel, base_bytes, version=version, requires=kw["requires"])

    cuda13 = wheel("cuda13", requires=list(CUDA13_REQUIRES))
    cuda129 = wheel("cuda129", requires=list(CUDA129_REQUIRES))
    no_cuda = wheel("no-cuda", requires=["pip>=20"])
    with WheelIndexServer() as server:
        cu130 = wheel("cu130", version=CU130, requires=list(CUDA13_REQUIRES))
        server.add("layout-a", cu130, variant="cu130")
        for prefix, root in (
            ("layout-a", cuda129),
            ("layout-b", cuda13),
            ("layout-c", cuda129),
            ("no-cuda", no_cuda),
        ):
            server.add(prefix, root)
            server.add(prefix, root, variant="cu129")  # vLLM's alias of the root
        yield server


@pytest.fixture
def image(tmp_path: Path) -> dict[str, Path]:
    """A copy of j0 and the fake site-packages of the "image": the release's vllm, pip and
    torch 2.14.0 for CUDA 13.0."""
    site = tmp_path / "dist-packages"
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")
    sites.torch(site, "13.0")
    home = j0_copy(tmp_path)
    return {"home": home, "site": site, "work": tmp_path / "work", "record": tmp_path / "r.json"}


def test_a_cu130_folder_is_taken_and_the_root_is_not_asked(
    index: WheelIndexServer, image: dict[str, Path]
) -> None:
    """Layout (a): the cu130/ folder's wheel, although the root holds another CUDA's."""
    result = run_step(image, "--wheel-index", index.index_url("layout-a"))
    assert_reached_install(result, CU130_NAME)
    assert "/layout-a/cu130/vllm/" in index.requested()
    assert "/layout-a/vllm/" not in index.requested()


def test_the_roots_cuda13_wheel_is_taken_where_there_is_no_cu130_folder(
    index: WheelIndexServer, image: dict[str, Path]
) -> None:
    """Layout (b): no cu130/ folder, a cu129/ alias beside the root: the root's wheel, whose
    METADATA says CUDA 13, reaches the install."""
    result = run_step(image, "--wheel-index", index.index_url("layout-b"))
    assert_reached_install(result, ROOT_NAME)
    assert "/layout-b/vllm/" in index.requested()


def test_a_root_wheel_of_cuda_12_9_is_refused_naming_both_cudas(
    index: WheelIndexServer, image: dict[str, Path], pins: Pins
) -> None:
    """Layout (c): the root's wheel is CUDA 12.9 by its METADATA, the base's torch CUDA 13.0:
    refused (69) with both named and the choices; nothing installed or recorded."""
    url = index.index_url("layout-c")
    result = run_step(image, "--wheel-index", url)
    assert_refused(result, 69, image)
    err = result.stderr
    assert "the index has no cu130/ folder (it has cu129/), so the root's wheel" in err
    assert f"{ROOT_NAME} is CUDA 12.9 (" in err
    assert (
        "Requires-Dist nvidia-cuda-runtime-cu12==12.9.79; platform_system == 'Linux': CUDA 12.9"
        in err
    )
    assert "Requires-Dist nvidia-cutlass-dsl[cu12]==4.8.0: CUDA 12" in err
    assert "the base image's torch 2.14.0+cu130 (CUDA 13.0, " in err
    assert ") is CUDA 13.0: a vllm wheel built for another CUDA" in err
    assert "The choices:" in err and f"VLLM_IMAGE={pins.vllm_image_fallback}" in err
    assert not list(image["work"].glob("*.whl"))  # the refused download is not kept


def test_a_root_wheel_that_names_no_cuda_is_refused(
    index: WheelIndexServer, image: dict[str, Path]
) -> None:
    """The root is taken only for a wheel whose own CUDA is the torch's: one that says none is
    refused (69), saying so."""
    result = run_step(image, "--wheel-index", index.index_url("no-cuda"))
    assert_refused(result, 69, image)
    assert (
        f"{ROOT_NAME} is of no CUDA it names (neither its file name's local version"
        in result.stderr
    )
    assert "nothing says it goes with that torch" in result.stderr


def test_the_cu129_alias_of_a_cuda13_root_is_refused_for_a_cuda_12_9_torch(
    index: WheelIndexServer, tmp_path: Path
) -> None:
    """A base whose torch is CUDA 12.9 gets layout (b)'s cu129/ folder, vLLM's alias of a root
    that is CUDA 13: the wheel's own METADATA wins over the folder's name (refused, exit 1)."""
    site = tmp_path / "site"
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")
    sites.torch(site, "12.9")
    image = {"home": j0_copy(tmp_path), "site": site}
    image.update(work=tmp_path / "work", record=tmp_path / "r.json")
    result = run_step(image, "--wheel-index", index.index_url("layout-b"))
    assert_refused(result, 1, image)
    assert f"{ROOT_NAME} is CUDA 13 (Requires-Dist nvidia-cutlass-dsl[cu13]==4.8.0: CUDA 13)" in (
        result.stderr
    )
    assert "but it came from the cu129/ folder" in result.stderr
    assert "torch 2.14.0+cu129 (CUDA 12.9, " in result.stderr and ") is CUDA 12.9" in result.stderr


@pytest.fixture
def venv_image(tmp_path: Path) -> dict[str, Path]:
    """The stand-in image's Python (a venv, real pip): the release's vllm, pip, torch 2.14.0 for
    CUDA 13.0 and nvidia-cutlass-dsl 4.8.0 (what a CUDA 13 wheel's METADATA requires here)."""
    python, site = sites.image_venv(tmp_path / "venv")
    sites.release_vllm(site)
    sites.installed(site, "pip", "23.0.1")
    sites.torch(site, "13.0")
    sites.installed(site, "nvidia-cutlass-dsl", "4.8.0")
    home = j0_copy(tmp_path)
    return {
        "python": python,
        "site": site,
        "home": home,
        "work": tmp_path / "work",
        "record": tmp_path / "r.json",
    }


def test_the_record_says_the_root_was_taken_and_why(
    index: WheelIndexServer, venv_image: dict[str, Path]
) -> None:
    """Layout (b), the whole step, pip install and pip check included: the record names the
    root, why, and the wheel's CUDA with what said it. (Layout (a)'s record: the whole-route test
    of tests/image/test_wheel_route.py.)"""
    url = index.index_url("layout-b")
    why = (
        "the index has no cu130/ folder (it has cu129/), so the root's wheel (vLLM's default "
        "CUDA variant) is judged by its own CUDA; the wheel is CUDA 13 by Requires-Dist "
        "nvidia-cutlass-dsl[cu13]==4.8.0: CUDA 13"
    )
    result = run_whole(venv_image, "--wheel-index", url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"j0 image engine step: installed {ROOT_NAME} " in result.stdout
    assert f"j0 image engine step: folder root: {why}\n" in result.stdout
    record = json.loads(venv_image["record"].read_text())
    assert (record["wheel_folder"], record["wheel_folder_why"]) == ("root", why)
    assert (record["wheel_cuda"], record["wheel_variant"]) == ("13", "cu130")
    assert record["wheel_cuda_from"] == ["Requires-Dist nvidia-cutlass-dsl[cu13]==4.8.0: CUDA 13"]
    assert record["wheel_variant_index"] == url
    assert record["wheel_url"] == url + ROOT_NAME.replace("+", "%2B")  # the root's own file
    assert record["pip_check"] == "ok" and record["engine_commit"] == "c50aca144"


# --- the wheel's own CUDA, read from its name and METADATA ----------------------------------------

ROOT_WHEEL = "vllm-0.33.1.dev3+gc50aca144-cp38-abi3-manylinux_2_28_x86_64.whl"


@pytest.mark.parametrize(
    ("name", "requires", "cuda"),
    [
        # vLLM 0.33.0's own CUDA 13 requirements (its METADATA), no label: CUDA 13.
        (ROOT_WHEEL, ["torch==2.14.0", "nvidia-cutlass-dsl[cu13]==4.8.0"], "13"),
        # A variant wheel's label.
        ("vllm-0.33.1.dev3+gc50aca144.cu129-cp38-abi3-manylinux_2_28_x86_64.whl", [], "12.9"),
        ("vllm-0.11.0+cpu-cp38-abi3-manylinux_2_35_x86_64.whl", [], "cpu"),
        # NVIDIA's per-CUDA packages: the suffix says the major; nvidia-cuda-* pins the minor.
        (ROOT_WHEEL, ["nvidia-cuda-runtime-cu12==12.9.79"], "12.9"),
        (ROOT_WHEEL, ["nvidia_cuda_nvrtc_cu13 == 13.0.48"], "13.0"),
        (ROOT_WHEEL, ["nvidia-cublas-cu12==12.8.4.1"], "12"),
        (ROOT_WHEEL, ["nvidia-nccl-cu13>=2.27; platform_system == 'Linux'"], "13"),
        (ROOT_WHEEL, ["cuda-toolkit[cublas]==13.0.2"], "13.0"),
        # A torch pin says a CUDA only with a local label.
        (ROOT_WHEEL, ["torch==2.14.0+cu130"], "13.0"),
        (ROOT_WHEEL, ["torch==2.14.0"], ""),
        # Under one of vllm's own extras: not installed by the route, no finding.
        (ROOT_WHEEL, ["nvidia-nccl-cu12; extra == 'bench'"], ""),
        (ROOT_WHEEL, ["pip>=20", "xgrammar>=0.1.30"], ""),
        # Findings that disagree: unknown.
        ("vllm-0.33.1+g1.cu129-py3-none-any.whl", ["nvidia-cutlass-dsl[cu13]"], ""),
        (ROOT_WHEEL, ["nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cuda-nvrtc-cu12==12.9.86"], ""),
        ("vllm-0.11.0+cpu-py3-none-any.whl", ["nvidia-nccl-cu12"], ""),
        # Findings that agree: the most precise.
        (ROOT_WHEEL, ["nvidia-cutlass-dsl[cu12]", "nvidia-cuda-runtime-cu12==12.9.79"], "12.9"),
    ],
)
def test_the_wheels_cuda_is_read_from_its_label_and_requirements(
    name: str, requires: list[str], cuda: str
) -> None:
    from j0.engine.source.wheel_cuda import of_wheel

    assert of_wheel(name, requires).cuda == cuda


@pytest.mark.parametrize(
    ("wheel", "torch", "fits"),
    [
        ("13", "13.0", True),
        ("13.0", "13.0", True),
        ("13", "12.9", False),
        ("12.9", "13.0", False),
        ("12.8", "12.9", False),
        ("cpu", None, True),
        ("13", None, False),
        ("cpu", "13.0", False),
        ("", "13.0", None),
    ],
)
def test_a_wheels_cuda_fits_a_torch_of_the_same_cuda(
    wheel: str, torch: str | None, fits: bool | None
) -> None:
    from j0.engine.source.wheel_cuda import WheelCuda

    assert WheelCuda(wheel, ()).fits(torch) is fits
