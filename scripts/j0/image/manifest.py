"""The image's /opt/j0/manifest.json as a type owned by its writer: the build step
(build_step.install) makes an ImageManifest and writes to_json; `j0 image smoke` and `j0 doctor`
read it with from_json, which checks every key against the type and refuses, naming the file, the
key, the value and what was expected, a manifest whose keys have other types. The keys a reader
needs are required; the others may be absent (an image built before they were written).

Standard library only: the build step runs inside the base image, on its python3.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from j0.edge.document import Document, absent, attribute, table_of
from j0.edge.fields import field_problem
from j0.errors import INPUT_LACKS, J0Error


@dataclass(frozen=True, kw_only=True)
class ImageManifest(Document):
    """What the build step installed and from what: the base image and its vLLM, the engine
    route, the speculator.py it wrote (sha256, identity, variant), the pins it used, j0's own
    version and files; every key in the order the build step writes them. A key without a
    default is one a reader needs; the others are None where an older image's manifest lacks
    them (absent(): never null where there)."""

    schema: int | None = absent()
    built_at: str
    base_image: str
    base_image_digest: str | None = absent()
    vllm_image_pinned: str | None = absent()
    vllm_image_fallback: str | None = absent()
    vllm_version: str | None
    vllm_commit: str | None
    vllm_version_file: str | None = absent()
    vllm_commit_pinned: str
    vllm_commit_is_pinned: bool | None = absent()
    vllm_release_pinned: str | None = absent()
    engine_route: str | None = absent()
    engine: dict[str, Any] | None = absent()
    torch_cuda: str | None = None
    wheel_variant: str | None = absent()
    wheel_folder: str | None = absent()
    wheel_folder_why: str | None = absent()
    python: str | None = absent()
    python_version: str | None = absent()
    vllm_dir: str | None = absent()
    speculator_path: str
    base_sha256: str
    base_sha256_pinned: str | None = absent()
    speculator_sha256: str
    speculator_sha256_pinned: str | None = absent()
    identity: str
    variant: str | None = absent()
    allow_base_drift: bool | None = absent()
    patch_file: str | None = absent()
    patch_sha256: str
    patch_tool: str | None = absent()
    removed_pycache: list[Any] | None = absent()
    compiled_pycache: str | None = None
    drafter_repo: str
    drafter_revision: str
    drafter_commit: str | None = absent()
    target_model: str | None = absent()
    j0_seed: int
    j0_version: str | None = absent()
    j0_revision: str | None = absent()
    j0_source: str | None = absent()
    j0_files_sha256: str | None = absent()
    not_given: list[Any] | None = absent()
    present: frozenset[str] | None = attribute(default=None)  # the keys the file had; None: all

    def to_json(self) -> dict[str, Any]:
        """The manifest's object: every key, in the type's order."""
        return {key: getattr(self, key) for key in table_of(ImageManifest)}

    @classmethod
    def from_json(cls, value: Any, where: str) -> ImageManifest:
        if not isinstance(value, dict):
            raise J0Error(f"{where}: expected a JSON object", INPUT_LACKS)
        read = super().from_json(value, where)
        return replace(read, present=frozenset(k for k in table_of(cls) if k in value))

    def has(self, key: str) -> bool:
        """Whether the file had `key` (a None field may be a null in the file, or no key)."""
        return self.present is None or key in self.present


def torch_cuda_of(value: Any, where: str) -> tuple[str | None, str] | None:
    """`j0 doctor`'s part of a manifest: (torch_cuda, wheel_variant), torch_cuda None for a CPU
    build of torch; None where the manifest has no torch_cuda (an image built before it was
    written). J0Error where either key has another type than ImageManifest says."""
    if not isinstance(value, dict):
        raise J0Error(f"{where}: expected a JSON object", INPUT_LACKS)
    if "torch_cuda" not in value:
        return None
    table = {key: table_of(ImageManifest)[key] for key in ("torch_cuda", "wheel_variant")}
    if (problem := field_problem(value, table)) is not None:
        raise J0Error(f"{where}: {problem}", INPUT_LACKS)
    return value["torch_cuda"], value.get("wheel_variant") or ""
