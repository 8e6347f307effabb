"""What `j0 status` found, as one type: the flat object `j0 status --json` prints (and
`j0 bench run --status-json FILE` and the engine check read), its fields in the printed order.

`to_json()` is that object; `from_json()` reads one back (unknown keys ignored, a missing key read
as its default, a value of the wrong type a J0Error naming the key). Standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from j0.article.identity import PREFIX_SAFE
from j0.engine.j0_ran import ON_OFF
from j0.errors import INPUT_LACKS, J0Error

JsonValue = Any  # whatever JSON holds: the log's own value, not checked
Predicate = Callable[[Any], bool]


@dataclass
class StatusReport:
    url: str = ""
    healthy: bool = False
    model: str | None = None
    max_model_len: int | None = None
    j0: str | None = None  # "on" / "off"
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
    article_setup: bool = False
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The object `j0 status --json` prints, keys in this order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, value: Any, source: str = "the status JSON") -> StatusReport:
        """The report in `value` (an object as `to_json()` gives); `source` names it in errors."""
        if not isinstance(value, dict):
            raise J0Error(f"{source}: expected a JSON object, got {_kind(value)}", INPUT_LACKS)
        read: dict[str, Any] = {}
        for name, (expected, check) in _FIELD_TYPES.items():
            if name not in value:
                continue
            if not check(value[name]):
                raise J0Error(
                    f"{source}: {name!r} should be {expected}, not {_kind(value[name])} "
                    f"({value[name]!r:.80})",
                    INPUT_LACKS,
                )
            read[name] = value[name]
        return cls(**read)

    def mode(self) -> str:
        return {"on": "J0 on", "off": "J0 off (the baseline)"}.get(str(self.j0), "J0 unknown")

    def verdict(self) -> str:
        """The last line of `j0 status`: the article's setup or not, and why not."""
        if self.article_setup and self.identity == PREFIX_SAFE:
            return (
                "==> the article's setup with the prefix-safe speculator.py (identity=prefix-safe,"
                f" not the article's file), {self.mode()}"
            )
        if self.article_setup:
            return f"==> the article's setup, {self.mode()}"
        from j0.terminal.escape import shown

        # A reason can hold the server's text (its model id): on this line, whatever it holds.
        return f"==> NOT the article's setup ({self.mode()}): " + shown("; ".join(self.reasons))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _optional(check: Predicate) -> Predicate:
    return lambda value: value is None or check(value)


def _list_of(check: Predicate) -> Predicate:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


_FIELD_TYPES: dict[str, tuple[str, Predicate]] = {
    "url": ("a string", _is_str),
    "healthy": ("a boolean", _is_bool),
    "model": ("a string or null", _optional(_is_str)),
    "max_model_len": ("a whole number or null", _optional(_is_int)),
    "j0": ('"on", "off" or null', lambda v: v is None or v in ON_OFF),
    "pool_shape": ("a list of whole numbers or null", _optional(_list_of(_is_int))),
    "draft_kv_dtypes": ("a list of strings or null", _optional(_list_of(_is_str))),
    "spec_kv_cache_dtype": ("a string or null", _optional(_is_str)),
    "speculator_sha256": ("a string or null", _optional(_is_str)),
    "speculator_path": ("a string or null", _optional(_is_str)),
    "identity": ("a string or null", _optional(_is_str)),
    "vllm_version": ("a string or null", _optional(_is_str)),
    "vllm_commit": ("a string or null", _optional(_is_str)),
    "vllm_commit_pinned": ("a string", _is_str),
    "num_speculative_tokens": ("any JSON value", lambda v: True),
    "speculative_config": ("an object or null", _optional(lambda v: isinstance(v, dict))),
    "max_num_seqs": ("a whole number or null", _optional(_is_int)),
    "spec_decode_counters": ("a boolean", _is_bool),
    "spec_decode_drafts_delta": ("a number or null", _optional(_is_number)),
    "spec_decode_draft_tokens_delta": ("a number or null", _optional(_is_number)),
    "spec_decode_accepted_delta": ("a number or null", _optional(_is_number)),
    "log_source": ("a string or null", _optional(_is_str)),
    "article_setup": ("a boolean", _is_bool),
    "reasons": ("a list of strings", _list_of(_is_str)),
}
assert list(_FIELD_TYPES) == [f.name for f in dataclasses.fields(StatusReport)]
