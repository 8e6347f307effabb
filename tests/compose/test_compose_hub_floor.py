"""compose's drafter service on the dependency floor vLLM 0.33 allows: the image built (route
image) on stand-in F (tests/standin/build.py: stand-in A plus huggingface_hub 1.31.0 and httpx, no
httpx2, the packages pinned by requirements/hub-floor.txt and requirements/test.txt), then
`docker compose run drafter` against our Hub stand-in (tests/servers/hub/server.py) on 127.0.0.1,
host networking (compose.ci.yaml). The same service runs on huggingface_hub 2.4 in
test_compose_up.py; a real vLLM image may hold either.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from compose_cli import compose, compose_env, require_compose

from conftest import OwnImages
from j0.pins import Pins
from servers.local import HubProcess

# The second Docker worker (tests/worker_plan.py), beside stand-in B's chain.
pytestmark = pytest.mark.xdist_group("docker-w")

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@pytest.mark.docker
@pytest.mark.slow
def test_the_drafter_service_runs_on_huggingface_hub_1_31(
    pins: Pins, tmp_path: Path, own_images: OwnImages
) -> None:
    from conftest import RUN_ID, require_docker, standin_images

    require_docker()
    require_compose()
    from standin import build as standin

    (base,) = standin_images(lambda: standin.image_f(pins))
    project = f"j0-floor-test-{RUN_ID}"
    tag = own_images.tag("compose-floor")
    home = tmp_path / "home"
    home.mkdir()
    drafter_dir = tmp_path / "drafter"
    files = ("compose.yaml", "compose.ci.yaml")
    hub = HubProcess()
    env = compose_env(
        home,
        VLLM_ENGINE="image",
        VLLM_IMAGE=base,
        J0_IMAGE=tag,
        HF_HOME=str(home / "hf"),
        HF_ENDPOINT=hub.url,
        DRAFTER_DIR=str(drafter_dir),
    )
    try:
        built = compose(
            ["--ansi", "never", "-p", project, "build", "server"], env, files, timeout=1200
        )
        own_images.record_output(ANSI.sub("", built.stdout + built.stderr))
        own_images.record_tag(tag)
        assert built.returncode == 0, built.stdout + built.stderr
        probe = "import huggingface_hub, importlib.util as u; "
        probe += "print(huggingface_hub.__version__, u.find_spec('httpx2') is None)"
        found = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                "--entrypoint",
                "python3",
                tag,
                "-c",
                probe,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert found.stdout.split() == ["1.31.0", "True"], found.stdout + found.stderr
        ran = compose(
            ["--ansi", "never", "-p", project, "run", "--rm", "drafter"], env, files, timeout=600
        )
        output = ANSI.sub("", ran.stdout + ran.stderr)
    finally:
        hub.stop()
        compose(["-p", project, "down", "--remove-orphans"], env, files)
    assert ran.returncode == 0, output
    assert "No module named" not in output
    assert "all 5 draft layers causal" in output
    config = json.loads((drafter_dir / "config.json").read_text())
    assert config["dflash_config"]["causal"] is True
    assert (drafter_dir / "config.json.orig").is_file()
