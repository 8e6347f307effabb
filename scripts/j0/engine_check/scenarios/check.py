"""`j0 engine-check --scenario ...`: the serving scenarios of j0.engine_check.scenarios.sender
on the engine check's own two servers (J0 on with the audited article's file, J0 off with the
article's file), and one verdict per scenario from the audit's records and the outputs on vs off.

The audited file (the article's + overlay/jetspec-j0-audit.patch, sha256-checked) is written into
a tree of symbolic links to the installed vllm package whose speculator.py alone is a real file;
the J0-on server gets that tree first on PYTHONPATH, so the installed vLLM is never changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from j0.checks import FAIL, OK, WARN, Check
from j0.engine_check.scenarios import sender, table
from j0.engine_check.scenarios.record import ScenarioRecord, ScenariosRun
from j0.errors import INPUT_LACKS, J0Error
from j0.pins import Pins

NAMES = tuple(s.name for s in sender.SCENARIOS)
CHUNKED_PROMPT = sender.LENGTHS["c700"]
# What the scenarios force by default (scripts/engine-scenarios-h200.sh's settings): 256-token
# prefill chunks under the 500- and 700-token prompts, and 80 KV blocks of 16 (1280 tokens) that
# four 500-token requests do not fit into, so the scheduler preempts.
DEFAULT_BATCHED_TOKENS = 256
DEFAULT_GPU_BLOCKS = 80
SCENARIO_MAX_MODEL_LEN = 1024
PREFIX = table.PREFIX_SCENARIOS  # the scenarios that run with prefix caching on


@dataclass(frozen=True)
class ScenarioChoice:
    """The scenarios chosen and the server settings they force (on both servers)."""

    names: tuple[str, ...]
    max_num_batched_tokens: int | None
    num_gpu_blocks_override: int | None
    prefix_caching: bool

    def forced(self, name: str) -> str:
        """What scenario `name` forces, with the server settings that make it happen."""
        text = next(s.forces for s in sender.SCENARIOS if s.name == name)
        parts = []
        if name in ("chunked", "concurrency-4") and self.max_num_batched_tokens is not None:
            parts.append(f"--max-num-batched-tokens {self.max_num_batched_tokens}")
        if name == "concurrency-4" and self.num_gpu_blocks_override is not None:
            parts.append(f"--num-gpu-blocks-override {self.num_gpu_blocks_override}")
        if name in PREFIX:
            parts.append("--enable-prefix-caching")
        return f"{text} ({', '.join(parts)})" if parts else text


def choose(
    asked: Sequence[str],
    max_num_batched_tokens: int | None,
    num_gpu_blocks_override: int | None,
    prefix_caching: bool | None,
) -> ScenarioChoice:
    """The scenarios (`all` is every one, in sender.py's order) and their settings: each
    setting a chosen scenario needs defaults to what forces it; one that cannot force it is a
    usage error naming the value."""
    from j0.errors import USAGE

    wanted = set(NAMES) if "all" in asked else set(asked)
    names = tuple(n for n in NAMES if n in wanted)
    chunking = {"chunked", "concurrency-4"} & wanted
    if max_num_batched_tokens is None and chunking:
        max_num_batched_tokens = DEFAULT_BATCHED_TOKENS
    if "chunked" in wanted and max_num_batched_tokens is not None:
        if max_num_batched_tokens >= CHUNKED_PROMPT:
            raise J0Error(
                f"--max-num-batched-tokens {max_num_batched_tokens}: the chunked scenario's "
                f"prompt is {CHUNKED_PROMPT} tokens; expected fewer, so that it is chunked",
                USAGE,
            )
    if num_gpu_blocks_override is None and "concurrency-4" in wanted:
        num_gpu_blocks_override = DEFAULT_GPU_BLOCKS
    if prefix_caching is None:
        prefix_caching = bool(set(PREFIX) & wanted)
    elif not prefix_caching and set(PREFIX) & wanted:
        raise J0Error(
            "--no-prefix-caching with the prefix scenarios: without prefix caching there is no "
            "prefix hit to force; expected --prefix-caching (the default with them)",
            USAGE,
        )
    for flag, value in (
        ("--max-num-batched-tokens", max_num_batched_tokens),
        ("--num-gpu-blocks-override", num_gpu_blocks_override),
    ):
        if value is not None and value < 1:
            raise J0Error(f"{flag} {value}: expected a positive number", USAGE)
    return ScenarioChoice(names, max_num_batched_tokens, num_gpu_blocks_override, prefix_caching)


def installed_vllm_dir(env: dict[str, str]) -> Path:
    """The vllm package the servers will import: found by this Python run with the servers'
    environment (their PYTHONPATH), without importing vLLM."""
    from j0.engine.source.base_sources import FIND_VLLM_DIR

    found = subprocess.run(
        [sys.executable, "-c", FIND_VLLM_DIR], env=env, capture_output=True, text=True, check=False
    ).stdout.strip()
    if not found:
        raise J0Error(f"no vllm package for {sys.executable}: nothing to audit", INPUT_LACKS)
    return Path(found)


def audited_tree(work: Path, env: dict[str, str], pins: Pins) -> Path:
    """WORK/audit-site: a `vllm` folder of symbolic links to the installed one, its
    speculator.py the audited article's file (made from the installed file, which must be the
    article's). Returns the folder to put first on PYTHONPATH."""
    from j0.article.build import audit_file

    package = installed_vllm_dir(env)
    relative = Path(pins.speculator_relpath).relative_to("vllm")
    installed = package / relative
    if not installed.is_file():
        raise J0Error(f"{installed}: no such file (the installed vLLM lacks its speculator.py)")
    try:
        audited = audit_file(installed.read_bytes(), str(installed), pins, "article")
    except J0Error as exc:
        raise J0Error(
            f"--scenario serves the audited article's file, made from the installed one: {exc}",
            exc.exit_code,
        ) from None
    site = work / "audit-site"
    if site.exists():
        import shutil

        shutil.rmtree(site)
    skip = installed.parent / "__pycache__"  # stale bytecode of the unaudited file
    for folder, dirs, files in os.walk(package):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d != skip]
        into = site / "vllm" / here.relative_to(package)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            if here / name != installed:
                (into / name).symlink_to(here / name)
    (site / "vllm" / relative).write_bytes(audited)
    return site


def send(
    url: str, model: str, settings: ScenarioChoice, max_tokens: int, audit: Path | None
) -> list[ScenarioRecord]:
    """Every chosen scenario, one after the other, as j0.engine_check.scenarios.sender sends
    them."""
    prompts = sender.make_prompts(30)
    chosen = [s for s in sender.SCENARIOS if s.name in settings.names]
    return [sender.run_scenario(s, url, model, prompts, max_tokens, audit) for s in chosen]


def verdicts(
    on: list[ScenarioRecord],
    off: list[ScenarioRecord],
    audit: Path,
    settings: ScenarioChoice,
    mode: str,
) -> tuple[list[Check], list[dict[str, Any]]]:
    """One check and one report row per scenario: the audit's verdict on the records written
    while it ran (J0 on), and its outputs J0 on vs off (token for token in one stream; under
    concurrency a WARN, not comparable). A scenario fails when the audit is not PASS (nothing to
    judge is never a pass) or its single-stream outputs differ."""
    caching = "on" if settings.prefix_caching else "off"
    run = ScenariosRun("engine-check", "article", caching, "on", mode, None, None, None, ())
    partner = replace(run, j0="off", scenarios=tuple(off))
    found: list[Check] = []
    rows = []
    for scenario in on:
        audit_row = table.audit_cell(audit, scenario)
        outputs = table.compare_outputs(run, scenario, partner)
        expected = table.expected(run, scenario)
        bad = audit_row["verdict"] != "PASS" or outputs == "DIFFER"
        status = FAIL if bad else WARN if outputs.startswith("WARN") else OK
        row = {
            "scenario": scenario.name,
            "forces": settings.forced(scenario.name),
            "status": status,
            "audit": audit_row["verdict"],
            "rows": audit_row["rows"],
            "draws": audit_row["draws"],
            "mismatches": audit_row["mismatches"],
            "first_mismatches": audit_row.get("first", []),
            "preemptions": scenario.preemptions,
            "cached_tokens": scenario.cached_tokens,
            "outputs_on_vs_off": outputs,
            "expected": expected,
        }
        rows.append(row)
        detail = (
            f"audit {row['audit']}: {row['rows']} rows, {row['draws']} draws, "
            f"{row['mismatches']} mismatches; preemptions {row['preemptions']}; "
            f"cached tokens {row['cached_tokens']}; outputs on vs off: {outputs}"
        )
        if bad and expected.startswith("FAIL (known defect)"):
            detail += "; expected: the article's known cross-request defect at prefix hits"
        found.append(Check(f"scenario {scenario.name}", status, detail))
    return found, rows
