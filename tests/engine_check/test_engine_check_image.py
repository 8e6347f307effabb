"""`j0 engine-check --image` end to end on Docker without a GPU: the project's image built by
`j0 image build` on stand-in base A (the real vllm 0.33.0 wheel's files, patched by the real build
step), run by the real docker-py code path (host network, the work folder and the models mounted,
the image's own entrypoint and identity line). Inside, `vllm` is tests/engine_check/container_bin/
vllm: our vLLM stand-in (tests/servers/vllm/server.py) on 127.0.0.1 with the patch's log lines and
recorded real engine dumps. `--no-gpu` is the only difference from a GPU host's run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import OwnImages
from j0.cli import main
from j0.pins import Pins
from servers.base import free_port

ROOT = Path(__file__).resolve().parents[2]
PATH = ":".join(
    [
        "/standin-tests/engine_check/container_bin",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]
)


@pytest.fixture(scope="module")
def image(pins: Pins, own_images: OwnImages) -> Iterator[str]:
    from conftest import require_docker

    require_docker()
    from standin import build as standin

    tag = own_images.tag("engine-check")
    assert (
        main(["image", "build", "--engine", "image", "--base", standin.image_a(pins), "--tag", tag])
        == 0
    )
    own_images.record_tag(tag)
    yield tag


@pytest.mark.docker
@pytest.mark.slow
def test_engine_check_in_a_container_of_the_image(image: str, tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    for folder in ("models/target", "models/draft"):
        (kept / folder).mkdir(parents=True)
    out = tmp_path / "report.json"
    code = main(
        [
            "engine-check", "--image", image, "--no-gpu", "--models", str(kept / "models"),
            "--container-mount", f"{ROOT / 'tests'}:/standin-tests", "--env", f"PATH={PATH}",
            "--port", str(free_port()), "--startup-timeout", "120", "--keep", str(kept),
            "--json", str(out),
        ]
    )  # fmt: skip
    report = json.loads(out.read_text())
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["verdict"] == "PASS", failed
    assert report["mode"] == f"image {image}"
    log = (kept / "server-j0-on.log").read_text()
    # the image's entrypoint wrote the identity line: the build step's patched file, the
    # wheel's engine (vLLM 0.33.0, commit 4ba787ec9)
    assert "j0-entrypoint" in log and "identity=article" in log and "4ba787ec9" in log
    assert sorted(p.name for p in (kept / "dumps-j0-on").iterdir())[0] == "step0000.pt"


@pytest.fixture(scope="module")
def image_on_b(pins: Pins, own_images: OwnImages) -> Iterator[str]:
    """The project's image on stand-in B: python3, the vllm wheel, torch, transformers and
    tokenizers, and no `dflash`, as in vLLM's own image."""
    from conftest import require_docker, standin_images

    require_docker()
    from standin import build as standin

    (base,) = standin_images(lambda: standin.image_b(pins))
    tag = own_images.tag("engine-check-b")
    assert main(["image", "build", "--engine", "image", "--base", base, "--tag", tag]) == 0
    own_images.record_tag(tag)
    yield tag


@pytest.mark.docker
@pytest.mark.slow
def test_engine_check_makes_the_models_inside_the_image(image_on_b: str, tmp_path: Path) -> None:
    """No --models: the tiny models are made by a container of the image (the host's torch is not
    used: the image has no dflash, so the draft is written by the transformers path), as this
    user, then served by the stand-in in the place of vLLM."""
    import os

    kept = tmp_path / "kept"
    code = main(
        [
            "engine-check", "--image", image_on_b, "--no-gpu",
            "--container-mount", f"{ROOT / 'tests'}:/standin-tests", "--env", f"PATH={PATH}",
            "--port", str(free_port()), "--startup-timeout", "120", "--keep", str(kept),
        ]
    )  # fmt: skip
    assert code == 0
    draft = kept / "models" / "draft"
    config = json.loads((draft / "config.json").read_text())
    assert config["architectures"] == ["DFlashDraftModel"]
    assert config["dflash_config"]["causal"] is True
    assert (draft / "model.safetensors").stat().st_uid == os.getuid()
    assert (kept / "models" / "target" / "tokenizer.json").is_file()


@pytest.mark.docker
def test_an_absent_image_is_named_never_pulled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An image that is not here: exit 69, one line saying what builds it; no pull is tried (the
    name is one no registry holds, and the answer comes before any container starts)."""
    from conftest import require_docker

    require_docker()
    absent = "j0-test/never-built:absent"
    # --models holds a target and a draft (a folder without them is refused first, exit 2, by
    # the path-argument checks): what is left to refuse is the image.
    for part in ("target", "draft"):
        (tmp_path / part).mkdir()
    code = main(["engine-check", "--image", absent, "--no-gpu", "--models", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 69, err
    assert absent in err and "never pulls" in err and "j0 image build --tag" in err
