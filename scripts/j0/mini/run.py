"""`j0 mini run OUT`: the 2 x 2 matrix (drafter mask/J0 x J0 off/on) per draft-token count in
vLLM's real engine (this Python's, `--here`), each setting one server start (prefix caching off,
dumps with J0 on) measured by `j0 bench run` on the held-out prompts; then `j0 bench report` per
drafter (J0 on minus off), `j0 dumps check` on each J0-on dump set and the teacher-forced
cross-check on each J0-off setting. Everything goes to OUT/run/; OUT/run/mini-run.json holds the
summary and every check's line."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.atomic import write_text_atomic
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK, USAGE, J0Error
from j0.mini.train import DRAFTERS


@dataclass(frozen=True)
class MiniRunOptions:
    out: Path
    tokens: tuple[int, ...] = (7,)
    contexts: tuple[int, ...] = (256, 1024, 2048)
    requests: int = 4
    max_tokens: int = 256
    port: int = 8765
    startup_timeout: float = 600.0
    graphs: bool = False
    crosscheck: bool = True
    device: str = "auto"  # the cross-check's reference
    dump_steps: int = 200
    server_command: list[str] | None = None  # in the place of `vllm serve` (tests)
    run_dir: Path | None = None  # where the run goes (None: OUT/run)
    variant: str = "article"  # the speculator.py J0 must run from: article or prefix-safe


@dataclass
class MiniRunResult:
    summary: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return CHECK_FAILED if self.problems else (INPUT_LACKS if self.missing else OK)

    @property
    def verdict(self) -> str:
        if self.problems:
            return "==> FAIL: " + "; ".join(self.problems)
        if self.missing:
            return "==> INCOMPLETE: " + "; ".join(self.missing)
        return "==> PASS: every setting ran, every check passed"


def max_model_len(manifest: dict[str, Any], options: MiniRunOptions) -> int:
    """>= 4x the drafters' training length and the longest prompt, plus generation; in 256s."""
    draft_seq = int(manifest["sizes"]["draft_seq"])
    need = max(4 * draft_seq, max(options.contexts)) + options.max_tokens + max(options.tokens) + 1
    return -(-need // 256) * 256


def read_manifest(out: Path) -> dict[str, Any]:
    path = out / "mini.json"
    if not path.is_file():
        raise J0Error(f"{path}: no such file; expected a folder made by `j0 mini train`", USAGE)
    manifest: dict[str, Any] = json.loads(path.read_text())
    for name in ("target", *(f"drafter-{d}" for d in DRAFTERS)):
        if not (out / name / "config.json").is_file():
            raise J0Error(
                f"{out / name}/config.json: missing; run `j0 mini train` again", INPUT_LACKS
            )
    return manifest


def run_matrix(options: MiniRunOptions, say: Any = print) -> MiniRunResult:
    from j0.mini.preflight import STARTED, check_run_dir, move_aside, preflight
    from j0.mini.run_setting import SettingPlan, run_setting

    manifest = read_manifest(options.out)
    work = options.run_dir or options.out / "run"
    earlier = check_run_dir(work)
    # Before anything is made: a GPU, vLLM's server, the speculator.py (69 otherwise).
    speculator = preflight(options.variant, stand_in=options.server_command is not None)
    from j0.mini import corpus as corpus_mod
    from j0.mini import tokenizer as tok_mod
    from j0.mini.prompts import make_prompts, write_jsonl

    if earlier is not None:
        move_aside(work, earlier, say)
    work.mkdir(parents=True)
    started = {"variant": options.variant, "speculator": speculator, "time": time.time()}
    write_text_atomic(work / STARTED, json.dumps(started, indent=1) + "\n")
    corpus = corpus_mod.read(options.out / "corpus.json")
    tokenizer = tok_mod.load(options.out / "target")
    prompts = make_prompts(corpus.texts(True), tokenizer, options.contexts, options.requests)
    dataset = work / "prompts.jsonl"
    write_jsonl(prompts, dataset)
    length = max_model_len(manifest, options)
    say(
        f"==> {len(prompts)} held-out prompts ({', '.join(map(str, options.contexts))} tokens); "
        f"max-model-len {length}"
    )
    result = MiniRunResult()
    settings: dict[str, Any] = {}
    began = time.monotonic()
    for k in options.tokens:
        for drafter in DRAFTERS:
            for j0 in (False, True):
                name = f"k{k}-j0-{'on' if j0 else 'off'}"
                folder = work / f"drafter-{drafter}" / name
                plan = SettingPlan(drafter, k, j0, length, folder, options.variant)
                outcome = run_setting(options, plan, dataset, prompts, say)
                settings[plan.name] = outcome.summary
                result.problems.extend(outcome.problems)
                result.missing.extend(outcome.missing)
    reports = {}
    for drafter in DRAFTERS:
        reports[drafter] = make_report(work / f"drafter-{drafter}", result)
    result.summary = {
        "out": str(work),
        "max_model_len": length,
        "trained": {
            key: manifest.get(key)
            for key in ("smoke", "seed", "budget_s_per_model", "labels", "gamma", "draft_data")
        },
        "contexts": list(options.contexts),
        "tokens": list(options.tokens),
        "requests_per_context": options.requests,
        "max_tokens": options.max_tokens,
        "variant": options.variant,
        "speculator": speculator,
        "seconds": round(time.monotonic() - began, 1),
        "settings": settings,
        "reports": reports,
        "problems": result.problems,
        "missing": result.missing,
    }
    write_text_atomic(work / "mini-run.json", json.dumps(result.summary, indent=1) + "\n")
    write_text_atomic(work / "mini-run.md", markdown(result.summary))
    return result


def make_report(folder: Path, result: MiniRunResult) -> str:
    """`j0 bench report FOLDER` through its function; what it wrote, or why it could not."""
    from j0.bench.report import main as report_main

    try:
        report_main(folder, bin_size=256)
    except J0Error as exc:
        result.missing.append(f"j0 bench report {folder.name}: {exc}")
        return f"not made: {exc}"
    return str(folder / "report.md")


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "# j0 mini run",
        "",
        f"max-model-len {summary['max_model_len']}, {summary['requests_per_context']} prompts "
        f"per context, {summary['max_tokens']} tokens each, greedy, prefix caching off.",
        "Trained: "
        + ", ".join(f"{key} {value}" for key, value in (summary.get("trained") or {}).items()),
        "",
        "| setting | J0 as run | pooled acceptance length | per-request mean by context | checks |",
        "|---|---|---|---|---|",
    ]
    for name, s in summary["settings"].items():
        contexts = ", ".join(
            f"{c}: {v}" for c, v in (s.get("per_request_mean_by_context") or {}).items()
        )
        checks = "; ".join(s.get("lines", []))
        ran = f"{s.get('j0', '?')} ({s.get('j0_from', 'no server log')})"
        lines.append(
            f"| {name} | {ran} | {s.get('pooled_acceptance_length')} | {contexts} | {checks} |"
        )
    lines += [
        "",
        *[f"- problem: {p}" for p in summary["problems"]],
        *[f"- missing: {m}" for m in summary["missing"]],
        "",
    ]
    return "\n".join(lines)
