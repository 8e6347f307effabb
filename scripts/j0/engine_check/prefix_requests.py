"""Requests for a prefix-cache run (scripts/prefix-safe-h200.sh): prompts A and B sent one at a
time in a given order (A, A, B, A by default), greedy, EOS ignored, on the completions endpoint,
with vLLM's `return_token_ids`; the records `j0 dumps check --prompts` and a comparison of
acceptance need.

    python -m j0.engine_check.prefix_requests --url http://127.0.0.1:8011 --model target \
        --out DIR [--order A,A,B,A] [--max-tokens 32] [--tokens 600 --vocab 4,4000 |
        --text-a FILE --text-b FILE --chars 6000]

Token prompts (default): A and B are `--tokens` random ids in the `--vocab` range (seeded), sent
as token-id lists. Text prompts: the first `--chars` characters of two files. DIR gets
responses.json (each response, in order), prompts.json (each request's name and prompt token ids,
as the server returned them) and summary.json (per request: cached prompt tokens and the
per-request speculative-decoding metrics). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from j0.commands import MAX_SEED, finite_number, whole_number
from j0.engine.server import endpoints


def prompts(args: argparse.Namespace) -> dict[str, Any]:
    """{"A": prompt, "B": prompt}: token-id lists or texts."""
    if args.text_a or args.text_b:
        if not (args.text_a and args.text_b):
            raise SystemExit("prefix_requests: --text-a and --text-b go together")
        return {
            "A": Path(args.text_a).read_text(errors="replace")[: args.chars],
            "B": Path(args.text_b).read_text(errors="replace")[: args.chars],
        }
    low, high = (int(x) for x in args.vocab.split(","))
    rng = random.Random(args.seed)
    return {name: [rng.randrange(low, high) for _ in range(args.tokens)] for name in "AB"}


def summary_of(name: str, response: dict[str, Any]) -> dict[str, Any]:
    usage = response.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    spec = (response.get("metrics") or {}).get("speculative_decoding") or {}
    return {
        "name": name,
        "prompt_tokens": usage.get("prompt_tokens"),
        "cached_tokens": details.get("cached_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "mean_acceptance_length": spec.get("mean_acceptance_length"),
        "num_accepted_draft_tokens": spec.get("num_accepted_draft_tokens"),
        "num_draft_tokens": spec.get("num_draft_tokens"),
        "num_spec_steps": spec.get("num_spec_steps"),
        "per_step_accepted": spec.get("per_step_accepted"),
        "output_token_ids": (response.get("choices") or [{}])[0].get("token_ids"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m j0.engine_check.prefix_requests")
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8011")
    parser.add_argument("--model", required=True, help="the served model's name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--order", default="A,A,B,A")
    parser.add_argument("--max-tokens", type=whole_number(1), default=32)
    parser.add_argument("--tokens", type=whole_number(1), default=600)
    parser.add_argument("--vocab", default="4,4000", metavar="LOW,HIGH")
    parser.add_argument("--seed", type=whole_number(0, MAX_SEED), default=24)
    parser.add_argument("--text-a")
    parser.add_argument("--text-b")
    parser.add_argument("--chars", type=whole_number(1), default=6000)
    parser.add_argument("--timeout", type=finite_number(0, above=True), default=300.0)
    args = parser.parse_args(argv)
    chosen = prompts(args)
    order = args.order.split(",")
    responses, records, summary = [], [], []
    for number, name in enumerate(order):
        body = {
            "model": args.model,
            "prompt": chosen[name],
            "max_tokens": args.max_tokens,
            "temperature": 0,
            "ignore_eos": True,
            "return_token_ids": True,
        }
        response = endpoints.post_json(f"{args.url}/v1/completions", body, args.timeout)
        label = f"{number}:{name}"
        responses.append({"name": label, "response": response})
        ids = (response.get("choices") or [{}])[0].get("prompt_token_ids")
        if ids is None and isinstance(chosen[name], list):
            ids = chosen[name]
        records.append({"name": label, "prompt_token_ids": ids})
        summary.append(summary_of(label, response))
        row = summary[-1]
        print(
            f"{label}: cached {row['cached_tokens']} of {row['prompt_tokens']} prompt tokens, "
            f"acceptance length {row['mean_acceptance_length']}",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    for file, value in (
        ("responses.json", responses),
        ("prompts.json", records),
        ("summary.json", summary),
    ):
        (args.out / file).write_text(json.dumps(value, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
