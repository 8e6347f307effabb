"""One measured request of a `j0 bench run` result (an item of its `requests` list), owned here:
`RequestEntry` is the entry (results.request_entry makes one per request; to_json() is what the
file holds, from_json() what the readers get back), its annotations each key's kinds, in the
order the writer writes them. A result file's entries are checked against them once, where the
file is read (entry_problem, through result_schema); past that, readers take attributes and never
guess at a key.

    index, repeat           the request's place in the run, and which pass over the prompts sent it
    prompt_id, prompt_sha256, prompt_source
                            the prompt: its id, its text's sha256, where it came from
    ok, error, finish_reason, started_at
    prompt_tokens, cached_tokens, output_tokens
                            the server's usage (null where it sent a value that is no count)
    ttft_ms, itl_ms_mean, itl_ms_median, tpot_ms, latency_s, decode_s, output_tok_s,
    client_time_s           its times
    num_chunks, chunk_tokens
                            the stream's chunks and the tokens each carried
    acceptance_length, acceptance_rate, speculative_decoding
                            the server's per-request metrics and the figures from them
    flags, warnings         what the reader should look at (results.CACHED_WITH_J0, ...)
    output_token_ids, output_sha256, repetition, output_text
                            the output (its text only with --keep-outputs)
    metrics_problems, speculative_decoding_rejected, token_counts_rejected
                            where the server's metrics cannot be true: why, and what it sent
    per_step_accepted, per_step_drafted, per_step_context_length
                            the per-step arrays of the server's detailed metrics

Standard library only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any

from j0.edge.document import KeptKeys, absent, attribute, table_of
from j0.edge.fields import NULL, NUMBER, FieldTable, Kinds, field_problem, list_of, shown
from j0.engine.figures import spec_counts

# An entry's times (>= 0 where given; results.entry_problems judges their ranges).
ENTRY_TIMES = (
    "ttft_ms",
    "itl_ms_mean",
    "itl_ms_median",
    "tpot_ms",
    "latency_s",
    "decode_s",
    "output_tok_s",
    "client_time_s",
)
# The lists of whole numbers (the per-step ones may hold any numbers here: one that is no count,
# 2.5 or -1, is the range checks', j0.engine.figures.spec_ranges: flagged, kept out of the figures).
INT_LISTS = (
    "chunk_tokens",
    "output_token_ids",
    "per_step_accepted",
    "per_step_drafted",
    "per_step_context_length",
)
# Such a list, or null (which the reader takes as no list); the message names the list alone.
WHOLE_NUMBERS = list_of((int,), or_null=True, words=list_of((int,)).words)
NUMBERS = list_of(NUMBER, or_null=True, words=list_of(NUMBER).words)
Number = int | float


@dataclass
class RequestEntry(KeptKeys):
    """One measured request, a typed document: its keys in the order the writer writes them,
    each with the kinds a reader takes; no key must be there (an older or hand-made file may lack
    any). Counts may be any numbers here: one that is no count (12.5, -4) is flagged by the range
    checks, not refused. `repeat` and `num_chunks` are never null where present. `keys` is the
    keys the entry has, in its order (to_json writes those only, so an entry read back is written
    as it was); `extra` the keys the type does not know, kept as they were. A key the entry lacks
    reads as its default here: None, `repeat` 0."""

    index: int | None = None
    prompt_id: str | None = None
    prompt_sha256: str | None = None
    prompt_source: str | None = None
    ok: bool | None = None
    error: str | None = None
    started_at: Number | None = None
    prompt_tokens: Number | None = None
    cached_tokens: Number | None = None
    output_tokens: Number | None = None
    finish_reason: str | None = None
    ttft_ms: Number | None = None
    itl_ms_mean: Number | None = None
    itl_ms_median: Number | None = None
    tpot_ms: Number | None = None
    latency_s: Number | None = None
    decode_s: Number | None = None
    output_tok_s: Number | None = None
    num_chunks: int | None = absent()
    chunk_tokens: Annotated[list[int] | None, WHOLE_NUMBERS] = None
    client_time_s: Number | None = None
    acceptance_length: Number | None = None
    acceptance_rate: Number | None = None
    speculative_decoding: dict[str, Any] | None = None
    flags: list[Any] | None = None  # objects: results.CACHED_WITH_J0, ...
    warnings: list[Any] | None = None  # in words
    repeat: int = 0
    output_token_ids: Annotated[list[int] | None, WHOLE_NUMBERS] = None
    output_sha256: str | None = None
    repetition: dict[str, Any] | None = None
    output_text: str | None = None
    metrics_problems: list[Any] | None = None
    speculative_decoding_rejected: Any = None  # what the server sent, as it came
    token_counts_rejected: dict[str, Any] | None = None
    per_step_accepted: Annotated[list[Number] | None, NUMBERS] = None
    per_step_drafted: Annotated[list[Number] | None, NUMBERS] = None
    per_step_context_length: Annotated[list[int] | None, WHOLE_NUMBERS] = None
    keys: tuple[str, ...] = attribute(default=())
    extra: dict[str, Any] = attribute(default_factory=dict)


@functools.cache
def _checked() -> FieldTable:
    """The type's table as an entry is checked: the other keys first (in kinds_named's words),
    then the lists."""
    table = table_of(RequestEntry)
    return {
        **{key: kinds for key, kinds in table.items() if key not in INT_LISTS},
        **{key: table[key] for key in INT_LISTS},
    }


def kinds_named(kinds: Kinds) -> str:
    """The kinds a value may be, as a result file's messages name them (null left unsaid; int
    and float together "a number")."""
    shown_kinds = [k for k in kinds if k is not NULL]
    if set(NUMBER) <= set(shown_kinds):
        return "a number"
    return " or ".join(k.__name__ for k in shown_kinds)


def entry_problem(index: int, entry: Any) -> str | None:
    """What in one request entry has another kind or shape than RequestEntry says, or None."""
    where = f"requests[{index}]: "
    if not isinstance(entry, dict):
        return f"requests[{index}] is {shown(entry)}, expected an object"
    problem = field_problem(entry, _checked(), kinds_named)
    if problem is not None:
        return where + problem
    lengths = {k: len(entry[k]) for k in INT_LISTS[2:] if isinstance(entry.get(k), list)}
    if len(set(lengths.values())) > 1:
        return f"{where}per-step arrays of different lengths ({lengths})"
    spec = entry.get("speculative_decoding")
    if spec:
        steps = {k: entry[k] for k in spec_counts.STEP_KEYS if k in entry}
        found = spec_counts.spec_problem({**spec, **steps}, whole=False)
        if found is not None:
            return f"{where}{found}"
    return None
