"""The plan of a matrix on Kubernetes: one Job index per (setting, shard of the prompts).

The plan is JSON in a ConfigMap that every pod of the Indexed Job mounts; a pod reads its
JOB_COMPLETION_INDEX, finds its setting (the server's arguments and switches) and its shard of the
prompts there (pod.py). Shards split the prompts, never a request: shard k of K holds
prompts k, k+K, k+2K, ... (round robin, so that long and short prompts spread over the shards),
and the plan records each shard's prompt positions.

Standard library only.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from j0.bench.matrix.layout import result_name
from j0.compose.server import ServerKnobs, Setting, server_args, server_env
from j0.errors import USAGE, J0Error

PLAN_FILE = "plan.json"
# A ConfigMap holds at most 1 MiB (data and binaryData together); keep room for the plan.
CONFIGMAP_PROMPT_BUDGET = 900 * 1024


def shard_file(shard: int) -> str:
    return f"prompts-shard-{shard:02d}.jsonl.gz"


def split_round_robin(lines: Sequence[str], shards: int) -> list[list[int]]:
    """Prompt positions of each shard: shard k gets k, k+K, k+2K, ... (each prompt once)."""
    if shards < 1:
        raise J0Error(f"--shards {shards}: expected a positive number", USAGE)
    if shards > len(lines):
        raise J0Error(
            f"--shards {shards}: more shards than prompts ({len(lines)}); a shard is a set of "
            "whole requests",
            USAGE,
        )
    return [list(range(k, len(lines), shards)) for k in range(shards)]


@dataclass(frozen=True)
class BenchOptions:
    """What every `j0 bench run` of the matrix gets besides its URL, output and prompts."""

    dataset: str | None
    requests: int | None
    max_tokens: int | None
    repeats: int = 1
    system_prompt: str | None = None


@dataclass(frozen=True)
class Plan:
    """The rendered plan: plan.json's value and the compressed prompt shards beside it."""

    run: str
    value: dict[str, Any]
    prompt_files: dict[str, bytes]

    @property
    def completions(self) -> int:
        return len(self.value["indexes"])


def build_plan(
    run: str,
    settings: Sequence[Setting],
    knobs: ServerKnobs,
    shards: int,
    options: BenchOptions,
    prompts: Sequence[str] | None,
) -> Plan:
    """Index i runs setting i // shards on shard i % shards.

    `prompts` (JSONL lines, one request each) is needed for more than one shard; with one shard
    and no prompts, every pod's `j0 bench run` gets --dataset/--requests as given.
    """
    if shards > 1 and prompts is None:
        raise J0Error("--shards > 1 needs the prompts as JSONL lines to split", USAGE)
    positions = split_round_robin(prompts, shards) if prompts is not None else [[]]
    files: dict[str, bytes] = {}
    if prompts is not None:
        for k, chosen in enumerate(positions):
            text = "".join(prompts[i].rstrip("\n") + "\n" for i in chosen)
            files[shard_file(k)] = gzip.compress(text.encode("utf-8"), mtime=0)
        size = sum(len(data) for data in files.values())
        if size > CONFIGMAP_PROMPT_BUDGET:
            raise J0Error(
                f"the prompts take {size} bytes gzipped, more than a ConfigMap holds "
                f"({CONFIGMAP_PROMPT_BUDGET} bytes left for them): run fewer --requests, or "
                "shorter prompts",
                USAGE,
            )
    indexes: list[dict[str, Any]] = []
    for setting in settings:
        for k in range(shards):
            sharded = prompts is not None
            indexes.append(
                {
                    "index": len(indexes),
                    "setting": setting.name,
                    "shard": k,
                    "shards": shards,
                    "prompts": shard_file(k) if sharded else None,
                    "prompt_positions": positions[k] if sharded else None,
                    "requests": len(positions[k]) if sharded else options.requests,
                    "out": f"{setting.name}/{result_name(k)}",
                    "label": f"{setting.name} shard {k:02d}",
                }
            )
    value = {
        "run": run,
        "settings": {
            s.name: {
                **s.to_json(),
                "server_args": server_args(s, knobs),
                "server_env": server_env(s),
            }
            for s in settings
        },
        "bench": {
            "dataset": options.dataset,
            "requests": options.requests,
            "max_tokens": options.max_tokens,
            "repeats": options.repeats,
            "system_prompt": options.system_prompt,
        },
        "indexes": indexes,
    }
    return Plan(run=run, value=value, prompt_files=files)
