"""/opt/j0/manifest.json as a type (j0.image.manifest.ImageManifest): the build step builds the
type with every one of its keys (its call is read here from its source with ast, so a key the
type declares and the build step leaves to its default fails here), and a manifest whose keys
have other types than the readers take (image smoke, j0 doctor) is refused naming the file, the
key, the value and what was expected. The Docker tests build the image and read its manifest
through this type (tests/image/test_image.py's smoke)."""

from __future__ import annotations

import ast
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.image.manifest import ImageManifest

ROOT = Path(__file__).resolve().parents[2]
BUILD_STEP = ROOT / "scripts" / "j0" / "image" / "build_step.py"


def written_keys() -> list[str]:
    tree = ast.parse(BUILD_STEP.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ImageManifest":
            return [keyword.arg for keyword in node.keywords if keyword.arg]
    raise AssertionError("build_step.install builds no ImageManifest(...)")


def test_the_build_step_gives_every_key_of_the_type_in_its_order() -> None:
    assert written_keys() == [f.name for f in fields(ImageManifest)][:-1]  # not `present`


def minimal() -> dict[str, Any]:
    """What an image built before the optional keys existed holds: the required keys only."""
    values = {"j0_seed": 20261031, "vllm_version": "0.33.0", "vllm_commit": "4ba787ec9"}
    needed = [f.name for f in fields(ImageManifest) if f.default is MISSING]
    return {key: values.get(key, "x") for key in needed}


def test_an_older_manifest_is_read_and_says_what_it_lacks() -> None:
    manifest = ImageManifest.from_json(minimal(), "m.json")
    assert manifest.j0_seed == 20261031 and manifest.torch_cuda is None
    assert not manifest.has("torch_cuda") and manifest.has("identity")
    with_null = ImageManifest.from_json({**minimal(), "torch_cuda": None}, "m.json")
    assert with_null.has("torch_cuda") and with_null.torch_cuda is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"j0_seed": "20261031"}, "'j0_seed' is \"20261031\", expected a whole number"),
        ({"j0_seed": True}, "'j0_seed' is true, expected a whole number"),
        ({"torch_cuda": 13.0}, "'torch_cuda' is 13.0, expected a string or null"),
        ({"engine": ["wheel"]}, "'engine' is [\"wheel\"], expected an object"),
        ({"identity": None}, "'identity' is null, expected a string"),
    ],
)
def test_a_key_of_another_type_is_refused_naming_it(change: dict[str, Any], words: str) -> None:
    with pytest.raises(J0Error) as caught:
        ImageManifest.from_json({**minimal(), **change}, "/opt/j0/manifest.json")
    assert caught.value.exit_code == INPUT_LACKS
    assert str(caught.value).startswith("/opt/j0/manifest.json: ")
    assert words in str(caught.value)


def test_a_required_key_missing_is_refused() -> None:
    value = minimal()
    del value["speculator_sha256"]
    with pytest.raises(J0Error, match=r"no 'speculator_sha256' \(expected a string\)"):
        ImageManifest.from_json(value, "m.json")


def test_doctors_part_is_read_alone_and_checked() -> None:
    from j0.image.manifest import torch_cuda_of

    assert torch_cuda_of({"torch_cuda": "13.0", "wheel_variant": "cu130"}, "m") == ("13.0", "cu130")
    assert torch_cuda_of({"torch_cuda": None}, "m") == (None, "")
    assert torch_cuda_of({"identity": "article"}, "m") is None
    with pytest.raises(J0Error, match=r"m: 'torch_cuda' is 13, expected a string or null"):
        torch_cuda_of({"torch_cuda": 13}, "m")
