"""`j0 mini run`'s figures over its settings' result files: the repetition gate, the comparisons
by name (j0.measure.stats, paired by prompt id), the speedups over the baseline, and mini-run.md.

Per prompt, a setting's figure is its request's own acceptance length (1 + accepted / verify
steps of that request) and tok/s (output tokens over the whole latency); a comparison's effect is
the mean over prompts of the paired differences (a request mean, not pooled). The repetition
measure is taken on an output's token ids where the server returned them, else on its text
encoded again by the mini tokenizer ("retokenized"). Standard library only (the tokenizer is
the caller's).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from j0.bench import RequestEntry, entry_counts, entry_problems, pooled, read_result
from j0.engine.figures import spec_counts
from j0.engine.server.j0_state import ON_OFF
from j0.measure import repetition, stats
from j0.mini.run.run_summary import RunSummary
from j0.mini.run.setting_record import DFLASH, NGRAM, PointRecord
from j0.mini.train.batch import J0_INIT, MASK_INIT

LABELS = {
    "article": "the article's: the J0-trained drafter, J0 on (mean over J0's seeds) against J0 off",
    "systems": "the systems': the J0-trained drafter with J0 on against the mask-trained drafter "
    "with J0 off",
    "control": "negative control: the mask-trained drafter, J0 on against J0 off (served with an "
    "initialisation it was not trained on)",
    "ngram": "the J0-trained drafter with J0 on against vLLM's n-gram speculator",
}


def context_of(prompt_id: str) -> int | None:
    head = str(prompt_id).split("-")[0]
    return int(head[3:]) if head.startswith("ctx") and head[3:].isdigit() else None


def request_length(entry: RequestEntry) -> float | None:
    if entry.acceptance_length is not None:
        return float(entry.acceptance_length)
    counts = entry_counts(entry)
    return spec_counts.acceptance_length(counts) if counts else None


def request_rate(entry: RequestEntry) -> float | None:
    """The request's output tokens per second of its whole latency (first token included).
    Sampled outputs end at different lengths in different settings; the decode-only rate of a
    request that stopped after a few tokens is a few tokens over a few milliseconds (173,000
    tok/s on the H200), and one of those in a mean of ratios outweighs every other prompt."""
    tokens, latency = entry.output_tokens, entry.latency_s
    if not tokens or not latency or latency <= 0:
        return None
    return float(tokens) / float(latency)


def load(work: Path, settings: dict[str, PointRecord], tokenizer: Any) -> dict[str, dict[str, Any]]:
    """Per setting: per prompt id its acceptance length, tok/s, context, source, output and
    repetition measure; the setting's pooled acceptance length too."""
    data: dict[str, dict[str, Any]] = {}
    for name in settings:
        path = work / name / "result.json"
        if not path.is_file():
            continue
        doc = read_result(path)
        ok = [e for e in doc.requests if e.ok and not entry_problems(e)]
        counts, _ = pooled(ok)
        mine: dict[str, Any] = {
            "pooled": spec_counts.acceptance_length(counts) if counts and counts.drafts else None,
            "length": {},
            "tok_s": {},
            "context": {},
            "source": {},
            "output": {},
            "repetition": {},
        }
        for e in ok:
            pid = str(e.prompt_id)
            mine["context"][pid] = context_of(pid)
            mine["source"][pid] = e.prompt_source or pid
            if (length := request_length(e)) is not None:
                mine["length"][pid] = length
            if (rate := request_rate(e)) is not None:
                mine["tok_s"][pid] = rate
            ids = e.output_token_ids
            if ids:
                mine["output"][pid] = list(ids)
                mine["repetition"][pid] = repetition.measure(ids)
            else:
                mine["output"][pid] = e.output_sha256
                text = e.output_text
                if text and tokenizer is not None:
                    encoded = tokenizer(text, add_special_tokens=False)["input_ids"]
                    measured = repetition.measure(list(encoded))
                    mine["repetition"][pid] = {**measured, "units": "token ids (retokenized)"}
        data[name] = mine
    return data


def gate(data: dict[str, dict[str, Any]], contexts: Sequence[int]) -> dict[str, Any]:
    """Per setting and context: outputs, loops (period <= 64 covering the second half) and the
    gate (at least 90 % without a loop); the target's own outputs are the baseline's."""
    out: dict[str, Any] = {}
    for name, d in data.items():
        bins = []
        for c in sorted(set(contexts)):
            reps = [r for pid, r in d["repetition"].items() if d["context"].get(pid) == c]
            loops = sum(1 for r in reps if r["loop"])
            clean = (len(reps) - loops) / len(reps) if reps else None
            bins.append(
                {
                    "context": c,
                    "outputs": len(reps),
                    "loops": loops,
                    "share_without_loop": clean,
                    "passed": None if clean is None else clean >= repetition.GATE_SHARE,
                    **{
                        f"mean_{key}": _mean([r[key] for r in reps if r[key] is not None])
                        for key in ("distinct_1", "distinct_2", "distinct_3", "repeating_suffix")
                    },
                }
            )
        judged = [b["passed"] for b in bins if b["passed"] is not None]
        out[name] = {"bins": bins, "passed": all(judged) if judged else None}
    target = "baseline" if "baseline" in out else next(iter(out), None)
    return {
        "rule": f"at each context, at least {repetition.GATE_SHARE:.0%} of the outputs have no "
        f"loop of period <= {repetition.LOOP_PERIOD} covering their second half",
        "target_outputs": target,
        "passed": out[target]["passed"] if target else None,
        "settings": out,
    }


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _on_mean(data: dict[str, Any], names: list[str], key: str = "length") -> dict[str, float]:
    """Per prompt, the mean over the J0-on settings (J0's seeds) that measured it."""
    found: dict[str, list[float]] = {}
    for name in names:
        for pid, v in data[name][key].items():
            found.setdefault(pid, []).append(v)
    return {pid: statistics.fmean(v) for pid, v in found.items() if len(v) == len(names)}


def _in_bin(values: dict[str, float], context: dict[str, int | None], c: int | None):
    return values if c is None else {p: v for p, v in values.items() if context.get(p) == c}


def comparisons(
    data: dict[str, dict[str, Any]],
    settings: dict[str, PointRecord],
    contexts: Sequence[int],
    tokens: Sequence[int],
) -> dict[str, Any]:
    """The named comparisons per draft-token count (all prompts, then each context), J0's seeds
    against each other, and every setting's speedup over the baseline."""
    context: dict[str, int | None] = {}
    sources: dict[str, str] = {}
    for d in data.values():
        context.update(d["context"])
        sources.update(d["source"])
    out: dict[str, Any] = {"by_tokens": {}, "speedup": {}, "outputs_equal_to_baseline": {}}
    for k in sorted({s.k for s in settings.values() if s.k} | set(tokens)):

        def names(drafter: str, j0: bool, k: int = k) -> list[str]:
            return sorted(
                n
                for n, s in settings.items()
                if n in data
                and s.kind == DFLASH
                and s.drafter == drafter
                and s.k == k
                and s.ran_as_asked(j0)
            )

        j0_on, j0_off = names(J0_INIT, True), names(J0_INIT, False)
        mask_on, mask_off = names(MASK_INIT, True), names(MASK_INIT, False)
        ngram = [n for n, s in settings.items() if n in data and s.kind == NGRAM and s.k == k]
        pairs: dict[str, tuple[dict[str, float], dict[str, float], tuple[str, str]]] = {}
        if j0_on and j0_off:
            pairs["article"] = (_on_mean(data, j0_on), data[j0_off[0]]["length"], ON_OFF)
        if j0_on and mask_off:
            pairs["systems"] = (
                _on_mean(data, j0_on),
                data[mask_off[0]]["length"],
                ("J0-trained, J0 on", "mask-trained, J0 off"),
            )
        if mask_on and mask_off:
            pairs["control"] = (_on_mean(data, mask_on), data[mask_off[0]]["length"], ON_OFF)
        if j0_on and ngram:
            pairs["ngram"] = (
                _on_mean(data, j0_on),
                data[ngram[0]]["length"],
                ("J0-trained, J0 on", "n-gram"),
            )
        for drafter, on in ((J0_INIT, j0_on), (MASK_INIT, mask_on)):
            if len(on) >= 2:
                pairs[f"seeds-{drafter}"] = (
                    data[on[0]]["length"],
                    data[on[1]]["length"],
                    (on[0].rsplit("/", 1)[-1], on[1].rsplit("/", 1)[-1]),
                )
        block: dict[str, Any] = {}
        for key, (a, b, named) in pairs.items():
            block[key] = {
                "label": LABELS.get(key, f"J0's own randomness: {named[0]} against {named[1]}"),
                "all": stats.compare(a, b, sources=sources, names=named),
                "by_context": {
                    str(c): stats.compare(
                        _in_bin(a, context, c),
                        _in_bin(b, context, c),
                        sources=sources,
                        names=named,
                    )
                    for c in sorted(set(contexts))
                },
            }
        out["by_tokens"][str(k)] = block
    if "baseline" in data:
        base = data["baseline"]
        for name, d in data.items():
            if name == "baseline":
                continue
            out["speedup"][name] = stats.compare(
                d["tok_s"],
                base["tok_s"],
                sources=sources,
                ratio=True,
                names=(name, "baseline"),
                delta=None,
            )
            both = [p for p in d["output"] if p in base["output"]]
            out["outputs_equal_to_baseline"][name] = {
                "compared": len(both),
                "equal": sum(1 for p in both if d["output"][p] == base["output"][p]),
            }
    return out


def gate_problem(gate: dict[str, Any]) -> str | None:
    """The run's problem where the gate failed, else None. The gate judges the target's own
    outputs: a speculative setting samples the same distribution (rejection sampling is
    lossless), so its loop share is shown beside the target's but is no verdict of its own (at 48
    outputs a bin's share moves by chance)."""
    target = gate["target_outputs"]
    if target is None or gate["passed"] is not False:
        return None
    bins = gate["settings"][target]["bins"]
    failed = ", ".join(str(b["context"]) for b in bins if b["passed"] is False)
    return f"{target}: the repetition gate failed at context {failed}"


def gate_table(gate: dict[str, Any]) -> list[str]:
    """The gate's table: every setting's bins, the target's with the verdict, the others' in
    brackets (mini-run.md and the results READMEs)."""
    lines = [
        "| setting | context | outputs | loops | without a loop | gate | distinct-1/2/3 (mean) "
        "| repeating suffix (mean) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, g in gate["settings"].items():
        for b in g["bins"]:
            verdict = {True: "pass", False: "**fail**", None: "n/a"}[b["passed"]]
            if name != gate["target_outputs"]:
                verdict = {True: "(pass)", False: "(below)", None: "n/a"}[b["passed"]]
            distinct = "/".join(_f(b[f"mean_distinct_{n}"], ".2f") for n in (1, 2, 3))
            lines.append(
                f"| {name} | {b['context']} | {b['outputs']} | {b['loops']} | "
                f"{_f(b['share_without_loop'], '.1%')} | {verdict} | {distinct} | "
                f"{_f(b['mean_repeating_suffix'], '.1f')} |"
            )
    return lines


def _chance(gate: dict[str, Any]) -> str:
    """How far a bin's loop-free share moves by chance: the binomial standard deviation at the
    target's loop rate and its bins' outputs."""
    target = gate["settings"].get(gate["target_outputs"] or "")
    bins = [b for b in (target or {}).get("bins", []) if b["outputs"]]
    if not bins:
        return ""
    outputs = sum(b["outputs"] for b in bins)
    rate = sum(b["loops"] for b in bins) / outputs
    per_bin = outputs / len(bins)
    sd = (rate * (1 - rate) / per_bin) ** 0.5
    return (
        f" (at the target's loop rate, {rate:.1%}, and {per_bin:.0f} outputs a bin, one standard "
        f"deviation is {sd:.1%})"
    )


def _f(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _pooled_by_context(s: PointRecord) -> str:
    return ", ".join(f"{c}: {v}" for c, v in (s.per_request_mean_by_context or {}).items())


def _j0_as_run(s: PointRecord) -> str:
    if s.kind != DFLASH:
        return "n/a"
    if not s.has("j0") and not s.has("j0_state"):
        return "? (no server log)"
    state = s.state()
    if not state.seen:  # an older run's record: what was asked
        return f"{state.asked} ({state.why})"
    return f"{state.ran} ({state.why})"


def sampling_words(summary: RunSummary) -> str:
    """How the requests were sampled: greedy, or at the miniature's temperature (acceptance
    then under vLLM's rejection sampling: a greedy draft token is kept with the target's
    probability of it at that temperature)."""
    temperature = summary.temperature or 0
    if not temperature:
        return "greedy"
    return (
        f"sampled at temperature {temperature} (mini.json) with a seed per request from "
        f"--sample-seed {summary.sample_seed} (acceptance under rejection sampling)"
    )


def servers_words(summary: RunSummary) -> str:
    servers = summary.servers_at_once or 1
    if servers <= 1:
        return ""
    return f"; up to {servers} servers at once on the GPU (speedups measured side by side)"


def ceiling_table(summary: RunSummary) -> list[str]:
    """mini-run.md's section of ceiling_lines; nothing where no setting has a ceiling."""
    lines = ceiling_lines(summary)
    return ["", "## The ceiling beside the measurement", "", *lines] if lines else []


def ceiling_lines(summary: RunSummary) -> list[str]:
    """The ceiling beside the measurement (j0.mini.run.ceiling), per J0-off setting whose
    cross-check ran, by context: the words and the table (`j0 mini numbers`' `ceiling` block);
    nothing where none has one."""
    rows = []
    for name, record in summary.records().items():
        table = (record.crosscheck or {}).get("ceiling_by_context") or {}
        for context, row in table.items():
            cells = [row.get(key) for key in ("oracle", "measured", "logp_argmax", "entropy")]
            shown = ["n/a" if x is None else f"{x:.3f}" for x in cells]
            rows.append(
                f"| {name} | {context} | {row.get('requests')} | " + " | ".join(shown) + " |"
            )
    if not rows:
        return []
    return [
        "On the cross-checked requests: the acceptance length a perfect greedy drafter would "
        "reach on the engine's own outputs at the run's temperature (each draft token kept with "
        "the target's p_T(argmax); j0.mini.run.ceiling), beside the engine's (request means); "
        "the mean log p_T(argmax) and entropy (nats) per output token.",
        "",
        "| setting | context | requests | ceiling | measured | log p(argmax) | entropy |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]


def window_words(summary: RunSummary) -> list[str]:
    """The target's training window against the run's contexts (issue 54): the prompts per
    context where they differ, and the contexts served past the window, labelled."""
    lines = []
    counts = summary.requests_by_context or {}
    if counts and len(set(counts.values())) > 1:
        lines.append(
            "Prompts per context: " + ", ".join(f"{n} at {c}" for c, n in counts.items()) + "."
        )
    if summary.target_seq is not None:
        lines.append(f"The target was trained on windows of {summary.target_seq} tokens.")
    if summary.beyond_training:
        lines.append(
            "**Beyond the target's training window** (prompt + output longer than it; served "
            "with --beyond-training): contexts "
            + ", ".join(map(str, summary.beyond_training))
            + ". Acceptance there mixes the drafters' decay with the target's own."
        )
    return lines


def markdown(summary: RunSummary) -> str:
    from j0.measure.stats_table import STATS_TEXT, comparison_header, comparison_row

    lines = [
        "# j0 mini run",
        "",
        f"max-model-len {summary.max_model_len}; {summary.requests_per_context} prompts per "
        f"context ({', '.join(map(str, summary.contexts))} tokens), {summary.max_tokens} "
        f"tokens each, {sampling_words(summary)}, prefix caching off; {summary.slots} "
        f"request slots (requests in flight); J0 seeds "
        f"{', '.join(map(str, summary.j0_seeds or []))}"
        f"{servers_words(summary)}.",
        "Trained: " + ", ".join(f"{key} {value}" for key, value in (summary.trained or {}).items()),
        *window_words(summary),
        "",
        "## Settings",
        "",
        "Acceptance length pooled (1 + accepted / verify steps over all the setting's requests) "
        "and, by context, the mean over requests of each request's own acceptance length "
        "(request mean).",
        "",
        "J0 as run: what the setting's server log shows ran (the identity line, the patch's "
        "DFLASH_CTX_NOISE line), not what was asked; n/a where there is no DFlash drafter.",
        "",
        "| setting | J0 as run | acceptance length (pooled) | request mean by context | checks |",
        "|---|---|---|---|---|",
    ]
    for name, s in summary.records().items():
        checks = "; ".join(s.lines or [])
        length = s.pooled_acceptance_length
        pooled_text = "n/a" if length is None else length
        lines.append(
            f"| {name} | {_j0_as_run(s)} | {pooled_text} | {_pooled_by_context(s)} | {checks} |"
        )
    lines += ceiling_table(summary)
    gate, comps = summary.gate, summary.comparisons
    assert gate is not None and comps is not None  # summarize writes both (older runs lack them)
    word = {True: "pass", False: "**fail**", None: "not judged"}[gate["passed"]]
    lines += [
        "",
        "## The repetition gate",
        "",
        f"Rule: {gate['rule']}. On the target's outputs ({gate['target_outputs']}): {word}.",
        "",
        "The gate judges the target's outputs only. The speculative settings sample the same "
        "distribution (rejection sampling), so their rows show the same measure and no verdict "
        f"of their own: a bin's share moves by chance{_chance(gate)}.",
        "",
    ]
    lines += gate_table(gate)
    lines += ["", "## Comparisons (request means, paired by prompt id)", "", STATS_TEXT, ""]
    for k, block in comps["by_tokens"].items():
        if not block:
            continue
        lines += [f"### {k} draft tokens", ""]
        lines += comparison_header("comparison | subset")
        for key, c in block.items():
            lines.append(comparison_row(f"{c['label']} | all", c["all"]))
            for ctx, cc in c["by_context"].items():
                lines.append(comparison_row(f"{key} | context {ctx}", cc))
        lines.append("")
    if comps["speedup"]:
        lines += [
            "## Speedup over the baseline (no speculative decoding): history, not a speed "
            "measurement",
            "",
            "Kept as the runs before issue 54 reported it: the settings were served side by "
            "side (servers sharing the GPU and the CPU, load changing as they start and end), so "
            "these ratios are no clean speed; `j0 mini speed` measures that (speed.md). "
            "Per prompt the setting's tok/s / the baseline's (each request's output tokens over "
            "its whole latency, first token included), the mean of those ratios, its bootstrap "
            "interval and verdict against 1; outputs equal to the baseline's (token ids, else "
            "the text's sha256; requests in flight together need not give bit-equal outputs).",
            "",
            *comparison_header("setting"),
        ]
        for name, c in comps["speedup"].items():
            eq = comps["outputs_equal_to_baseline"][name]
            lines.append(
                comparison_row(f"{name} (outputs equal {eq['equal']}/{eq['compared']})", c)
            )
        lines.append("")
    lines += [
        *[f"- problem: {p}" for p in summary.problems],
        *[f"- missing: {m}" for m in summary.missing],
        "",
    ]
    return "\n".join(lines)
