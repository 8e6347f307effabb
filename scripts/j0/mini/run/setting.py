"""One setting of `j0 mini run`: start the server (drafter, draft tokens, J0 on/off), wait for
/health, `j0 bench run` on the prompts, then with J0 on `j0 dumps check` on its dumps, with J0 off
the prompts again as token ids for the teacher-forced cross-check (run after the server stops).
The setting's J0 label is what its server's log shows ran (j0.engine.server.j0_state: the identity
line, the patch's DFLASH_CTX_NOISE line), never what was asked: where they differ, or J0 ran from
another file than the --variant asked, the setting is a problem (exit 1), said in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from j0.article.spec_config import SpecConfig
from j0.edge.atomic import write_text_atomic
from j0.edge.fields import write_document
from j0.engine.server import endpoints
from j0.errors import J0Error
from j0.mini.run.setting_record import BASELINE, DFLASH, NGRAM


@dataclass(frozen=True)
class PointPlan:
    """One server start of the run. kind: dflash (a drafter, J0 on or off, J0's seed), ngram
    (vLLM's n-gram speculator, `prompt_lookup_max` in speculative_extra) or baseline (none)."""

    drafter: str | None
    tokens: int  # draft tokens (mini-run.json's `k`)
    j0: bool
    max_model_len: int
    folder: Path
    kind: str = DFLASH
    seed: int | None = None  # J0's seed (None: the pinned one)
    extra_env: dict[str, str] = field(default_factory=dict)
    speculative_extra: dict[str, int] = field(default_factory=dict)
    slots: int = 4
    variant: str = "article"  # the speculator.py J0 must run from
    port: int = 8765
    servers: int = 1  # servers sharing the GPU at once (each a share of its memory)

    @property
    def name(self) -> str:
        """The setting's folder relative to the run: drafter-mask/k7-j0-on, ngram/k7, baseline."""
        if self.kind == BASELINE:
            return BASELINE
        if self.kind == NGRAM:
            return f"{NGRAM}/k{self.tokens}"
        return f"drafter-{self.drafter}/{self.folder.name}"


def spec_config(
    kind: str, tokens: int, draft: Path, extra: dict[str, int] | None = None
) -> SpecConfig | None:
    """A setting's speculative config: the article's with the drafter `draft` (dflash), vLLM's
    n-gram speculator with the lookup's settings in `extra` (ngram), None for the baseline."""
    if kind == BASELINE:
        return None
    if kind == NGRAM:
        return SpecConfig("ngram", tokens, None, None, extra=dict(extra or {}))
    return replace(SpecConfig.article(str(draft), tokens), extra=dict(extra or {}))


@dataclass
class PointOutcome:
    summary: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Sampling:
    """How every request of the run is sampled: the miniature's temperature (mini.json's
    `sampling`, chosen by j0.mini.train.temperature; 0: greedy) and, above 0, each request's seed
    made from `seed` and its prompt's id (j0.measure.pairing.request_seed), the same in every
    setting, so paired settings draw the target's samples with the same seed."""

    temperature: float = 0.0
    seed: int = 0

    @property
    def bench_seed(self) -> int | None:
        return self.seed if self.temperature > 0 else None

    def body(self, prompt_id: str) -> dict[str, Any]:
        """The sampling fields of one request's body."""
        from j0.measure.pairing import request_seed

        seed = request_seed(self.bench_seed, prompt_id)
        return {"temperature": self.temperature, **({} if seed is None else {"seed": seed})}


KV_CACHE_BYTES = 2 * 1024**3  # per server where several share the GPU


def memory_share(servers: int) -> dict[str, Any]:
    """ServerStart's memory fields for one of `servers` servers at once on one GPU."""
    if servers <= 1:
        return {}
    return {
        "gpu_memory_utilization": round(min(0.3, 0.85 / servers), 3),
        "kv_cache_memory_bytes": KV_CACHE_BYTES,
    }


def run_setting(
    options: Any,
    plan: PointPlan,
    dataset: Path,
    prompts: list[Any],
    say: Any,
    sampling: Sampling = Sampling(),
) -> PointOutcome:
    from j0.bench import RunOptions
    from j0.bench import run_bench as run
    from j0.engine.server.endpoints import first_model
    from j0.engine.server.launcher import LocalServer, ServerStart, wait_healthy

    outcome = PointOutcome()
    lines: list[str] = []
    plan.folder.mkdir(parents=True)
    speculative = plan.kind != BASELINE
    draft = options.out / f"drafter-{plan.drafter}"
    setting = ServerStart(
        target=options.out / "target",
        draft=draft,
        spec=spec_config(plan.kind, plan.tokens, draft, plan.speculative_extra),
        graphs=options.graphs,
        j0=plan.j0,
        dumps=plan.folder / "dumps",
        dump_steps=options.dump_steps if plan.j0 else 0,
        port=plan.port,
        max_model_len=plan.max_model_len,
        max_num_seqs=plan.slots,
        extra_env=plan.extra_env,
        **memory_share(plan.servers),
    )
    say(f"==> {plan.name}: starting the server (port {plan.port})")
    server = LocalServer(setting, plan.folder / "server.log", options.server_command)
    answers: list[dict[str, Any]] = []
    crosscheck = plan.kind == DFLASH and not plan.j0 and options.crosscheck
    try:
        healthy = wait_healthy(server, options.startup_timeout)
        if plan.kind == DFLASH and plan.j0 and options.dump_steps:
            model = str(first_model(server.url)["id"])
            outcome.summary["dump_pass"] = dump_pass(
                server.url, model, prompts, plan, options, sampling
            )
        say(
            f"    healthy after {healthy:.0f} s; j0 bench run ({len(prompts)} prompts, "
            f"{plan.slots} at a time)"
        )
        bench = run(
            RunOptions(
                url=server.url,
                out=plan.folder / "result.json",
                requests=len(prompts),
                max_tokens=options.max_tokens,
                dataset=str(dataset),
                endpoint="completions",
                thinking=False,
                ignore_eos=True,
                label=plan.name,
                j0=plan.j0 if plan.kind == DFLASH else None,
                log=plan.folder / "server.log",  # the result's J0 label: from the file that ran
                bin_size=256,
                temperature=sampling.temperature,
                seed=sampling.bench_seed,
                concurrency=plan.slots,
                keep_outputs=True,
                progress=False,
            )
        )
        problem = bench.failure()
        if problem is not None:
            outcome.problems.append(f"{plan.name}: j0 bench run: {problem}")
        if crosscheck:
            model = str(first_model(server.url)["id"])
            chosen = prompts[: options.crosscheck_requests]
            answers = ask_with_ids(server.url, model, chosen, options.max_tokens, sampling)
            for prompt, answer in zip(chosen, answers, strict=True):
                if isinstance(answer, dict):
                    answer["j0_prompt_id"] = prompt.id  # its context bin, for the ceiling
            write_text_atomic(plan.folder / "crosscheck-answers.json", json.dumps(answers) + "\n")
    except (J0Error, OSError) as exc:  # OSError: the server stopped answering (urllib)
        outcome.problems.append(f"{plan.name}: {exc}")
    finally:
        server.stop()
    spec = setting.spec
    outcome.summary.update(
        {
            "kind": plan.kind,
            "drafter": plan.drafter,
            "k": plan.tokens if speculative else None,
            "j0": plan.j0 if plan.kind == DFLASH else None,
            "seed": plan.seed,
            "slots": plan.slots,
            "temperature": sampling.temperature,
            "sample_seed": sampling.bench_seed,
            "port": plan.port,
            "servers_at_once": plan.servers,
            "speculative_config": None if spec is None else spec.to_dict(),
        }
    )
    if plan.extra_env.get("J0_MINI_SPECULATOR"):
        from j0.mini.run.seeds import sha256_of

        outcome.summary["speculator_sha256"] = sha256_of(plan.extra_env)
    ran_as_asked(plan, outcome)
    if (plan.folder / "result.json").is_file():
        outcome.summary.update(by_context(plan.folder / "result.json"))
    if plan.kind == DFLASH and plan.j0:
        lines.append(dumps_line(plan, outcome))
    elif crosscheck and answers:
        lines.append(crosscheck_line(options, plan, answers, outcome, sampling.temperature))
    outcome.summary["lines"] = lines
    for line in lines:
        say(f"    {line}")
    return outcome


def dump_pass(
    url: str,
    model: str,
    prompts: list[Any],
    plan: PointPlan,
    options: Any,
    sampling: Sampling = Sampling(),
) -> dict[str, Any]:
    """J0 on, before the measured requests: prompts one at a time until the dumps' budget
    (VLLM_DFLASH_DUMP_STEPS) is spent. The patch dumps only steps that hold one request, so the
    measured requests, several at a time, are not dumped, except where one runs alone at the
    end; were the budget left for those, their dumps would start mid-request (unverifiable).
    Each verify step is one dumped step; where a response does not say its steps, the fewest it
    could have taken are counted (max_tokens / (tokens + 1))."""
    sent = steps = 0
    for prompt in prompts:
        if steps >= options.dump_steps + sent:
            break
        answer = endpoints.post_json(
            f"{url}/v1/completions",
            {
                "model": model,
                "prompt": prompt.ids,
                "max_tokens": options.max_tokens,
                **sampling.body(prompt.id),
                "ignore_eos": True,
            },
            timeout=600.0,
        )
        spec = ((answer.get("metrics") or {}) if isinstance(answer, dict) else {}).get(
            "speculative_decoding"
        ) or {}
        per_step = spec.get("per_step_accepted") if isinstance(spec, dict) else None
        fewest = options.max_tokens // (plan.tokens + 1)  # each step commits tokens + 1 at most
        steps += len(per_step) if isinstance(per_step, list) else fewest
        sent += 1
    return {"requests": sent, "verify_steps": steps, "dump_steps": options.dump_steps}


def ran_as_asked(plan: PointPlan, outcome: PointOutcome) -> None:
    """Label the setting from its server's log; a problem where it did not run as asked."""
    from j0.engine.server import server_log
    from j0.engine.server.j0_state import ON, j0_ran, not_applicable
    from j0.mini.run.preflight import WANTED, WORDS

    log = plan.folder / "server.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    ran = j0_ran(server_log.parse(text, f"{plan.name}/server.log"))
    if plan.kind != DFLASH:  # no DFlash drafter, no J0: nothing asked, nothing to flag
        state = not_applicable(plan.kind, ran.identity, seen=True)
        outcome.summary.update(
            {
                "j0": None,
                "j0_asked": None,
                "speculator_identity": state.identity,
                "j0_from": state.why,
                "j0_state": state.to_json(),
            }
        )
        return
    state = ran.asking(plan.j0)
    outcome.summary.update(
        {
            "j0": state.ran,
            "speculator_identity": state.identity,
            "j0_from": state.why,
            "j0_asked": state.asked,
            "j0_state": state.to_json(),
        }
    )
    differs = state.differs()
    want = WANTED[plan.variant]
    if differs is None and state.ran == ON and state.identity != want:
        differs = (
            f"J0 ran from identity={state.identity}, not {WORDS[want]} (--variant {plan.variant})"
        )
    if differs is not None and (plan.folder / "result.json").is_file():  # a measurement
        outcome.problems.append(f"{plan.name}: {differs}")


def ask_with_ids(
    url: str, model: str, prompts: list[Any], max_tokens: int, sampling: Sampling = Sampling()
) -> list[dict]:
    """The prompts as token ids, sampled as the run samples, one at a time, with
    return_token_ids. Under sampling the check still holds: vLLM's DFlash drafts greedily and
    the rejection sampler treats the draft as one-hot, so a rejected draft token is never the
    token committed in its place, and the accepted count is the number of leading drafts that
    equal the committed tokens, as with greedy decoding."""
    answers = []
    for prompt in prompts:
        answers.append(
            endpoints.post_json(
                f"{url}/v1/completions",
                {
                    "model": model,
                    "prompt": prompt.ids,
                    "max_tokens": max_tokens,
                    **sampling.body(prompt.id),
                    "ignore_eos": True,
                    "return_token_ids": True,
                },
                timeout=600.0,
            )
        )
    return answers


def by_context(result_path: Path) -> dict[str, Any]:
    """Pooled acceptance length, and per context the mean of per-request acceptance lengths."""
    from j0.bench import pooled, read_result
    from j0.engine.figures import spec_counts

    doc = read_result(result_path)
    counts, _ = pooled(doc.requests)
    groups: dict[str, list[float]] = {}
    for entry in doc.requests:
        if entry.ok and entry.acceptance_length is not None:
            context = str(entry.prompt_id).split("-")[0].removeprefix("ctx")
            groups.setdefault(context, []).append(float(entry.acceptance_length))
    return {
        "pooled_acceptance_length": (
            round(spec_counts.acceptance_length(counts), 4) if counts else None
        ),
        "per_request_mean_by_context": {
            c: round(sum(v) / len(v), 4) for c, v in sorted(groups.items(), key=lambda x: int(x[0]))
        },
        "requests_ok": sum(1 for e in doc.requests if e.ok),
        "metrics_crosscheck": doc.metrics_crosscheck.status,
    }


def dumps_line(plan: PointPlan, outcome: PointOutcome) -> str:
    """`j0 dumps check` (with the setting's J0 seed) on its dumps; its per-request report is
    written to dumps-check.json and the dumps' sha256 to dumps-sha256.txt (the dumps themselves
    stay where they are: too large to keep with the results)."""
    from j0.dumps import CheckOptions, run_check

    dumps = plan.folder / "dumps"
    checked = run_check(CheckOptions(dumps, seed=plan.seed))
    if not checked.ok:
        outcome.problems.append(f"{plan.name}: j0 dumps check: {checked.summary}")
    if checked.report is not None:
        write_document(plan.folder / "dumps-check.json", checked.report.to_json())
    if dumps.is_dir():
        from j0.edge.atomic import sha256_file

        write_text_atomic(
            plan.folder / "dumps-sha256.txt",
            "".join(
                f"{sha256_file(p)}  dumps/{p.relative_to(dumps).as_posix()}\n"
                for p in sorted(dumps.rglob("*"))
                if p.is_file()
            ),
        )
    outcome.summary["dumps_check"] = {
        "verdict": checked.verdict,
        "exit_code": checked.exit_code,
        "seed": plan.seed,
        "draws": checked.draws,
        "draws_verified": checked.draws_verified,
        "slots": slots_of(checked.report),
    }
    return f"j0 dumps check (seed {plan.seed}): {checked.summary}"


def slots_of(report: Any) -> list[int]:
    """The request slots the dumps check found for the dumped requests (its CheckReport's
    requests, read as their type), in order; none where there is no report."""
    if report is None:
        return []
    return [r.slot for r in report.requests if r.slot is not None]


def crosscheck_line(
    options: Any,
    plan: PointPlan,
    answers: list[dict[str, Any]],
    outcome: PointOutcome,
    temperature: float = 0.0,
) -> str:
    from j0.mini import device as device_mod
    from j0.mini.run import ceiling
    from j0.mini.run.crosscheck import DEFAULT_THRESHOLD, cross_check, responses_from_answers

    try:
        responses = responses_from_answers(answers)
        agreement = cross_check(
            options.out / "target",
            options.out / f"drafter-{plan.drafter}",
            responses,
            plan.tokens,
            device_mod.pick(options.device),
            temperature=temperature,
        )
    except (J0Error, ValueError) as exc:
        outcome.missing.append(f"{plan.name}: cross-check not run: {exc}")
        return f"teacher-forced cross-check: not run ({exc})"
    doc = agreement.to_json(DEFAULT_THRESHOLD)
    write_text_atomic(plan.folder / "crosscheck.json", json.dumps(doc, indent=1) + "\n")
    table = ceiling.by_context(agreement.ceiling)
    outcome.summary["crosscheck"] = {
        **{k: v for k, v in doc.items() if k not in ("differing", "ceiling")},
        "ceiling_by_context": table,
        "temperature": temperature,
    }
    if not agreement.ok:
        outcome.problems.append(f"{plan.name}: {agreement.line(DEFAULT_THRESHOLD)}")
    return f"{agreement.line(DEFAULT_THRESHOLD)}; {ceiling.words(table)}"
