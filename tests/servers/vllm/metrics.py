"""The vLLM stand-in's GET /metrics: Prometheus text as prometheus_client writes it for vLLM 0.33,
the spec-decode counters `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
`..._num_accepted_tokens_total` and `..._num_accepted_tokens_per_pos_total{position}` per engine,
each with its `_created` gauge (vllm/v1/spec_decode/metrics.py), plus prompt/generation/request
counters and `vllm:cache_config_info`. Part of vllm/server.py, our vLLM 0.33 stand-in on
127.0.0.1.
"""

from __future__ import annotations

import time

from .records import BLOCK_SIZE, EngineCounters


def go_float(value: float) -> str:
    """A sample value as prometheus_client writes it (1.79e+09 rather than 1790000000.0)."""
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def metrics_text(
    counters: list[EngineCounters], model: str, prefix_caching: bool, speculative: bool = True
) -> str:
    """GET /metrics: the engines' `counters` (a copy) as prometheus_client writes them; a server
    without speculative decoding (`speculative` false, `vllm serve` without
    --speculative-config) has no spec-decode counters."""
    lines: list[str] = [
        "# HELP python_info Python platform information",
        "# TYPE python_info gauge",
        'python_info{implementation="CPython",major="3",minor="12",patchlevel="3",'
        'version="3.12.3"} 1.0',
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
        "# TYPE process_cpu_seconds_total counter",
        f"process_cpu_seconds_total {time.process_time():.2f}",
    ]
    engines = [(i, c, c.success, c.accepted_per_pos) for i, c in enumerate(counters)]

    def labels(i: int, extra: str = "") -> str:
        return f'{{engine="{i}"{extra},model_name="{model}"}}'

    def counter(name: str, doc: str, values: list[tuple[str, float, float]]) -> None:
        lines.append(f"# HELP {name}_total {doc}")
        lines.append(f"# TYPE {name}_total counter")
        lines.extend(f"{name}_total{lab} {go_float(v)}" for lab, v, _ in values)
        lines.append(f"# HELP {name}_created {doc}")
        lines.append(f"# TYPE {name}_created gauge")
        lines.extend(f"{name}_created{lab} {go_float(created)}" for lab, _, created in values)

    lines += [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
    ]
    lines += [f"vllm:num_requests_running{labels(i)} 0.0" for i, *_ in engines]
    counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        [(labels(i), c.prefix_cache_queries, c.created) for i, c, *_ in engines],
    )
    counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        [(labels(i), c.prefix_cache_hits, c.created) for i, c, *_ in engines],
    )
    counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        [(labels(i), c.prompt_tokens, c.created) for i, c, *_ in engines],
    )
    counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        [(labels(i), c.generation_tokens, c.created) for i, c, *_ in engines],
    )
    counter(
        "vllm:num_preemptions",
        "Cumulative number of preemption from the engine.",
        [(labels(i), c.preemptions, c.created) for i, c, *_ in engines],
    )
    counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        [
            (f'{{engine="{i}",finished_reason="{r}",model_name="{model}"}}', n, c.created)
            for i, c, s, _ in engines
            for r, n in s.items()
        ],
    )
    if speculative:
        counter(
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            [(labels(i), c.drafts, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            [(labels(i), c.draft_tokens, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            [(labels(i), c.accepted, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [
                (f'{{engine="{i}",model_name="{model}",position="{pos}"}}', n, c.created + pos)
                for i, c, _, per_pos in engines
                for pos, n in enumerate(per_pos)
            ],
        )
    lines += [
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
        "# TYPE vllm:cache_config_info gauge",
    ]
    lines += [
        f'vllm:cache_config_info{{block_size="{BLOCK_SIZE}",cache_dtype="auto",'
        f'enable_prefix_caching="{prefix_caching}",engine="{i}",'
        f'gpu_memory_utilization="0.9"}} 1.0'
        for i, *_ in engines
    ]
    return "\n".join(lines) + "\n"
