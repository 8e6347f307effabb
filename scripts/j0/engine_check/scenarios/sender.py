"""Serving scenarios for one running vLLM server (scripts/engine-scenarios-h200.sh; issue 30):
what each forces, the requests it sends, and the evidence it records.

    python -m j0.engine_check.scenarios.sender --url http://127.0.0.1:8021 --model target \
        --out DIR --label article-cache-on --file article --caching on --j0 on --mode eager \
        [--audit AUDIT_DIR] [--max-tokens 48] [--seed 30]

The scenarios run one after the other on the same server:

  single          3 prompts (40, 120, 200 tokens), one at a time
  chunked         one 700-token prompt alone: longer than the server's --max-num-batched-tokens
  prefix          A, A, B, A one at a time (prefix-cache hits with caching on)
  concurrency-4   4 prompts of 500 tokens at once: batched steps, chunked prefill, and, with a
                  KV cache smaller than 4 x 548 tokens, preemption and resumption
  prefix-4        A, A, B, A at once (hits beside other requests, with caching on)

Prompts are random token ids (seeded), sent as token-id lists to /v1/completions, greedy, EOS
ignored, with vLLM's `return_token_ids`. Before and after each scenario the server's /metrics
(`vllm:num_preemptions`, read with prometheus_client's parser) and, with --audit, the line
count of each audit-*.jsonl are taken: the audit writes a step's line before the step's draft
tokens return, so the lines written between two counts are that scenario's steps. DIR gets
scenarios.json (the run's settings, and per scenario what it forces, its requests' prompt and
output token ids, cached tokens, preemptions and audit line ranges; the type is
j0.engine_check.scenarios.record's ScenariosRun). The table over several runs is
j0.engine_check.scenarios.table's job.
"""

from __future__ import annotations

import argparse
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.commands import whole_number
from j0.engine.server import endpoints
from j0.engine_check.scenarios.record import (
    FILES,
    MODES,
    ON_OFF,
    RequestRecord,
    ScenarioRecord,
    ScenariosRun,
)


@dataclass(frozen=True)
class Scenario:
    name: str
    forces: str
    prompts: tuple[str, ...]  # prompt names, in the order sent
    concurrent: bool

    @property
    def single_stream(self) -> bool:
        return not self.concurrent


SCENARIOS = (
    Scenario("single", "one request at a time (the baseline)", ("s40", "s120", "s200"), False),
    Scenario(
        "chunked",
        "chunked prefill: a 700-token prompt alone, longer than --max-num-batched-tokens",
        ("c700",),
        False,
    ),
    Scenario("prefix", "prefix hits: A, A, B, A one at a time", ("A", "A", "B", "A"), False),
    Scenario(
        "concurrency-4",
        "4 streams at once (max-num-seqs 4): batched steps, chunked prefill, preemption",
        ("p1", "p2", "p3", "p4"),
        True,
    ),
    Scenario(
        "prefix-4",
        "prefix hits beside other requests: A, A, B, A at once",
        ("A",) * 2 + ("B", "A"),
        True,
    ),
)
LENGTHS = {"s40": 40, "s120": 120, "s200": 200, "c700": 700, "A": 600, "B": 600}
LENGTHS.update({f"p{i}": 500 for i in range(1, 5)})


def make_prompts(seed: int, low: int = 4, high: int = 4000) -> dict[str, list[int]]:
    rng = random.Random(seed)
    return {name: [rng.randrange(low, high) for _ in range(n)] for name, n in LENGTHS.items()}


def preemptions(url: str) -> float | None:
    """vllm:num_preemptions summed over its labels, from the server's /metrics."""
    return preemptions_in(endpoints.get_text(f"{url}/metrics"))


def preemptions_in(text: str) -> float | None:
    """vllm:num_preemptions summed over its labels (engines); None when not exposed."""
    from prometheus_client.parser import text_string_to_metric_families

    total = None
    for family in text_string_to_metric_families(text):
        if family.name == "vllm:num_preemptions":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    total = (total or 0.0) + sample.value
    return total


def _complete(url: str, model: str, prompt: list[int], max_tokens: int) -> dict[str, Any]:
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    return endpoints.post_json(f"{url}/v1/completions", body, 600.0)


def run_scenario(
    scenario: Scenario,
    url: str,
    model: str,
    prompts: dict[str, list[int]],
    max_tokens: int,
    audit: Path | None,
) -> ScenarioRecord:
    from j0.article.audit_records import line_counts

    before_lines = line_counts(audit) if audit is not None else {}
    before = preemptions(url)
    names = scenario.prompts
    if scenario.concurrent:
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            futures = [pool.submit(_complete, url, model, prompts[n], max_tokens) for n in names]
            responses = [f.result() for f in futures]
    else:
        responses = [_complete(url, model, prompts[n], max_tokens) for n in names]
    after = preemptions(url)
    after_lines = line_counts(audit) if audit is not None else {}
    return ScenarioRecord(
        name=scenario.name,
        forces=scenario.forces,
        single_stream=scenario.single_stream,
        requests=tuple(
            RequestRecord.from_response(f"{i}:{n}", prompts[n], r)
            for i, (n, r) in enumerate(zip(names, responses, strict=True))
        ),
        preemptions=None if before is None or after is None else after - before,
        audit_lines={name: (before_lines.get(name, 0), n) for name, n in after_lines.items()},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m j0.engine_check.scenarios.sender")
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", required=True, help="the run's name in the table")
    parser.add_argument("--file", required=True, choices=FILES)
    parser.add_argument("--caching", required=True, choices=ON_OFF)
    parser.add_argument("--j0", required=True, choices=ON_OFF)
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--audit", type=Path, help="the server's VLLM_DFLASH_AUDIT folder")
    parser.add_argument("--max-tokens", type=whole_number(1), default=48)
    parser.add_argument("--seed", type=whole_number(0), default=30)
    parser.add_argument("--only", help="comma-separated scenario names (default: all)")
    args = parser.parse_args(argv)
    url = endpoints.check_server_url(args.url)
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only.split(",")]
    prompts = make_prompts(args.seed)
    results = []
    for scenario in chosen:
        results.append(
            run_scenario(scenario, url, args.model, prompts, args.max_tokens, args.audit)
        )
        print(f"{args.label}: {scenario.name}: done", flush=True)
    ScenariosRun(
        label=args.label,
        file=args.file,
        caching=args.caching,
        j0=args.j0,
        mode=args.mode,
        audit=str(args.audit) if args.audit else None,
        max_tokens=args.max_tokens,
        seed=args.seed,
        scenarios=tuple(results),
    ).write(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
