"""`j0 image identity --json` as a type: which speculator.py a Python's vLLM would import (its
path, sha256 and identity) and, where asked, that vLLM's version and commit against the pin.
`j0 image identity` writes it (j0.engine.speculator_identity); `here_identity`
(j0.engine.local_needs) reads it from a child process, and `j0 mini run` keeps it in its run
folder (mini-run.json's `speculator`). The keys are the ones written, in their order (no engine:
the file's three only), so a record read back is written as it was.

Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from j0.edge.fields import FieldTable, KeptKeys, checked_object

if TYPE_CHECKING:
    from j0.article.identity import Identity
    from j0.engine.vllm_version import VllmVersion
    from j0.pins import Pins

# (kinds, needed); tests/engine/test_identity_record.py holds it to the fields.
IDENTITY_FIELDS: FieldTable = {
    "path": ((str,), True),
    "sha256": ((str,), True),
    "identity": ((str,), True),
    "vllm_version": ((str,), False),
    "vllm_commit": ((str,), False),
    "vllm_version_file": ((str,), False),
    "vllm_commit_pinned": ((str,), False),
    "vllm_commit_is_pinned": ((bool,), False),
}


@dataclass(frozen=True)
class IdentityRecord(KeptKeys):
    """The record (IDENTITY_FIELDS says each key); `keys` the keys it has, in their order."""

    FIELD_TABLE = IDENTITY_FIELDS

    path: str
    sha256: str
    identity: str  # j0.article.identity's kinds: article, prefix-safe, base, audit, other
    vllm_version: str | None = None
    vllm_commit: str | None = None
    vllm_version_file: str | None = None
    vllm_commit_pinned: str | None = None
    vllm_commit_is_pinned: bool | None = None
    keys: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        path: str,
        identity: Identity,
        engine: VllmVersion | None = None,
        pins: Pins | None = None,
    ) -> IdentityRecord:
        """The record of a file's identity; with `engine`, its vLLM; with both, the pin too."""
        found: dict[str, Any] = {"path": path, "sha256": identity.sha256, "identity": identity.kind}
        if engine is not None:
            found["vllm_version"] = engine.version
            found["vllm_commit"] = engine.commit
            found["vllm_version_file"] = engine.path
        if engine is not None and pins is not None:
            found["vllm_commit_pinned"] = pins.vllm_commit
            found["vllm_commit_is_pinned"] = engine.matches(pins.vllm_commit)
        return cls.from_json(found)

    @classmethod
    def read(cls, value: Any, where: str) -> IdentityRecord:
        """The record, or J0Error naming `where`, the key, its value and what was expected."""
        checked_object(value, IDENTITY_FIELDS, where)
        return cls.from_json(value)

    def text(self) -> str:
        """The record as `j0 image identity --json` prints it: one line."""
        return json.dumps(self.to_json())
