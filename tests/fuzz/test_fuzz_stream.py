"""Property: what a server streams or answers is read into an outcome or a problem, never an
exception. A real client against a real socket: our vLLM stand-in (tests/servers/vllm/server.py,
on 127.0.0.1) serves each generated body as it is (hostile mode `raw:`), and

* `j0 bench run`'s stream client (j0.bench.stream.client.stream_request, through aiohttp) reads an
  event stream of chunks of any JSON shape: an Outcome, ok or with an error naming the problem;
* `j0 status`'s server client (j0.status.server_facts.ask) reads /version, /v1/models and the
  probe's answer of any JSON shape: ServerFacts, with problems named where the answer is wrong.

Inputs: chunks built from the fields vLLM's stream has (choices, delta, text, token_ids, usage,
metrics), each of any JSON type, and arbitrary JSON for the other answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.bench.stream import client
from j0.status import server_facts
from servers.vllm.server import VllmStandIn

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
)
anything = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
choice = st.fixed_dictionaries(
    {},
    optional={
        "index": anything,
        "text": st.one_of(st.text(max_size=5), anything),
        "delta": st.one_of(
            st.fixed_dictionaries({}, optional={"content": anything, "reasoning": anything}),
            anything,
        ),
        "token_ids": st.one_of(st.lists(st.integers(0, 5000), max_size=3), anything),
        "finish_reason": st.one_of(st.sampled_from(["stop", "length"]), anything),
    },
)
chunk = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.one_of(st.lists(choice, max_size=2), anything),
        "usage": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "prompt_tokens": anything,
                    "completion_tokens": st.one_of(st.integers(0, 50), anything),
                },
            ),
            anything,
        ),
        "metrics": st.one_of(st.fixed_dictionaries({"speculative_decoding": anything}), anything),
        "error": anything,
    },
)


@pytest.fixture(scope="module")
def server() -> Iterator[VllmStandIn]:
    """One stand-in for every example; each example sets its hostile answers."""
    with VllmStandIn() as standin:
        yield standin


def _sse(chunks: list[Any], done: bool) -> str:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    return "".join(lines) + ("data: [DONE]\n\n" if done else "")


async def _stream(url: str) -> client.Outcome:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        body = {"model": "m", "prompt": "p", "stream": True}
        return await client.stream_request(session, url + "/v1/completions", body)


@given(st.lists(st.one_of(chunk, anything), max_size=5), st.booleans())
def test_any_event_stream_is_an_outcome(server: VllmStandIn, chunks: list[Any], done: bool) -> None:
    raw = _sse(chunks, done).encode("utf-8").decode("latin-1")
    server.hostile = {"/v1/completions": f"raw:{raw}"}
    result = outcome(lambda: asyncio.run(_stream(server.url)))
    assert isinstance(result, client.Outcome)
    assert result.ok or result.error, result


@given(anything, anything, anything)
def test_any_answer_to_status_is_facts(
    server: VllmStandIn, version: Any, models: Any, completion: Any
) -> None:
    def raw(value: Any) -> str:
        return "raw:" + json.dumps(value).encode("utf-8").decode("latin-1")

    server.hostile = {
        "/version": raw(version),
        "/v1/models": raw(models),
        "/v1/completions": raw(completion),
    }
    facts = outcome(lambda: server_facts.ask(server.url, None, probe=True))
    assert isinstance(facts, server_facts.ServerFacts)
    assert facts.model is None or isinstance(facts.model, str)
    assert facts.version is None or isinstance(facts.version, str)
