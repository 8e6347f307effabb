"""The plugin route with Docker: the real docker/plugin.Dockerfile built on stand-in V
(tests/standin/build.py: bookworm with Debian's pip and vllm 0.34.0's Python files and dist-info,
no compiled part, no registry used), with no network: j0 pip-installed with the image's own
setuptools, the plugin's guard passing on the image's vLLM, its pins read from inside the
installed package; then `j0 serve --dry-run` in the image on compose.plugin.yaml's command line,
as compose renders it (J0 off, the prefix-safe variant), judged by the plugin's parser and guard.
Also: the same build on stand-in W (vLLM 0.33.0 with pip) stops at the guard, naming what is
supported."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import OwnImages, require_docker, standin_images
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
SITE = "/usr/local/lib/python3.11/dist-packages"
CAUSAL = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 5,
    "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 4},
}

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("docker-w")]


def build(base: str, tag: str, own_images: OwnImages) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [
            "docker",
            "build",
            "--network",
            "none",
            "-f",
            "docker/plugin.Dockerfile",
            "--build-arg",
            f"VLLM_IMAGE={base}",
            "-t",
            tag,
            ".",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    own_images.record_output(done.stdout + done.stderr)
    return done


@pytest.fixture(scope="module")
def image(own_images: OwnImages) -> str:
    require_docker()
    from j0.pins import load_pins
    from standin.build import image_v

    (base,) = standin_images(lambda: image_v(load_pins(ROOT)))
    tag = own_images.tag("plugin")
    done = build(base, tag, own_images)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tag


def run(image: str, *args: str, mounts: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    volumes = [x for m in mounts for x in ("-v", m)]
    return subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            *volumes,
            "-e",
            "J0_SERVE_ARGS_READER=table",
            "--entrypoint",
            args[0],
            image,
            *args[1:],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_image_holds_the_plugin_and_vllms_files_unchanged(image: str, pins: Pins) -> None:
    probe = (
        "import hashlib, json, importlib.metadata as m, j0.plugin.proven as p; "
        "path = p.installed(p.plugin_pins().speculator_relpath).speculator; "
        "print(json.dumps({'entry': [e.value for e in m.entry_points(group='vllm.general_plugins')"
        " if e.name == 'j0'], 'sha': hashlib.sha256(path.read_bytes()).hexdigest(), "
        "'pins': str(p.plugin_pins().root)}))"
    )
    done = run(image, "python3", "-c", probe)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {
        "entry": ["j0.plugin.register:register"],
        "sha": pins.values["V0340_BASE_SHA256"],
        "pins": f"{SITE}/j0/plugin/data",
    }


def test_j0_serve_judges_composes_command_line(image: str, tmp_path: Path) -> None:
    rendered = subprocess.run(
        [
            "docker",
            "compose",
            "--env-file",
            "/dev/null",
            "-f",
            "compose.plugin.yaml",
            "config",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "J0_ON": "false",
            "J0_VARIANT": "prefix-safe",
        },
    )
    assert rendered.returncode == 0, rendered.stderr
    server = json.loads(rendered.stdout)["services"]["server"]
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps(CAUSAL))
    entry = server["entrypoint"]
    assert entry[:3] == ["j0", "serve", "--then"]
    done = run(
        image,
        "j0",
        "serve",
        "--dry-run",
        *entry[2:],
        *server["command"],
        mounts=(f"{drafter}:/drafter:ro",),
    )
    assert done.returncode == 0, done.stderr
    assert "plugin route: method dflash_j0, J0 off (baseline), variant prefix-safe" in done.stderr
    assert "plugin route: vLLM 0.34.0 at " in done.stderr
    assert "is proven (sha256 0044839fe26b5701" in done.stderr


def test_a_vllm_it_was_not_proven_on_stops_the_build(own_images: OwnImages, pins: Pins) -> None:
    require_docker()
    from standin.build import image_w

    (base,) = standin_images(lambda: image_w(pins))
    done = build(base, own_images.tag("plugin-on-033"), own_images)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "j0 plugin: vLLM 0.33.0 with " in output
    assert (
        f"sha256 {pins.base_sha256}: not a vLLM it was proven on (supported: vLLM 0.34.0" in output
    )
