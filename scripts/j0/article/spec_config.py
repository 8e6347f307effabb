"""The speculative config as one value: vLLM's `--speculative-config`, made, written and read here.

SpecConfig holds the method (a Literal: the article's dflash, the plugin's dflash_j0, vLLM's
ngram), the number of draft tokens, the drafter's folder, the draft's KV cache dtype, the plugin's
speculator_options and any key the article did not set, in the order given. `to_json()` is its
one written form (compact JSON, vLLM's keys in the article's order); `from_json()` its one reader;
`article_problem()` the article's rule (method dflash, or dflash_j0 on the plugin's route, with 15
or 7 draft tokens), which `j0 serve` and `j0 status` both apply.

Standard library only: `j0 serve` runs inside the image, on the base image's python3.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from j0.errors import USAGE, J0Error, parse_json

Method = Literal["dflash", "dflash_j0", "ngram"]
METHODS: tuple[Method, ...] = get_args(Method)
DFLASH: Method = "dflash"  # the article's: the image's J0 file (or vLLM's own)
PLUGIN: Method = "dflash_j0"  # the vLLM plugin's (j0.plugin: J0 on vLLM 0.34.0)
NGRAM: Method = "ngram"  # vLLM's prompt lookup, no drafter (mini's and engine-check's reference)
ARTICLE_METHODS: tuple[Method, ...] = (DFLASH, PLUGIN)
DRAFT_KV_CACHE_DTYPE = "auto"  # keeps the draft's KV cache BF16 under an FP8 target
TESTED_TOKENS = (15, 7)  # the draft-token counts the article ran

# vLLM's keys in the article's order (the seed's serving flags), then the plugin's options.
MODEL, TOKENS, KV = "model", "num_speculative_tokens", "kv_cache_dtype"
OPTIONS = "speculator_options"
KNOWN_KEYS = ("method", MODEL, TOKENS, KV, OPTIONS)


def tested_words() -> str:
    """The article's draft-token counts in words: "15 and 7"."""
    return " and ".join(str(n) for n in TESTED_TOKENS)


def article_problem(method: object, tokens: object) -> str | None:
    """The article's rule: None where the method is DFlash (the image's file or the plugin's) and
    the draft length one the article ran; else what differs, in one phrase."""
    if method not in ARTICLE_METHODS:
        return f"speculative method {method!r}"
    if tokens not in TESTED_TOKENS or isinstance(tokens, bool):
        return f"{TOKENS}={tokens}: the article ran {tested_words()}"
    return None


def kv_refusal(kv: object) -> str:
    """Why a draft KV cache dtype other than "auto" is refused."""
    return (
        f"{KV} is {kv!r}, expected {DRAFT_KV_CACHE_DTYPE!r} (it keeps the draft's KV cache BF16 "
        "under an FP8 target)"
    )


@dataclass(frozen=True)
class LoggedSpec:
    """A speculative config as a server's log or a document says it, each field as said (any
    JSON value, None where not said): for readers that report or compare what was said (j0
    status, bench run's status check, a result's setup). SpecConfig.from_dict is for what must
    be a config; vLLM's key names live here, not in the readers."""

    method: object = None
    drafter: object = None
    tokens: object = None

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> LoggedSpec:
        said = value or {}
        return cls(said.get("method"), said.get(MODEL), said.get(TOKENS))

    def to_dict(self) -> dict[str, Any]:
        """What was said under vLLM's keys (the log facts' form)."""
        return {"method": self.method, MODEL: self.drafter, TOKENS: self.tokens}

    @property
    def whole_tokens(self) -> int | None:
        """The draft tokens where said as a whole number, else None."""
        n = self.tokens
        return n if isinstance(n, int) and not isinstance(n, bool) else None

    def article_problem(self) -> str | None:
        """The article's rule on what was said (article_problem)."""
        return article_problem(self.method, self.tokens)


@dataclass(frozen=True)
class SpecConfig:
    """One `--speculative-config`. `drafter` is vLLM's `model` (None for ngram); `kv_cache_dtype`
    None where the config does not set it (the draft then inherits the target's)."""

    method: Method
    tokens: int
    drafter: str | None = None
    kv_cache_dtype: str | None = DRAFT_KV_CACHE_DTYPE
    speculator_options: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: expected one of {METHODS}")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 1:
            raise ValueError(f"{TOKENS} {self.tokens!r}: expected a positive integer")
        if clash := sorted(set(self.extra) & set(KNOWN_KEYS)):
            raise ValueError(f"extra keys {clash} are fields of the config")

    @classmethod
    def article(cls, drafter: str, tokens: int) -> SpecConfig:
        """The article's config: method dflash, the drafter's folder, the draft KV cache "auto"."""
        return cls(DFLASH, tokens, drafter, DRAFT_KV_CACHE_DTYPE)

    def to_dict(self) -> dict[str, Any]:
        """vLLM's keys: method, model, num_speculative_tokens, kv_cache_dtype (each where set),
        speculator_options, then the extra keys in their order."""
        value: dict[str, Any] = {"method": self.method}
        if self.drafter is not None:
            value[MODEL] = self.drafter
        value[TOKENS] = self.tokens
        if self.kv_cache_dtype is not None:
            value[KV] = self.kv_cache_dtype
        if self.speculator_options is not None:
            value[OPTIONS] = dict(self.speculator_options)
        value.update(self.extra)
        return value

    def to_json(self) -> str:
        """The `--speculative-config` value, compact, exactly as the article passed its own."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str, where: str = "--speculative-config") -> SpecConfig:
        """The one reader: a JSON object with a known method, a positive number of draft tokens,
        the drafter's folder for the DFlash methods; refused otherwise (exit 64, naming it)."""
        where = f"{where} {raw!r}"
        value = parse_json(raw, where, USAGE)
        if not isinstance(value, dict):
            raise J0Error(f"{where}: expected a JSON object", USAGE)
        return cls.from_dict(value, where)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any], where: str) -> SpecConfig:
        """A config already read as JSON (where: how messages name it)."""
        method = value.get("method")
        if method not in METHODS:
            raise J0Error(f"{where}: method is {method!r}, expected one of {METHODS}", USAGE)
        return cls._checked(method, value, where)

    @classmethod
    def _checked(cls, method: Method, value: Mapping[str, Any], where: str) -> SpecConfig:
        """The fields past the method, each checked, in the order j0 serve has always named them."""
        model = value.get(MODEL)
        if method != NGRAM and (not isinstance(model, str) or not model):
            raise J0Error(f"{where}: model must be the drafter's directory", USAGE)
        if model is not None and not isinstance(model, str):
            raise J0Error(f"{where}: model is {model!r}, expected a folder", USAGE)
        n = value.get(TOKENS)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise J0Error(
                f"{where}: {TOKENS} is {n!r}, expected a positive integer "
                f"(the article ran {TESTED_TOKENS[0]}, and {TESTED_TOKENS[1]})",
                USAGE,
            )
        kv = value.get(KV)
        if kv is not None and not isinstance(kv, str):
            raise J0Error(f"{where}: {kv_refusal(kv)}", USAGE)
        options = value.get(OPTIONS)
        if options is not None and not isinstance(options, dict):
            raise J0Error(f"{where}: {OPTIONS} is {options!r}, expected a JSON object", USAGE)
        extra = {key: val for key, val in value.items() if key not in KNOWN_KEYS}
        return cls(method, n, model, kv, options, extra)

    def article_problem(self) -> str | None:
        """The article's rule on this config (article_problem)."""
        return article_problem(self.method, self.tokens)
