"""What `j0 bench run` learns before it sends a measured request: the models the server serves
(/v1/models) and its version (/version), the model to send to, the prompts (capped to fit the
model's max_model_len) and the manifest of the setup (j0.bench.result.manifest).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from j0.bench.dataset import prompts
from j0.bench.result import manifest
from j0.bench.result.manifest import SeenRun, SetupManifest
from j0.bench.run import status_check
from j0.bench.run.options import DEFAULT_REQUESTS, RunOptions
from j0.bench.run.sending import ServerSession
from j0.bench.stream.bounded_http import RedirectRefused
from j0.engine.server.endpoints import BodyTooLarge
from j0.errors import CHECK_FAILED, J0Error, parse_json


@dataclass
class Discovery:
    """The model to send to, the prompts to measure, and the manifest the result carries."""

    model: str
    chosen: list[prompts.Prompt]
    manifest: SetupManifest


async def served_models(
    server: ServerSession, wanted: str | None
) -> tuple[list[dict[str, Any]], str]:
    """/v1/models' entries and the model to send to (`wanted`, else the first)."""
    try:
        status, text = await server.get("/v1/models")
    except (RedirectRefused, BodyTooLarge) as exc:
        raise J0Error(str(exc), CHECK_FAILED) from None
    except Exception as exc:
        raise J0Error(
            f"no server answers at {server.base} ({type(exc).__name__}: {exc})", CHECK_FAILED
        ) from None
    if status != 200:
        raise J0Error(f"{server.base}/v1/models: HTTP {status}: {text[:300]}", CHECK_FAILED)
    try:
        data = parse_json(text, f"{server.base}/v1/models", CHECK_FAILED).get("data", [])
        models = [m for m in data if isinstance(m, dict)]
    except (J0Error, AttributeError, TypeError):
        models = []
    if not models:
        raise J0Error(f"{server.base}/v1/models lists no model: {text[:300]}", CHECK_FAILED)
    ids = [str(m.get("id")) for m in models]
    if wanted and wanted not in ids:
        raise J0Error(f"--model {wanted}: {server.base} serves {', '.join(ids)}", CHECK_FAILED)
    return models, wanted or ids[0]


async def server_version(server: ServerSession) -> str | None:
    try:
        status, text = await server.get("/version")
        if status == 200:
            version = parse_json(text, f"{server.base}/version").get("version")
            return version if isinstance(version, str) else None
    except Exception:
        return None
    return None


def max_words_for(card: dict[str, Any], max_tokens: int) -> int | None:
    """The longest synthetic prompt that leaves room for max_tokens in the model's context."""
    max_model_len = card.get("max_model_len")
    if isinstance(max_model_len, int) and max_model_len > 0:
        # about two tokens per word at most (digits are single tokens in Qwen's tokenizer)
        return max((max_model_len - max_tokens) // 2, 16)
    return None


async def discover(
    server: ServerSession, opts: RunOptions, status: SeenRun | None, notes: list[str]
) -> Discovery:
    models, model = await served_models(server, opts.model)
    version = await server_version(server)
    card = next(m for m in models if str(m.get("id")) == model)
    max_words = max_words_for(card, opts.max_tokens)
    dataset = prompts.resolve(opts.dataset, data_files=opts.dataset_files, max_words=max_words)
    count = opts.requests
    if count is None:
        count = min(DEFAULT_REQUESTS, dataset.available or DEFAULT_REQUESTS)
    chosen = dataset.take(count)
    dataset_info = {
        "name": dataset.name,
        "kind": dataset.kind,
        "source": dataset.source,
        "requests": len(chosen),
        "sha256": prompts.sha256_of(chosen),
    }
    if (
        dataset.kind == "synthetic"
        and max_words is not None
        and max(prompts.synthetic_lengths(opts.dataset)) > max_words
    ):
        notes.append(
            f"synthetic lengths capped to fit max_model_len={card.get('max_model_len')} with "
            f"max_tokens={opts.max_tokens}: {dataset.name}"
        )
    options = {
        "requests": len(chosen),
        "max_tokens": opts.max_tokens,
        "concurrency": opts.concurrency,
        "warmup": opts.warmup,
        "temperature": opts.temperature,
        "seed": opts.seed,
        "ignore_eos": opts.ignore_eos,
        "bin_size": opts.bin_size,
        "label": opts.label,
        "repeats": opts.repeats,
        "system_prompt": opts.system_prompt,
        "system_prompt_file": opts.system_prompt_file,
        "system_prompt_sha256": (
            hashlib.sha256(opts.system_prompt.encode("utf-8")).hexdigest()
            if opts.system_prompt is not None
            else None
        ),
    }
    log = manifest.read_log(opts.log) if opts.log is not None else None
    if status is not None:
        status_check.refuse_another_server(status, server.base, model, card, log)
    built = manifest.build(
        url=server.base,
        server_version=version,
        models=models,
        model=model,
        endpoint=opts.endpoint,
        thinking=opts.thinking,
        status=status,
        j0_flag=opts.j0,
        overlay_identity=opts.overlay_identity,
        dataset=dataset_info,
        options=options,
        log=log,
    )
    state = manifest.state_of(built)
    if (differs := state.differs()) is not None:
        notes.append(f"{differs}; recorded as J0 {state.ran}")
    return Discovery(model=model, chosen=chosen, manifest=built)
