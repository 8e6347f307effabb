"""tests/servers/vllm/server.py speaks vLLM 0.33.0's wire format: every body it sends is parsed by
vLLM's own pydantic models (the installed wheel, vllm/entrypoints/...) and written back with the
serialisation options vLLM's servers use, which must give the same bytes (field names, order,
nulls kept or left out). A chunk recorded from the real engine on an H200 is parsed the same way.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
import requests

from servers.vllm.server import VllmStandIn

# vLLM fixes its platform at its first import; this machine has no GPU, and a failed inference
# there ("Failed to infer device type") would break tests/serve's use of vLLM's own parser.
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
# The tests of this module share one worker (pytest-xdist) and import vLLM's protocol modules
# once there, in `wire`: at module level every worker paid that import (about 8 s) while
# collecting, whether it ran these tests or not. Slow: that import, 23 s of the group's set-up in a
# fast-subset run of 2026-12-06.
pytestmark = [pytest.mark.xdist_group("vllm-wire"), pytest.mark.slow]


@pytest.fixture(scope="module")
def wire() -> SimpleNamespace:
    """vLLM 0.33.0's own pydantic models of the routes' bodies (skipped without vLLM)."""
    protocol = pytest.importorskip(
        "vllm.entrypoints.openai.completion.protocol", reason="vllm==0.33.0 (installed --no-deps)"
    )
    from vllm.entrypoints.generate.base.protocol import SpeculativeDecodingMetrics
    from vllm.entrypoints.openai.chat_completion.protocol import (
        ChatCompletionResponse,
        ChatCompletionStreamResponse,
    )
    from vllm.entrypoints.serve.engine.protocol import ModelList

    return SimpleNamespace(
        CompletionStreamResponse=protocol.CompletionStreamResponse,
        CompletionResponse=protocol.CompletionResponse,
        SpeculativeDecodingMetrics=SpeculativeDecodingMetrics,
        ChatCompletionResponse=ChatCompletionResponse,
        ChatCompletionStreamResponse=ChatCompletionStreamResponse,
        ModelList=ModelList,
    )


# The real engine's final usage chunk of a J0-on response, from the run whose dumps are
# tests/data/engine-h200/j0-on/ (tests/data/README.md; 7 draft tokens, random weights: nothing
# accepted), per-step arrays cut to three entries.
REAL_FINAL = (
    '{"id":"cmpl-b7a339b63b70834a","object":"text_completion","created":1796040069,'
    '"model":"/models/target","choices":[],"usage":{"prompt_tokens":74,"total_tokens":138,'
    '"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":0}},'
    '"system_fingerprint":"vllm-0.33.0-d4517d10","metrics":{"speculative_decoding":'
    '{"mean_acceptance_length":1.0,"draft_acceptance_rate":0.0,"acceptance_histogram":'
    '[63,0,0,0,0,0,0,0],"num_spec_steps":63,"num_accepted_draft_tokens":0,"num_draft_tokens":441,'
    '"num_spec_tokens":7,"per_step_accepted":[0,0,0],"per_step_drafted":[7,7,7]}}}'
)


def events(response: requests.Response) -> list[str]:
    lines = [x.decode() for x in response.iter_lines() if x]
    assert all(x.startswith("data: ") for x in lines)
    assert lines[-1] == "data: [DONE]"
    return [x[6:] for x in lines[:-1]]


def same_after_vllm(model: type, text: str, **dump: bool) -> None:
    assert model.model_validate_json(text).model_dump_json(**dump) == text


def test_real_final_chunk_round_trips(wire: SimpleNamespace) -> None:
    same_after_vllm(wire.CompletionStreamResponse, REAL_FINAL, exclude_none=True)


@pytest.fixture(scope="module")
def server():
    with VllmStandIn(num_spec_tokens=7, seed=4) as s:
        yield s


def test_completions_stream(server: VllmStandIn, wire: SimpleNamespace) -> None:
    body = {
        "prompt": "a b c d " * 40,
        "max_tokens": 40,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = events(requests.post(server.url + "/v1/completions", json=body, stream=True))
    for text in chunks[:-1]:
        same_after_vllm(wire.CompletionStreamResponse, text, exclude_unset=True)
    same_after_vllm(wire.CompletionStreamResponse, chunks[-1], exclude_none=True)
    final = json.loads(chunks[-1])
    spec = wire.SpeculativeDecodingMetrics.model_validate(final["metrics"]["speculative_decoding"])
    assert spec.per_step_accepted == server.records[-1].per_step_accepted
    assert final["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert list(final) == list(json.loads(REAL_FINAL))


def test_chat_stream_with_continuous_usage(server: VllmStandIn, wire: SimpleNamespace) -> None:
    body = {
        "messages": [{"role": "user", "content": "x y " * 30}],
        "max_tokens": 80,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    chunks = events(requests.post(server.url + "/v1/chat/completions", json=body, stream=True))
    for text in chunks[:-1]:
        same_after_vllm(wire.ChatCompletionStreamResponse, text, exclude_unset=True)
    same_after_vllm(
        wire.ChatCompletionStreamResponse, chunks[-1], exclude_unset=True, exclude_none=True
    )
    reasoning = [json.loads(c)["choices"][0]["delta"].get("reasoning") for c in chunks[1:-1]]
    assert reasoning[0]  # thinking on by default: the first tokens are reasoning


def test_non_streaming_and_models(server: VllmStandIn, wire: SimpleNamespace) -> None:
    chat = requests.post(
        server.url + "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "q"}], "max_tokens": 12},
    ).json()
    assert wire.ChatCompletionResponse.model_validate(chat).model_dump(mode="json") == chat
    done = requests.post(server.url + "/v1/completions", json={"prompt": "q", "max_tokens": 9})
    completion = done.json()
    parsed = wire.CompletionResponse.model_validate(completion)
    assert parsed.model_dump(mode="json") == completion
    assert list(parsed.model_dump()) == list(completion)
    models = requests.get(server.url + "/v1/models").json()
    assert (
        wire.ModelList.model_validate(models).model_dump(mode="json")["data"][0]["max_model_len"]
        == server.max_model_len
    )
    missing = requests.post(server.url + "/v1/completions", json={"model": "nope", "prompt": "q"})
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "The model `nope` does not exist."


def test_chat_stream_with_return_token_ids(server: VllmStandIn, wire: SimpleNamespace) -> None:
    """`return_token_ids` (what `j0 bench run` asks): each chunk's choice carries its token ids,
    as vLLM's protocol types them, and together they are the output the stand-in sent."""
    body = {
        "messages": [{"role": "user", "content": "u v " * 30}],
        "max_tokens": 50,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "return_token_ids": True,
    }
    chunks = events(requests.post(server.url + "/v1/chat/completions", json=body, stream=True))
    ids: list[int] = []
    for text in chunks[1:-1]:
        same_after_vllm(wire.ChatCompletionStreamResponse, text, exclude_unset=True)
        parsed = wire.ChatCompletionStreamResponse.model_validate_json(text)
        assert parsed.choices[0].token_ids is not None
        ids += parsed.choices[0].token_ids
    assert ids == server.records[-1].output_token_ids and len(ids) == 50


def test_a_server_without_speculation_sends_no_spec_metrics(wire: SimpleNamespace) -> None:
    """`vllm serve` without --speculative-config: no metrics.speculative_decoding, no spec-decode
    counters; the final chunk still parses as vLLM's."""
    with VllmStandIn(num_spec_tokens=0) as plain:
        body = {"prompt": "a b " * 20, "max_tokens": 12, "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip
        chunks = events(requests.post(plain.url + "/v1/completions", json=body, stream=True))
        metrics = requests.get(plain.url + "/metrics").text
    final = json.loads(chunks[-1])
    same_after_vllm(wire.CompletionStreamResponse, chunks[-1], exclude_none=True)
    assert "metrics" not in final and final["usage"]["completion_tokens"] == 12
    assert len(chunks) - 1 == 12  # one token per step
    assert "vllm:spec_decode" not in metrics and "vllm:generation_tokens_total" in metrics
