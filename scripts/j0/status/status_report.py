"""What `j0 status` found, as one type: the flat object `j0 status --json` prints (and
`j0 bench run --status-json FILE` and the engine check read), its fields in the printed order.

`to_json()` is that object; `from_json()` reads one back, checked against the fields' annotations
(a typed document, j0.edge.document): unknown keys ignored, a missing key read as its default, a
value of another kind a J0Error naming the key, the value and what was expected. Standard library
only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from j0.article.identity import PREFIX_SAFE
from j0.edge.document import Document
from j0.edge.fields import one_of
from j0.engine.server.j0_state import ON_OFF, J0State

JsonValue = Any  # whatever JSON holds: the log's own value, not checked


@dataclass
class StatusReport(Document):
    url: str = ""
    healthy: bool = False
    model: str | None = None
    max_model_len: int | None = None
    j0: Annotated[str | None, one_of(ON_OFF, or_null=True)] = None  # the J0 file's line
    j0_state: dict[str, Any] | None = None  # J0State.to_json(): J0 as run, by the one rule
    pool_shape: list[int] | None = None
    draft_kv_dtypes: list[str] | None = None
    spec_kv_cache_dtype: str | None = None
    speculator_sha256: str | None = None
    speculator_path: str | None = None
    identity: str | None = None  # article / prefix-safe / base / other
    vllm_version: str | None = None
    vllm_commit: str | None = None
    vllm_commit_pinned: str = ""
    num_speculative_tokens: JsonValue = None  # as the speculative config has it
    speculative_config: dict[str, Any] | None = None
    max_num_seqs: int | None = None
    spec_decode_counters: bool = False
    spec_decode_drafts_delta: float | None = None
    spec_decode_draft_tokens_delta: float | None = None
    spec_decode_accepted_delta: float | None = None
    log_source: str | None = None
    log_startups: int | None = None  # the start-ups the log holds (the last is judged)
    article_setup: bool = False
    reasons: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, value: Any, where: str = "the status JSON") -> StatusReport:
        """The report in `value` (an object as `to_json()` gives, the keys in the order `j0
        status --json` prints them); `where` names it in errors."""
        return super().from_json(value, where)

    def state(self) -> J0State:
        """J0 as run (J0State.from_json: this report's j0_state, or an older report's identity
        and DFLASH_CTX_NOISE line judged by the one rule)."""
        return J0State.from_json(self.to_json(), "the status report")

    def mode(self) -> str:
        """J0's state as the verdict says it: by the one rule (j0.engine.server.j0_state), so a log
        without an identity line, or naming another file, is "J0 unknown" whatever the patch
        line says, and vLLM's unpatched file "J0 off"."""
        ran = self.state().ran
        return {"on": "J0 on", "off": "J0 off (the baseline)"}.get(ran, "J0 unknown")

    def verdict(self) -> str:
        """The last line of `j0 status`: the article's setup or not, and why not."""
        # A log of several start-ups is judged by its last: the verdict says so (lines after the
        # first start-up are the server's and its clients', docs/status.md).
        last = (
            f" (the last of {self.log_startups} start-ups in the log)"
            if self.log_startups is not None and self.log_startups > 1
            else ""
        )
        if self.article_setup and self.identity == PREFIX_SAFE:
            return (
                "==> the article's setup with the prefix-safe speculator.py (identity=prefix-safe,"
                f" not the article's file), {self.mode()}{last}"
            )
        if self.article_setup:
            return f"==> the article's setup, {self.mode()}{last}"
        from j0.terminal.escape import shown

        # A reason can hold the server's text (its model id): on this line, whatever it holds.
        return f"==> NOT the article's setup ({self.mode()}){last}: " + shown(
            "; ".join(self.reasons)
        )
