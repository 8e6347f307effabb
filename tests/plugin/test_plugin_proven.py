"""The plugin's version guard as a rule, without a vLLM: `j0.plugin.proven.check` takes what was
found installed (a version and its speculator.py's sha256) and the project's pins, and proves
only the pair that the pins hold for one release. The same rule runs inside real vLLM 0.34.0 and
0.33.0 in tests/plugin/test_plugin_vllm.py (a process each, importing vLLM: about 17 s of CPU);
here it takes milliseconds, so it is the mutation guard's killer."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.pins import load_pins
from j0.plugin import proven

PINS = load_pins()
RELEASE = proven.proven_releases(PINS)[0]
SPEC = Path("/site/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py")
OTHER_SHA = "0" * 64


def test_the_pinned_release_and_its_file_are_proven() -> None:
    found = proven.Installed(RELEASE.release, SPEC, RELEASE.base_sha256)
    verdict = proven.check(PINS, found)
    assert verdict.release == RELEASE and verdict.reason == ""


@pytest.mark.parametrize(
    ("version", "sha256", "said"),
    [
        ("0.33.0", OTHER_SHA, f"vLLM 0.33.0 with {SPEC} sha256 {OTHER_SHA}"),
        (RELEASE.release, OTHER_SHA, f"vLLM {RELEASE.release} with {SPEC} sha256 {OTHER_SHA}"),
        ("0.33.0", RELEASE.base_sha256, "vLLM 0.33.0 with "),  # the file alone is not enough
    ],
    ids=["another release", "the release, another file", "the file, another release"],
)
def test_anything_but_the_pinned_pair_is_refused(version: str, sha256: str, said: str) -> None:
    verdict = proven.check(PINS, proven.Installed(version, SPEC, sha256))
    assert verdict.release is None
    assert verdict.reason.startswith(said)
    assert "not a vLLM it was proven on (supported: vLLM " in verdict.reason


def test_no_vllm_and_no_file_are_named() -> None:
    none = proven.check(PINS, proven.Installed(None, None, None))
    assert none.release is None and none.reason.startswith("no vLLM is importable:")
    missing = proven.check(PINS, proven.Installed(RELEASE.release, SPEC, None))
    assert missing.reason.startswith(f"vLLM {RELEASE.release} has no {SPEC}:")
