"""One setting of `j0 mini run`: start the server (drafter, draft tokens, J0 on/off), wait for
/health, `j0 bench run` on the prompts, then with J0 on `j0 dumps check` on its dumps, with J0 off
the prompts again as token ids for the teacher-forced cross-check (run after the server stops).
The setting's J0 label is what its server's log shows ran (j0.engine.j0_ran: the identity line,
the patch's DFLASH_CTX_NOISE line), never what was asked: where they differ, or J0 ran from
another file than the --variant asked, the setting is a problem (exit 1), said in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.atomic import write_text_atomic
from j0.engine import endpoints
from j0.errors import J0Error


@dataclass(frozen=True)
class SettingPlan:
    drafter: str
    k: int
    j0: bool
    max_model_len: int
    folder: Path
    variant: str = "article"  # the speculator.py J0 must run from

    @property
    def name(self) -> str:
        return f"drafter-{self.drafter}/k{self.k}-j0-{'on' if self.j0 else 'off'}"


@dataclass
class SettingOutcome:
    summary: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def run_setting(
    options: Any, plan: SettingPlan, dataset: Path, prompts: list[Any], say: Any
) -> SettingOutcome:
    from j0.bench.run import RunOptions, run
    from j0.engine.endpoints import first_model
    from j0.engine_check.server import LocalServer, ServeSetting, wait_healthy

    outcome = SettingOutcome()
    lines: list[str] = []
    plan.folder.mkdir(parents=True)
    setting = ServeSetting(
        target=options.out / "target",
        draft=options.out / f"drafter-{plan.drafter}",
        tokens=plan.k,
        graphs=options.graphs,
        j0=plan.j0,
        dumps=plan.folder / "dumps",
        dump_steps=options.dump_steps if plan.j0 else 0,
        port=options.port,
        max_model_len=plan.max_model_len,
    )
    say(f"==> {plan.name}: starting the server")
    server = LocalServer(setting, plan.folder / "server.log", options.server_command)
    answers: list[dict[str, Any]] = []
    try:
        healthy = wait_healthy(server, options.startup_timeout)
        say(f"    healthy after {healthy:.0f} s; j0 bench run ({len(prompts)} prompts)")
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
                j0=plan.j0,
                log=plan.folder / "server.log",  # the result's J0 label: from the file that ran
                bin_size=256,
            )
        )
        problem = bench.failure()
        if problem is not None:
            outcome.problems.append(f"{plan.name}: j0 bench run: {problem}")
        if not plan.j0 and options.crosscheck:
            model = str(first_model(server.url)["id"])
            answers = ask_with_ids(server.url, model, prompts, options.max_tokens)
            write_text_atomic(plan.folder / "crosscheck-answers.json", json.dumps(answers) + "\n")
    except (J0Error, OSError) as exc:  # OSError: the server stopped answering (urllib)
        outcome.problems.append(f"{plan.name}: {exc}")
    finally:
        server.stop()
    ran_as_asked(plan, outcome)
    if (plan.folder / "result.json").is_file():
        outcome.summary.update(by_context(plan.folder / "result.json"))
    if plan.j0:
        lines.append(dumps_line(plan, outcome))
    elif options.crosscheck and answers:
        lines.append(crosscheck_line(options, plan, answers, outcome))
    outcome.summary["lines"] = lines
    for line in lines:
        say(f"    {line}")
    return outcome


def ran_as_asked(plan: SettingPlan, outcome: SettingOutcome) -> None:
    """Label the setting from its server's log; a problem where it did not run as asked."""
    from j0.engine import server_log
    from j0.engine.j0_ran import ON, asked_differs, j0_ran
    from j0.mini.preflight import WANTED, WORDS

    log = plan.folder / "server.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    ran = j0_ran(server_log.parse(text, f"{plan.name}/server.log"))
    outcome.summary.update(ran.to_json())
    differs = asked_differs(plan.j0, ran)
    want = WANTED[plan.variant]
    if differs is None and ran.j0 == ON and ran.identity != want:
        differs = (
            f"J0 ran from identity={ran.identity}, not {WORDS[want]} (--variant {plan.variant})"
        )
    if differs is not None and (plan.folder / "result.json").is_file():  # a measurement
        outcome.problems.append(f"{plan.name}: {differs}")


def ask_with_ids(url: str, model: str, prompts: list[Any], max_tokens: int) -> list[dict]:
    """The prompts as token ids, greedy, one at a time, with return_token_ids."""
    answers = []
    for prompt in prompts:
        answers.append(
            endpoints.post_json(
                f"{url}/v1/completions",
                {
                    "model": model,
                    "prompt": prompt.ids,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "ignore_eos": True,
                    "return_token_ids": True,
                },
                timeout=600.0,
            )
        )
    return answers


def by_context(result_path: Path) -> dict[str, Any]:
    """Pooled acceptance length, and per context the mean of per-request acceptance lengths."""
    from j0.bench import results
    from j0.engine import spec_counts

    doc = results.read_result(result_path)
    counts, _ = results.pooled(doc.requests)
    groups: dict[str, list[float]] = {}
    for entry in doc.requests:
        if entry.get("ok") and entry.get("acceptance_length") is not None:
            context = str(entry["prompt_id"]).split("-")[0].removeprefix("ctx")
            groups.setdefault(context, []).append(float(entry["acceptance_length"]))
    return {
        "pooled_acceptance_length": (
            round(spec_counts.acceptance_length(counts), 4) if counts else None
        ),
        "per_request_mean_by_context": {
            c: round(sum(v) / len(v), 4) for c, v in sorted(groups.items(), key=lambda x: int(x[0]))
        },
        "requests_ok": sum(1 for e in doc.requests if e.get("ok")),
        "metrics_crosscheck": doc.metrics_crosscheck.get("status"),
    }


def dumps_line(plan: SettingPlan, outcome: SettingOutcome) -> str:
    from j0.dumps.check import CheckOptions, run_check

    checked = run_check(CheckOptions(plan.folder / "dumps"))
    if not checked.ok:
        outcome.problems.append(f"{plan.name}: j0 dumps check: {checked.summary}")
    outcome.summary["dumps_check"] = {
        "verdict": checked.verdict,
        "exit_code": checked.exit_code,
        "draws": checked.draws,
        "draws_verified": checked.draws_verified,
    }
    return f"j0 dumps check: {checked.summary}"


def crosscheck_line(
    options: Any, plan: SettingPlan, answers: list[dict[str, Any]], outcome: SettingOutcome
) -> str:
    from j0.mini import device as device_mod
    from j0.mini.crosscheck import DEFAULT_THRESHOLD, cross_check, responses_from_answers

    try:
        responses = responses_from_answers(answers)
        agreement = cross_check(
            options.out / "target",
            options.out / f"drafter-{plan.drafter}",
            responses,
            plan.k,
            device_mod.pick(options.device),
        )
    except (J0Error, ValueError) as exc:
        outcome.missing.append(f"{plan.name}: cross-check not run: {exc}")
        return f"teacher-forced cross-check: not run ({exc})"
    doc = agreement.to_json(DEFAULT_THRESHOLD)
    write_text_atomic(plan.folder / "crosscheck.json", json.dumps(doc, indent=1) + "\n")
    outcome.summary["crosscheck"] = {k: v for k, v in doc.items() if k != "differing"}
    if not agreement.ok:
        outcome.problems.append(f"{plan.name}: {agreement.line(DEFAULT_THRESHOLD)}")
    return agreement.line(DEFAULT_THRESHOLD)
