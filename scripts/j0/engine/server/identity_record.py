"""`j0 image identity --json` as a type: which speculator.py a Python's vLLM would import (its
path, sha256 and identity) and, where asked, that vLLM's version and commit against the pin.
`j0 image identity` writes it (j0.engine.server.speculator_identity); `here_identity`
(j0.engine.server.local_needs) reads it from a child process, and `j0 mini run` keeps it in its run
folder (mini-run.json's `speculator`). The keys are the ones written, in their order (no engine:
the file's three only), so a record read back is written as it was.

Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from j0.edge.document import KeptKeys, absent, attribute

if TYPE_CHECKING:
    from j0.article.identity import Identity
    from j0.engine.source.vllm_version import VllmVersion
    from j0.pins import Pins


@dataclass(frozen=True)
class IdentityRecord(KeptKeys):
    """The record (a typed document: each key and what it may be); `keys` the keys it has, in
    their order; None for a key it lacks."""

    path: str
    sha256: str
    identity: str  # j0.article.identity's kinds: article, prefix-safe, base, audit, other
    vllm_version: str | None = absent()
    vllm_commit: str | None = absent()
    vllm_version_file: str | None = absent()
    vllm_commit_pinned: str | None = absent()
    vllm_commit_is_pinned: bool | None = absent()
    keys: tuple[str, ...] = attribute(default=())
    extra: dict[str, Any] = attribute(default_factory=dict)

    @classmethod
    def of(
        cls,
        path: str,
        identity: Identity,
        engine: VllmVersion | None = None,
        pins: Pins | None = None,
    ) -> IdentityRecord:
        """The record of a file's identity; with `engine`, its vLLM; with both, the pin too."""
        values: dict[str, Any] = {"sha256": identity.sha256, "identity": identity.kind}
        if engine is not None:
            values.update(
                vllm_version=engine.version,
                vllm_commit=engine.commit,
                vllm_version_file=engine.path,
            )
        if engine is not None and pins is not None:
            values.update(
                vllm_commit_pinned=pins.vllm_commit,
                vllm_commit_is_pinned=engine.matches(pins.vllm_commit),
            )
        return cls.made(path=path, **values)

    @classmethod
    def read(cls, value: Any, where: str) -> IdentityRecord:
        """The record, or J0Error naming `where`, the key, its value and what was expected."""
        return cls.from_json(value, where)

    def text(self) -> str:
        """The record as `j0 image identity --json` prints it: one line."""
        return json.dumps(self.to_json())
