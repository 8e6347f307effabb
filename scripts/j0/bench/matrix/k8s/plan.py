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
from dataclasses import dataclass, replace
from typing import Annotated, Any

from j0.bench.matrix.layout import result_name
from j0.compose.server import MatrixPoint, ServerKnobs, server_setting
from j0.edge.document import Document, needed, written_unless
from j0.edge.fields import Rule, all_are, list_of
from j0.errors import INPUT_LACKS, USAGE, J0Error

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


TEXTS = Rule(
    "an object of strings", lambda v: isinstance(v, dict) and all_are(list(v.values()), (str,))
)


@dataclass(frozen=True)
class PlanTask(Document):
    """One Job index: its setting, its shard of the prompts, where its result goes."""

    index: int
    setting: str
    shard: int
    shards: int
    prompts: str | None
    prompt_positions: list[Any] | None  # whole numbers
    requests: int | None
    out: str
    label: str


@dataclass(frozen=True)
class PlanServer(Document):
    """A setting's server: the setting (its keys as MatrixPoint.to_json writes them), and the `vllm
    serve` arguments and switches compose renders for it (j0.compose.server)."""

    name: str
    num_speculative_tokens: int
    j0: bool
    prefix_caching: bool
    baseline: bool = written_unless(False)
    server_args: Annotated[list[str], list_of((str,))] = needed(default_factory=list)
    server_env: Annotated[dict[str, str], TEXTS] = needed(default_factory=dict)

    @property
    def setting(self) -> MatrixPoint:
        return MatrixPoint(self.num_speculative_tokens, self.j0, self.prefix_caching)

    @classmethod
    def from_json(cls, value: Any, where: str) -> PlanServer:
        read = super().from_json(value, where)
        if read.setting.name != read.name or read.setting.baseline != read.baseline:
            raise J0Error(
                f"{where}: named {read.name!r}, but its draft tokens and J0 make "
                f"{read.setting.name!r}",
                INPUT_LACKS,
            )
        return read


def plan_server(setting: MatrixPoint, knobs: ServerKnobs) -> PlanServer:
    """The setting's server as compose renders it (j0.compose.server.server_setting)."""
    server = server_setting(setting, knobs)
    return PlanServer(**setting.to_json(), server_args=server.args(), server_env=server.env())


@dataclass(frozen=True)
class PlanBench(Document):
    """What every index's `j0 bench run` gets besides its URL, output and prompts."""

    dataset: str | None
    requests: int | None
    max_tokens: int | None
    repeats: int
    system_prompt: str | None


@dataclass(frozen=True)
class PlanDocument(Document):
    """plan.json: the run's name, its settings' servers, the bench options and the indexes.
    Written by build_plan (to_json, into the ConfigMap), read in every pod (from_json)."""

    run: str
    settings: dict[str, PlanServer]
    bench: PlanBench
    indexes: list[PlanTask]

    def to_json(self) -> dict[str, Any]:
        servers = {name: server.to_json() for name, server in self.settings.items()}
        return {**super().to_json(), "settings": servers}

    @classmethod
    def from_json(cls, value: Any, where: str) -> PlanDocument:
        """The plan, or J0Error (exit 2) naming `where`, the part, the key and the value."""
        read = super().from_json(value, where)
        settings = {
            name: PlanServer.from_json(server, f"{where}: settings[{name!r}]")
            for name, server in read.settings.items()
        }
        for task in read.indexes:
            if task.setting not in settings:
                raise J0Error(
                    f"{where}: indexes[{task.index}]: setting {task.setting!r} is not among the "
                    f"plan's settings ({', '.join(settings)})",
                    INPUT_LACKS,
                )
        return replace(read, settings=settings)


@dataclass(frozen=True)
class Plan:
    """The rendered plan: plan.json's document and the compressed prompt shards beside it."""

    run: str
    document: PlanDocument
    prompt_files: dict[str, bytes]

    @property
    def value(self) -> dict[str, Any]:
        """plan.json's value (what the ConfigMap holds)."""
        return self.document.to_json()

    @property
    def completions(self) -> int:
        return len(self.document.indexes)


def build_plan(
    run: str,
    settings: Sequence[MatrixPoint],
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
    indexes: list[PlanTask] = []
    for setting in settings:
        for k in range(shards):
            sharded = prompts is not None
            indexes.append(
                PlanTask(
                    index=len(indexes),
                    setting=setting.name,
                    shard=k,
                    shards=shards,
                    prompts=shard_file(k) if sharded else None,
                    prompt_positions=positions[k] if sharded else None,
                    requests=len(positions[k]) if sharded else options.requests,
                    out=f"{setting.name}/{result_name(k)}",
                    label=f"{setting.name} shard {k:02d}",
                )
            )
    document = PlanDocument(
        run=run,
        settings={s.name: plan_server(s, knobs) for s in settings},
        bench=PlanBench(
            dataset=options.dataset,
            requests=options.requests,
            max_tokens=options.max_tokens,
            repeats=options.repeats,
            system_prompt=options.system_prompt,
        ),
        indexes=indexes,
    )
    return Plan(run=run, document=document, prompt_files=files)
