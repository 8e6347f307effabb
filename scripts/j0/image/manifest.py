"""The image's /opt/j0/manifest.json as a type owned by its writer: the build step
(build_step.install) makes an ImageManifest and writes to_json; `j0 image smoke` and `j0 doctor`
read it with from_json, which checks every key against FIELDS and refuses, naming the file, the
key, the value and what was expected, a manifest whose keys have other types. The keys a reader
needs are required; the others may be absent (an image built before they were written).

Standard library only: the build step runs inside the base image, on its python3.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from j0.edge.fields import FieldTable, field_problem
from j0.errors import INPUT_LACKS, J0Error

_TEXT = (str,)
_TEXT_OR_NULL = (str, type(None))
# Every key, in the order the build step writes them: (kinds, needed by a reader).
FIELDS: FieldTable = {
    "schema": ((int,), False),
    "built_at": (_TEXT, True),
    "base_image": (_TEXT, True),
    "base_image_digest": (_TEXT, False),
    "vllm_image_pinned": (_TEXT, False),
    "vllm_image_fallback": (_TEXT, False),
    "vllm_version": (_TEXT_OR_NULL, True),
    "vllm_commit": (_TEXT_OR_NULL, True),
    "vllm_version_file": (_TEXT, False),
    "vllm_commit_pinned": (_TEXT, True),
    "vllm_commit_is_pinned": ((bool,), False),
    "vllm_release_pinned": (_TEXT, False),
    "engine_route": (_TEXT, False),
    "engine": ((dict,), False),
    "torch_cuda": (_TEXT_OR_NULL, False),
    "wheel_variant": (_TEXT, False),
    "wheel_folder": (_TEXT, False),
    "wheel_folder_why": (_TEXT, False),
    "python": (_TEXT, False),
    "python_version": (_TEXT, False),
    "vllm_dir": (_TEXT, False),
    "speculator_path": (_TEXT, True),
    "base_sha256": (_TEXT, True),
    "base_sha256_pinned": (_TEXT, False),
    "speculator_sha256": (_TEXT, True),
    "speculator_sha256_pinned": (_TEXT, False),
    "identity": (_TEXT, True),
    "variant": (_TEXT, False),
    "allow_base_drift": ((bool,), False),
    "patch_file": (_TEXT, False),
    "patch_sha256": (_TEXT, True),
    "patch_tool": (_TEXT, False),
    "removed_pycache": ((list,), False),
    "compiled_pycache": (_TEXT_OR_NULL, False),
    "drafter_repo": (_TEXT, True),
    "drafter_revision": (_TEXT, True),
    "drafter_commit": (_TEXT, False),
    "target_model": (_TEXT, False),
    "j0_seed": ((int,), True),
    "j0_version": (_TEXT, False),
    "j0_revision": (_TEXT, False),
    "j0_source": (_TEXT, False),
    "j0_files_sha256": (_TEXT, False),
    "not_given": ((list,), False),
}


@dataclass(frozen=True)
class ImageManifest:
    """What the build step installed and from what: the base image and its vLLM, the engine
    route, the speculator.py it wrote (sha256, identity, variant), the pins it used, j0's own
    version and files. Fields absent from an older image's manifest are None."""

    built_at: str
    base_image: str
    vllm_version: str | None
    vllm_commit: str | None
    vllm_commit_pinned: str
    speculator_path: str
    base_sha256: str
    speculator_sha256: str
    identity: str
    patch_sha256: str
    drafter_repo: str
    drafter_revision: str
    j0_seed: int
    schema: int | None = None
    base_image_digest: str | None = None
    vllm_image_pinned: str | None = None
    vllm_image_fallback: str | None = None
    vllm_version_file: str | None = None
    vllm_commit_is_pinned: bool | None = None
    vllm_release_pinned: str | None = None
    engine_route: str | None = None
    engine: dict[str, Any] | None = None
    torch_cuda: str | None = None
    wheel_variant: str | None = None
    wheel_folder: str | None = None
    wheel_folder_why: str | None = None
    python: str | None = None
    python_version: str | None = None
    vllm_dir: str | None = None
    base_sha256_pinned: str | None = None
    speculator_sha256_pinned: str | None = None
    variant: str | None = None
    allow_base_drift: bool | None = None
    patch_file: str | None = None
    patch_tool: str | None = None
    removed_pycache: list[str] | None = None
    compiled_pycache: str | None = None
    drafter_commit: str | None = None
    target_model: str | None = None
    j0_version: str | None = None
    j0_revision: str | None = None
    j0_source: str | None = None
    j0_files_sha256: str | None = None
    not_given: list[str] | None = None
    present: frozenset[str] = frozenset(FIELDS)  # the keys the file had

    def to_json(self) -> dict[str, Any]:
        """The manifest's object, in FIELDS' order."""
        return {key: getattr(self, key) for key in FIELDS}

    @classmethod
    def from_json(cls, value: Any, where: str) -> ImageManifest:
        if not isinstance(value, dict):
            raise J0Error(f"{where}: expected a JSON object", INPUT_LACKS)
        if (problem := field_problem(value, FIELDS)) is not None:
            raise J0Error(f"{where}: {problem}", INPUT_LACKS)
        known = {f.name for f in fields(cls)}
        kept = {key: value[key] for key in FIELDS if key in value and key in known}
        return cls(**kept, present=frozenset(k for k in FIELDS if k in value))

    def has(self, key: str) -> bool:
        """Whether the file had `key` (a None field may be a null in the file, or no key)."""
        return key in self.present


def torch_cuda_of(value: Any, where: str) -> tuple[str | None, str] | None:
    """`j0 doctor`'s part of a manifest: (torch_cuda, wheel_variant), torch_cuda None for a CPU
    build of torch; None where the manifest has no torch_cuda (an image built before it was
    written). J0Error where either key has another type than FIELDS says."""
    if not isinstance(value, dict):
        raise J0Error(f"{where}: expected a JSON object", INPUT_LACKS)
    if "torch_cuda" not in value:
        return None
    table = {key: FIELDS[key] for key in ("torch_cuda", "wheel_variant")}
    if (problem := field_problem(value, table)) is not None:
        raise J0Error(f"{where}: {problem}", INPUT_LACKS)
    return value["torch_cuda"], value.get("wheel_variant") or ""
