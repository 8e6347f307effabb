"""Property: a `j0 bench run` result file, whatever its JSON holds, is read (results.read_result)
as a BenchResult whose requests the figures can be computed from, or refused with a J0Error
(exit 2) naming the file; and a `speculative_decoding` object, from a server or a file, gives
counts or problems (spec_counts.request_counts), never an exception or an allocation sized by a
claimed count. Bounded memory throughout.

Inputs: JSON values of every type in every key the readers read, around a well-formed document
(written here by hand, with the keys `j0 bench run` writes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.bench.result import results
from j0.engine.figures import spec_counts
from j0.errors import J0Error

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.sampled_from([10**9, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
SPEC = {
    "mean_acceptance_length": 2.0,
    "draft_acceptance_rate": 0.2,
    "acceptance_histogram": [1, 1],
    "num_spec_steps": 2,
    "num_accepted_draft_tokens": 1,
    "num_draft_tokens": 10,
    "num_spec_tokens": 5,
}
ENTRY = {
    "index": 0,
    "prompt_id": "q0",
    "ok": True,
    "prompt_tokens": 30,
    "output_tokens": 3,
    "ttft_ms": 1.0,
    "output_tok_s": 100.0,
    "num_chunks": 2,
    "chunk_tokens": [1, 2],
    "acceptance_length": 1.5,
    "speculative_decoding": SPEC,
    "flags": [],
    "repeat": 0,
    "per_step_accepted": [0, 1],
    "per_step_drafted": [5, 5],
    "per_step_context_length": [31, 32],
}
DOC = {"kind": results.KIND, "format_version": 1, "complete": True, "requests": [ENTRY]}
ENTRY_KEYS = sorted(ENTRY)
SPEC_KEYS = sorted({*SPEC, "per_step_accepted", "per_step_drafted"})


def _figures(doc: results.BenchResult) -> None:
    """What the report computes from the requests (pooled counts, per-context bins)."""
    results.pooled(doc.requests)
    pairs = [
        (e.prompt_tokens, e.per_step_accepted)
        for e in doc.requests
        if isinstance(e.prompt_tokens, int) and e.per_step_accepted is not None
    ]
    if all(len(a) == len(spec_counts.step_contexts(p, a)) for p, a in pairs):
        spec_counts.by_context(pairs, 512)


@given(
    st.sampled_from(["top", "entry", "spec"]),
    st.sampled_from(sorted({*results.BenchResult.__dataclass_fields__, *ENTRY_KEYS, *SPEC_KEYS})),
    json_values,
)
def test_a_result_file_is_read_or_refused(
    tmp_path_factory: Any, where: str, key: str, value: Any
) -> None:
    doc = json.loads(json.dumps(DOC))
    target = {"top": doc, "entry": doc["requests"][0], "spec": _spec_of(doc)}[where]
    target[key] = value
    path = tmp_path_factory.mktemp("result") / "result.json"
    path.write_text(json.dumps(doc))

    def read() -> Any:
        found = results.read_result(path)
        _figures(found)
        return found

    result = outcome(read, J0Error)
    if isinstance(result, J0Error):
        assert str(path) in str(result)
    else:
        assert isinstance(result, results.BenchResult)


def _spec_of(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["requests"][0]["speculative_decoding"]


def test_the_unedited_document_is_read() -> None:
    """The control: the document the edits start from is a result with its figures."""
    doc = results.BenchResult.from_json(json.loads(json.dumps(DOC)))
    counts, missing = results.pooled(doc.requests)
    assert counts is not None and missing == 0 and counts.drafts == 2


@given(st.dictionaries(st.sampled_from(SPEC_KEYS), json_values, max_size=6) | json_values)
def test_spec_decode_metrics_give_counts_or_problems(spec: Any) -> None:
    counts, problems = outcome(lambda: spec_counts.request_counts(spec))
    assert counts is None or isinstance(counts, spec_counts.Counts)
    assert all(isinstance(p, str) and p for p in problems)
    if counts is not None:
        assert len(counts.accepted_per_pos) <= spec_counts.MAX_SPEC_TOKENS


def test_a_path_of_no_result(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("[]")
    assert isinstance(outcome(lambda: results.read_result(path), J0Error), J0Error)
