"""The JSON bodies of the vLLM stand-in's generation answers, field for field (names, order,
nulls, what is left out) as vLLM 0.33.0 writes them (vllm/entrypoints/openai/completion/
serving.py, .../chat_completion/serving.py): the streamed chunks, the whole answers, `usage`, and
`metrics.speculative_decoding` as RequestSpecDecodeMetrics.to_dict writes it. Part of
vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

from typing import Any

from .records import RequestRecord

Body = dict[str, Any]


def split_output(
    record: RequestRecord, token_ids: list[int], before: int, reasoning_tokens: int
) -> tuple[str, str]:
    """(reasoning text, content text) of the tokens that follow `before` output tokens: with
    thinking on, a chat's first `reasoning_tokens` tokens are reasoning."""
    words = [f" t{t}" for t in token_ids]
    if record.endpoint != "chat" or not record.enable_thinking:
        return "", "".join(words)
    cut = max(0, min(len(words), reasoning_tokens - before))
    return "".join(words[:cut]), "".join(words[cut:])


def usage(record: RequestRecord, final: bool, prompt_tokens_details: bool) -> Body:
    body: Body = {
        "prompt_tokens": record.prompt_tokens,
        "total_tokens": record.prompt_tokens + record.output_tokens,
        "completion_tokens": record.output_tokens,
    }
    if final and prompt_tokens_details:
        body["prompt_tokens_details"] = {"cached_tokens": record.cached_tokens}
    elif not final and record.endpoint == "chat":
        body["completion_tokens_details"] = None
    return body


def spec_decode_metrics(record: RequestRecord, num_spec_tokens: int, level: str) -> Body | None:
    """`metrics.speculative_decoding` at --per-request-spec-decode-metrics `level`; none from a
    server without speculative decoding (num_spec_tokens 0)."""
    if level == "none" or num_spec_tokens == 0:
        return None
    histogram = [0] * (num_spec_tokens + 1)
    for a in record.per_step_accepted:
        histogram[a] += 1
    steps = sum(histogram)
    accepted = sum(j * n for j, n in enumerate(histogram))
    draft_tokens = sum(record.per_step_drafted)
    payload: Body = {
        "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / draft_tokens if draft_tokens else 0.0,
        "acceptance_histogram": histogram,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": draft_tokens,
        "num_spec_tokens": num_spec_tokens,
    }
    if level == "detailed" and record.per_step_accepted:
        payload["per_step_accepted"] = list(record.per_step_accepted)
        payload["per_step_drafted"] = list(record.per_step_drafted)
    return payload


def with_faults(spec: Body | None, faults: dict[str, Any] | None) -> Body | None:
    """`spec` with the stand-in's scripted faults in it (VllmStandIn.spec_metrics_faults)."""
    if spec is None or not faults:
        return spec
    changed = {**spec, **faults}
    return {k: v for k, v in changed.items() if v is not None}


# -- streaming ----------------------------------------------------------------------------------


def chunk_head(record: RequestRecord, chat: bool, created: int) -> Body:
    return {
        "id": record.request_id,
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": created,
        "model": record.model,
    }


def first_chat_chunk(head: Body, record: RequestRecord, continuous: bool) -> Body:
    """A chat stream's first chunk: the assistant's role, no content yet."""
    first: Body = {
        **head,
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
    }
    if continuous:
        first["usage"] = {
            "prompt_tokens": record.prompt_tokens,
            "total_tokens": record.prompt_tokens,
            "completion_tokens": 0,
            "completion_tokens_details": None,
        }
    first["prompt_token_ids"] = None
    first["prompt_text"] = None
    return first


def step_chunk(head: Body, chat: bool, reasoning: str, content: str, reason: str | None) -> Body:
    """The chunk of one engine step's tokens (the caller adds usage and the fingerprint)."""
    if chat:
        delta: Body = {}
        if content:
            delta["content"] = content
        if reasoning:
            delta["reasoning"] = reasoning
        choice: Body = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        if reason is not None:
            choice["stop_reason"] = None
        choice["token_ids"] = None
        return {**head, "choices": [choice]}
    return {
        **head,
        "choices": [
            {
                "index": 0,
                "text": reasoning + content,
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
                "prompt_token_ids": None,
                "token_ids": None,
                "weight_versions": None,
            }
        ],
    }


# -- whole answers ------------------------------------------------------------------------------


def whole_metrics(spec: Body | None) -> Body:
    return {
        "time_to_first_token_ms": None,
        "generation_time_ms": None,
        "queue_time_ms": None,
        "mean_itl_ms": None,
        "tokens_per_second": None,
        "speculative_decoding": spec,
    }


def chat_completion(
    record: RequestRecord, created: int, text: tuple[str, str], reason: str, tail: Body
) -> Body:
    """A whole chat answer; `text` is (reasoning, content), `tail` its fingerprint, usage and
    metrics."""
    reasoning, content = text
    message = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "reasoning": reasoning or None,
    }
    return {
        "id": record.request_id,
        "object": "chat.completion",
        "created": created,
        "model": record.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
                "token_ids": None,
                "routed_experts": None,
                "weight_versions": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": tail["system_fingerprint"],
        "usage": tail["usage"],
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "prompt_text": None,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": tail["metrics"],
    }


def text_completion(
    record: RequestRecord, created: int, text: str, reason: str, tail: Body
) -> Body:
    """A whole completion answer; `tail` holds its fingerprint, usage and metrics."""
    return {
        "id": record.request_id,
        "object": "text_completion",
        "created": created,
        "model": record.model,
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
                "token_ids": None,
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "routed_experts": None,
                "weight_versions": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": tail["system_fingerprint"],
        "usage": tail["usage"],
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": tail["metrics"],
    }
