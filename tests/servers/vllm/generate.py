"""The vLLM stand-in's POST /v1/completions and /v1/chat/completions: the request read as vLLM
reads it (model, prompt or messages, max_tokens / max_completion_tokens, stream, stream_options,
chat_template_kwargs.enable_thinking), its errors, and the whole (not streamed) answer; a streamed
one is vllm/stream.py's. `die_after=N`: the request after the first N stops at its fourth step.
Part of vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import bodies
from .engine import Step
from .prompts import chat_tokens, tokenize
from .records import RequestRecord
from .stream import DYING_STEP, StreamOptions, send_stream

if TYPE_CHECKING:
    from .routes import VllmHandler

Prompt = tuple[list[str], bool | None]  # its tokens, and whether thinking is on (chat only)


def read_prompt(handler: VllmHandler, body: dict[str, Any], chat: bool) -> Prompt | None:
    """The request's prompt (messages through the chat template), or None after a 400 answer."""
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            handler.send_openai_error(
                400, "messages: a non-empty list is required", "BadRequestError"
            )
            return None
        kwargs = body.get("chat_template_kwargs") or {}
        enable_thinking = bool(kwargs.get("enable_thinking", True))
        return chat_tokens(messages, enable_thinking), enable_thinking
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return [str(t) for t in prompt], None
    if isinstance(prompt, str):
        return tokenize(prompt), None
    handler.send_openai_error(
        400, "prompt: a string or a list of token ids is required", "BadRequestError"
    )
    return None


def generate(handler: VllmHandler, body: dict[str, Any], chat: bool) -> None:
    server = handler.server
    model = body.get("model") or server.model
    if model != server.model:
        if server.log is not None:
            server.log.unknown_model(str(model), server.model)
        handler.send_openai_error(404, f"The model `{model}` does not exist.", "NotFoundError")
        return
    prompt = read_prompt(handler, body, chat)
    if prompt is None:
        return
    tokens, enable_thinking = prompt
    if len(tokens) >= server.max_model_len:
        handler.send_openai_error(
            400,
            f"This model's maximum context length is {server.max_model_len} "
            f"tokens. However, your request has {len(tokens)} input tokens.",
            "BadRequestError",
        )
        return
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    if max_tokens is None:
        max_tokens = server.max_model_len - len(tokens)
    stream = bool(body.get("stream")) and not server.ignore_stream
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage"))
    continuous = include_usage and bool(options.get("continuous_usage_stats"))
    token_ids = bool(body.get("return_token_ids"))  # vLLM's: the output's token ids per choice
    cached = server.prefix_cache.cached_tokens_for(tokens)
    record = server.engine.new_record(
        request_id=f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:16]}",
        endpoint="chat" if chat else "completions",
        model=model,
        stream=stream,
        prompt_tokens=len(tokens),
        cached_tokens=cached,
        max_tokens=int(max_tokens),
        enable_thinking=enable_thinking,
        temperature=body.get("temperature"),
        seed=body.get("seed"),
    )
    if record is None:  # the server died
        handler.close_connection = True
        return
    dies = server.die_after is not None and record.index >= server.die_after
    steps = server.engine.generate(record, " ".join(tokens))
    if stream:
        options = StreamOptions(chat, include_usage, continuous, dies, token_ids)
        send_stream(handler, record, steps, options)
    else:
        send_whole(handler, record, steps, chat, dies, token_ids)


def send_whole(
    handler: VllmHandler,
    record: RequestRecord,
    steps: Iterator[Step],
    chat: bool,
    dies: bool,
    token_ids: bool = False,
) -> None:
    server = handler.server
    reasoning = content = ""
    reason = None
    for n_step, (step_ids, step_reason) in enumerate(steps):
        if dies and n_step >= DYING_STEP:
            record.died = True
            handler.close_connection = True
            server.die()
            return
        before = record.add_output(step_ids)
        r, c = bodies.split_output(record, step_ids, before, server.reasoning_tokens)
        reasoning += r
        content += c
        reason = step_reason
    assert reason is not None
    server.engine.finish(record, reason)
    usage = bodies.usage(record, True, server.prompt_tokens_details)
    if "prompt_tokens_details" in usage:
        usage["prompt_tokens_details"].update(created_cache_tokens=None, multimodal_tokens=None)
    usage["completion_tokens_details"] = None
    spec = bodies.with_faults(
        bodies.spec_decode_metrics(record, server.num_spec_tokens, server.spec_metrics),
        server.spec_metrics_faults.get(record.index),
    )
    tail = {
        "system_fingerprint": server.fingerprint,
        "usage": usage,
        "metrics": bodies.whole_metrics(spec),
    }
    created = int(time.time())
    if chat:
        answer = bodies.chat_completion(record, created, (reasoning, content), reason, tail)
    else:
        answer = bodies.text_completion(record, created, reasoning + content, reason, tail)
    if token_ids:
        answer["choices"][0]["token_ids"] = list(record.output_token_ids)
    handler.send_json(200, answer)
