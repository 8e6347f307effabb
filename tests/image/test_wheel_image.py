"""The wheel route with Docker: the real docker/Dockerfile built on stand-in W
(tests/standin/build.py: bookworm with Debian's pip and the real vllm 0.33.0 wheel unpacked, no
registry used) with a layer of ours on top holding a torch whose torch/version.py says CUDA 13.0
(tests/standin/sites.py; the release image's torch is a CUDA 13.0 build) and the dist-info of
nvidia-cutlass-dsl 4.8.0 (a CUDA 13 wheel's METADATA requires it), its vllm replaced by a
stand-in wheel of commit c50aca14 (tests/standin/wheels.py, made at test time) served by our
PEP 503 index on 127.0.0.1, laid out as vLLM's (tests/servers/wheel_index_server.py: vLLM's
wheels.vllm.ai cannot be reached from CI). The build reaches that index only with host
networking (`docker build --network host`), as the compose tests reach the local Hub.

The three layouts of a commit's CUDA 13 wheel (vLLM's index scripts alias the root as cu129/
while vLLM builds CUDA 13.0 by default): (a) a cu130/ folder: taken (the `docker build` test);
(b) the root's CUDA 13 wheel with a cu129/ alias, no cu130/: the root taken, by the wheel's own
METADATA (the `j0 image build` test); (c) a root whose wheel is CUDA 12.9: refused, naming both
CUDAs. The manifest says which folder was taken and why.

Also checked: the manifest, the labels and `j0 image identity` name the wheel, its variant, its
sha256 and engine commit c50aca144; a wheel of the release's commit 4ba787ec9, one of whose
requirements `pip check` in the image finds unmet, an index with neither a cu130/ folder nor a
root wheel, an index without the commit (404) and a closed port are each refused with their
reason; the smoke checks pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import OwnImages
from j0.cli import main
from j0.pins import Pins
from servers.base import free_port
from servers.wheel_index_server import WheelIndexServer
from standin import sites
from standin.wheels import CUDA13_REQUIRES, CUDA129_REQUIRES, RELEASE_VERSION, make_wheel

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
SITE = "/usr/local/lib/python3.11/dist-packages"
# What the base has: Debian's pip, the layer's torch and nvidia-cutlass-dsl; what it lacks: the
# others (for another platform, under an extra).
MET = [
    "pip>=20",
    "pywin32; sys_platform == 'win32'",
    "soundfile; extra == 'audio'",
    *CUDA13_REQUIRES,
]

# The second Docker worker (tests/worker_plan.py): W is made from a debootstrap of its own.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("docker-w")]


@pytest.fixture(scope="module")
def base_w(
    pins: Pins, own_images: OwnImages, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """W with torch 2.14.0 for CUDA 13.0 (its torch/version.py and dist-info, nothing else),
    the wheel route's CUDA, and nvidia-cutlass-dsl 4.8.0's dist-info."""
    from conftest import require_docker, standin_images

    require_docker()
    from standin import build as standin

    (image,) = standin_images(lambda: standin.image_w(pins))
    context = tmp_path_factory.mktemp("w-torch")
    sites.torch(context / "site", "13.0")
    sites.installed(context / "site", "nvidia-cutlass-dsl", "4.8.0")
    (context / "Dockerfile").write_text(f"FROM {image}\nCOPY site/ {SITE}/\n")
    tag = own_images.tag("w-torch-cu130")
    env = dict(os.environ, DOCKER_BUILDKIT="0")
    result = subprocess.run(
        ["docker", "build", "--network", "none", "-t", tag, str(context)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    own_images.record_output(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout + result.stderr
    yield tag


@pytest.fixture(scope="module")
def index(
    pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WheelIndexServer]:
    """The index: the article's CUDA 13 wheel in /<VLLM_COMMIT>/cu130/ (layout a), the refused
    ones under names (`cu129-only`: the article's wheel, but in the cu129/ folder alone, no root
    wheel; `root-cu129`: a root whose wheel is CUDA 12.9, with its cu129/ alias: layout c)."""
    folder = tmp_path_factory.mktemp("wheels")
    rel = pins.speculator_relpath
    with WheelIndexServer() as server:
        article = make_wheel(folder / "article", rel, base_bytes, requires=MET)
        server.add(pins.vllm_commit, article, variant="cu130")
        server.add("cu129-only", article, variant="cu129")
        cuda129 = make_wheel(folder / "cuda129", rel, base_bytes, requires=CUDA129_REQUIRES)
        server.add("root-cu129", cuda129)
        server.add("root-cu129", cuda129, variant="cu129")
        release = make_wheel(folder / "release", rel, base_bytes, version=RELEASE_VERSION)
        server.add("release", release, variant="cu130")
        unmet = make_wheel(folder / "unmet", rel, base_bytes, requires=[*MET, "torch==2.99.0"])
        server.add("unmet", unmet, variant="cu130")
        yield server


@pytest.fixture(scope="module")
def root_index(
    pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WheelIndexServer]:
    """Layout (b) at /<VLLM_COMMIT>/: the article's CUDA 13 wheel at the root with its cu129/
    alias (the same file), no cu130/ folder."""
    folder = tmp_path_factory.mktemp("root-wheels")
    with WheelIndexServer() as server:
        article = make_wheel(folder, pins.speculator_relpath, base_bytes, requires=MET)
        server.add(pins.vllm_commit, article)
        server.add(pins.vllm_commit, article, variant="cu129")
        yield server


def article_wheel(index: WheelIndexServer, pins: Pins) -> tuple[str, str]:
    served = index.files[pins.vllm_commit][0]
    return served.name, hashlib.sha256(served.data).hexdigest()


@pytest.fixture(scope="module")
def built(own_images: OwnImages) -> OwnImages:
    return own_images


def wheel_build(
    built: OwnImages, base: str, tag: str, wheel_index: str
) -> subprocess.CompletedProcess[str]:
    """`docker build` (legacy builder) on `base` by the wheel route, host networking."""
    env = dict(os.environ, DOCKER_BUILDKIT="0")
    cmd = ["docker", "build", "--network", "host", "--force-rm"]
    cmd += ["--build-arg", f"VLLM_IMAGE={base}", "--build-arg", "VLLM_ENGINE=wheel"]
    cmd += ["--build-arg", f"WHEEL_INDEX={wheel_index}", "-f", "docker/Dockerfile", "-t", tag, "."]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    built.record_output(result.stdout + result.stderr)
    return result


def docker_out(*args: str) -> str:
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def run_in(image: str, entrypoint: str, *args: str) -> str:
    return docker_out("run", "--rm", "--network", "none", "--entrypoint", entrypoint, image, *args)


@pytest.fixture(scope="module")
def wheel_image(base_w: str, index: WheelIndexServer, built: OwnImages) -> tuple[str, str]:
    tag = built.tag("wheel-route")
    result = wheel_build(built, base_w, tag, index.url + "/{commit}/")  # the pins' template form
    assert result.returncode == 0, result.stdout + result.stderr
    return tag, result.stdout + result.stderr


def test_the_wheel_route_installs_the_commits_wheel_and_the_article_file(
    wheel_image: tuple[str, str], index: WheelIndexServer, pins: Pins, base_w: str
) -> None:
    tag, output = wheel_image
    name, sha256 = article_wheel(index, pins)
    assert f"j0 image engine step: installed {name} sha256={sha256}" in output
    assert "with pip --no-deps" in output
    assert "variant cu130/ for the base's torch 2.14.0+cu130 (torch.version.cuda 13.0)" in output
    assert "engine vLLM 0.33.1.dev3+gc50aca144 commit c50aca144" in output
    assert "`pip check`: the wheel's 5 Requires-Dist are met by the image" in output
    assert (
        "folder cu130: the index's cu130/ folder, the variant of the base image's torch" in output
    )
    assert "warning: the base's vLLM" not in output  # the engine is the pinned commit
    manifest = json.loads(run_in(tag, "cat", "/opt/j0/manifest.json"))
    assert manifest["engine_route"] == "wheel" and manifest["identity"] == "article"
    engine = manifest["engine"]
    assert (engine["wheel_name"], engine["wheel_sha256"]) == (name, sha256)
    assert engine["wheel_index"] == f"{index.url}/{pins.vllm_commit}/"
    assert engine["wheel_variant_index"] == f"{index.url}/{pins.vllm_commit}/cu130/"
    assert (manifest["wheel_variant"], manifest["torch_cuda"]) == ("cu130", "13.0")
    assert manifest["wheel_folder"] == "cu130" and engine["wheel_cuda"] == "13"
    assert manifest["wheel_folder_why"].startswith("the index's cu130/ folder, the variant of ")
    assert manifest["wheel_folder_why"].endswith(
        "; the wheel is CUDA 13 by Requires-Dist nvidia-cutlass-dsl[cu13]==4.8.0: CUDA 13"
    )
    assert engine["pip_check"] == "ok"
    assert engine["engine_commit"] == "c50aca144" and engine["installer"] == "pip"
    assert manifest["vllm_commit"] == "c50aca144" and manifest["vllm_commit_is_pinned"] is True
    assert manifest["base_image"] == base_w
    # pip replaced the release's vllm: its dist-info is gone, the wheel's is there.
    listing = run_in(tag, "ls", SITE).split()
    assert "vllm-0.33.1.dev3+gc50aca144.dist-info" in listing
    assert "vllm-0.33.0.dist-info" not in listing
    line = run_in(tag, "j0", "image", "identity").strip()
    assert line.startswith("j0: vLLM 0.33.1.dev3+gc50aca144 commit c50aca144 (the pinned commit), ")
    assert f"speculator.py sha256={ARTICLE_SHA} identity=article" in line
    labels = json.loads(docker_out("image", "inspect", "--format", "{{json .Config.Labels}}", tag))
    assert labels["j0.engine.route"] == "wheel"
    assert labels["j0.engine.wheel-index"] == index.url + "/{commit}/"
    assert f"/{pins.vllm_commit}/cu130/vllm/" in index.requested()
    assert f"/{pins.vllm_commit}/vllm/" not in index.requested()  # never the root's variant


@pytest.mark.parametrize(
    ("prefix", "needed"),
    [
        ("release", ["says vLLM 0.33.0 commit 4ba787ec9", "not VLLM_COMMIT c50aca14"]),
        (
            "unmet",
            [
                "finds 1 of the wheel's requirements unmet by the image's packages",
                "has requirement torch==2.99.0, but you have torch 2.14.0.",
            ],
        ),
        ("cu129-only", ["no cu130/ folder", "the index has cu129/", "The choices:"]),
        (
            "root-cu129",
            [
                "the index has no cu130/ folder (it has cu129/), so the root's wheel",
                "-py3-none-any.whl is CUDA 12.9 (Requires-Dist nvidia-cutlass-dsl[cu12]",
                ") is CUDA 13.0: a vllm wheel built for another CUDA than the torch beside it",
                "The choices:",
            ],
        ),
        ("no-such-commit", ["no-such-commit/: HTTP 404", "The choices:", "VLLM_ENGINE=image"]),
    ],
)
def test_the_wheel_route_refuses_naming_the_reason(
    base_w: str, index: WheelIndexServer, built: OwnImages, prefix: str, needed: list[str]
) -> None:
    result = wheel_build(built, base_w, built.tag(f"wheel-{prefix}"), index.index_url(prefix))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "j0 image engine step: error:" in output
    for text in needed:
        assert text in output, text
    assert "Traceback" not in output


def test_a_closed_port_is_refused_with_the_choices(
    base_w: str, built: OwnImages, pins: Pins
) -> None:
    url = f"http://127.0.0.1:{free_port()}/{pins.vllm_commit}/"
    result = wheel_build(built, base_w, built.tag("wheel-closed"), url)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{url}cu130/vllm/: cannot connect:" in output and "The choices:" in output
    assert f"VLLM_ENGINE=image VLLM_IMAGE={pins.vllm_image_fallback}" in output


def test_j0_image_build_takes_the_roots_cuda13_wheel_and_smoke_passes_its_checks(
    base_w: str,
    root_index: WheelIndexServer,
    built: OwnImages,
    pins: Pins,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`j0 image build --engine wheel` on layout (b), no cu130/ folder: the root's wheel, whose
    METADATA says CUDA 13, is installed, and the manifest says so and why; labels name the
    pinned commit (the wheel's engine) and the route; the smoke checks file, manifest, engine
    and entrypoint pass (the import cannot: W has no torch)."""
    tag = built.tag("wheel-j0-build")
    args = ["image", "build", "--engine", "wheel", "--base", base_w, "--no-pull", "--tag", tag]
    args += ["--wheel-index", root_index.url + "/{commit}/", "--network", "host"]
    assert main(args) == 0
    out = capsys.readouterr().out
    built.record_output(out)
    assert "route wheel" in out and "j0 image engine step: installed vllm-" in out
    manifest = json.loads(run_in(tag, "cat", "/opt/j0/manifest.json"))
    root = f"{root_index.url}/{pins.vllm_commit}/"
    assert (manifest["wheel_folder"], manifest["wheel_variant"]) == ("root", "cu130")
    assert manifest["wheel_folder_why"].startswith(
        "the index has no cu130/ folder (it has cu129/), so the root's wheel (vLLM's default "
        "CUDA variant) is judged by its own CUDA; the wheel is CUDA 13 by Requires-Dist "
        "nvidia-cutlass-dsl[cu13]==4.8.0: CUDA 13"
    )
    engine = manifest["engine"]
    assert (engine["wheel_cuda"], engine["wheel_variant_index"]) == ("13", root)
    assert engine["wheel_url"].startswith(root) and engine["pip_check"] == "ok"
    assert {f"/{pins.vllm_commit}/cu130/vllm/", f"/{pins.vllm_commit}/vllm/"} <= (
        root_index.requested()
    )
    labels = json.loads(docker_out("image", "inspect", "--format", "{{json .Config.Labels}}", tag))
    assert labels["j0.engine.route"] == "wheel"
    assert labels["j0.vllm.commit"] == "c50aca14416ef29f6ed0ed256302f30646726dcd"
    assert main(["image", "smoke", tag, "--timeout", "300"]) == 1  # the import needs torch
    out = capsys.readouterr().out
    for name in ("file", "manifest", "engine", "entrypoint"):
        assert f"{name:<11} ok" in out, out
    assert "import      FAILED" in out
