"""`j0 status`: is the running server the article's setup, and why (not)?

The server (j0.doctor.server) and its log (j0.doctor.server_log) give the facts; this module
judges them against the pins and the article's serving flags, and prints one line per fact, a
last line with the verdict, or (--json) one flat object for a benchmark's manifest.

The article's setup: the article's speculator.py (identity=article), vLLM at the pinned commit,
the DFlash drafter with 15 or 7 draft tokens and the draft KV cache "auto", --max-num-seqs 4,
the patch's lines in the log, spec-decode counters that move. J0 on and J0 off (the baseline) are
both the article's setup; which one runs is reported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from j0.article.serving import (
    ARTICLE_MAX_NUM_SEQS,
    SPEC_DRAFT_KV_CACHE_DTYPE,
    SPEC_METHOD,
    TESTED_NUM_SPEC_TOKENS,
)
from j0.checks import FAIL, OK, WARN, Check, Report
from j0.doctor import host, server
from j0.doctor.settings import Settings, resolve
from j0.engine import server_log
from j0.engine.vllm_version import VllmVersion
from j0.errors import INPUT_LACKS, J0Error
from j0.pins import Pins, load_pins


def read_log(args: argparse.Namespace, pins: Pins) -> server_log.LogFacts | None:
    if args.log is not None:
        try:
            text = Path(args.log).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise J0Error(f"--log {args.log}: cannot read it: {exc}", INPUT_LACKS) from None
        return server_log.parse(text, str(args.log))
    if args.compose:
        compose_file = pins.root / "compose.yaml"
        ran = host.run(
            ["docker", "compose", "-f", str(compose_file), "logs", "--no-color", "server"],
            timeout=60,
        )
        if not ran.ok:
            raise J0Error(f"`docker compose logs server` failed: {ran.said()}")
        return server_log.parse(ran.stdout + ran.stderr, "docker compose logs server")
    return None


def _api_key(args: argparse.Namespace, settings: Settings) -> str | None:
    path = args.api_key_file or settings.path("API_KEY_FILE")
    if path is None or str(path) == "/dev/null":
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        raise J0Error(f"API key file {path}: cannot read it: {exc}", INPUT_LACKS) from None


def judge(
    facts: server.ServerFacts, log: server_log.LogFacts | None, pins: Pins
) -> tuple[list[Check], dict[str, Any]]:
    """One check per fact; and the flat JSON object (with article_setup and reasons)."""
    checks: list[Check] = []
    reasons: list[str] = []

    def add(name: str, status: str, detail: str, reason: str = "") -> None:
        checks.append(Check(name, status, detail))
        if status != OK:
            reasons.append(reason or detail)

    add("health", OK if facts.healthy else FAIL, facts.health)
    model_words = facts.model or "none"
    if facts.root and facts.root != facts.model:
        model_words += f" (root {facts.root})"
    if facts.max_model_len is not None:
        model_words += f", max_model_len {facts.max_model_len}"
    if facts.model is None:
        add("model", FAIL, "no model in /v1/models; " + "; ".join(facts.problems))
    elif pins.target_model not in (facts.model, facts.root):
        add(
            "model",
            WARN,
            model_words,
            f"serves {facts.model}, not the article's target {pins.target_model}",
        )
    else:
        add("model", OK, model_words)

    # Spec-decode counters, present and moving after the probe.
    before, after = facts.counters_before, facts.counters_after
    if before is None:
        add("spec-decode", FAIL, "no /metrics: " + "; ".join(facts.problems))
    elif "drafts" not in before:
        add(
            "spec-decode",
            FAIL,
            "no vllm:spec_decode_* counters in /metrics: speculative decoding is off",
        )
    elif after is None and facts.probe.startswith("not sent (--no-probe)"):
        add("spec-decode", OK, "counters present (not shown moving: --no-probe)")
    elif after is None:
        add("spec-decode", WARN, f"counters present; probe {facts.probe}", f"probe {facts.probe}")
    else:
        drafts = facts.delta("drafts") or 0.0
        tokens = facts.delta("draft_tokens") or 0.0
        accepted = facts.delta("accepted") or 0.0
        words = (
            f"counters present; the probe ({facts.probe}) drafted {tokens:.0f} tokens in "
            f"{drafts:.0f} steps, {accepted:.0f} accepted"
        )
        if drafts > 0:
            add("spec-decode", OK, words)
        else:
            add("spec-decode", FAIL, words, "the probe request drafted nothing")

    engine = None
    if log is None:
        add(
            "log",
            FAIL,
            "no server log read: give --compose (docker compose logs server) or --log FILE",
            "which speculator.py and vLLM run is not known (no log)",
        )
    else:
        engine = _judge_log(log, facts, pins, add)

    spec = log.speculative_config if log else None
    value: dict[str, Any] = {
        "url": facts.url,
        "healthy": facts.healthy,
        "model": facts.model,
        "max_model_len": facts.max_model_len,
        "j0": log.j0 if log else None,
        "pool_shape": log.pool_shape if log else None,
        "draft_kv_dtypes": log.draft_kv_dtypes if log else None,
        "spec_kv_cache_dtype": log.spec_kv_cache_dtype if log else None,
        "speculator_sha256": log.speculator_sha256 if log else None,
        "speculator_path": log.speculator_path if log else None,
        "identity": log.identity if log else None,
        "vllm_version": (log.vllm_version if log else None) or facts.version,
        "vllm_commit": engine.commit if engine else None,
        "vllm_commit_pinned": pins.vllm_commit,
        "num_speculative_tokens": (spec or {}).get("num_speculative_tokens"),
        "speculative_config": spec,
        "max_num_seqs": log.max_num_seqs if log else None,
        "spec_decode_counters": before is not None and "drafts" in before,
        "spec_decode_drafts_delta": facts.delta("drafts"),
        "spec_decode_draft_tokens_delta": facts.delta("draft_tokens"),
        "spec_decode_accepted_delta": facts.delta("accepted"),
        "log_source": log.source if log else None,
        "article_setup": not reasons,
        "reasons": reasons,
    }
    return checks, value


def _judge_log(
    log: server_log.LogFacts, facts: server.ServerFacts, pins: Pins, add: Any
) -> VllmVersion | None:
    if log.identity is None:
        add(
            "speculator",
            FAIL,
            f"no `j0-entrypoint: ... identity=...` line in {log.source}: not started by the "
            "image's entrypoint, or the log is cut",
            "which speculator.py runs is not known",
        )
    elif log.identity != "article" or log.speculator_sha256 != pins.patched_sha256:
        add(
            "speculator",
            FAIL,
            f"{log.speculator_path}: sha256 {log.speculator_sha256} identity={log.identity}",
            f"speculator.py is identity={log.identity}, not the article's file",
        )
    else:
        add("speculator", OK, f"{log.speculator_path}: the article's file (identity=article)")

    engine = None
    if log.vllm_commit is None:
        add(
            "engine",
            FAIL,
            f"the vLLM commit is not in {log.source} (an image built before j0 recorded it)",
            "the vLLM commit is unknown",
        )
    else:
        engine = VllmVersion("", log.vllm_version or "", log.vllm_commit)
        if engine.matches(pins.vllm_commit):
            add("engine", OK, f"{engine.describe()}: the pinned commit")
        else:
            release = pins.values.get("VLLM_RELEASE_COMMIT", "")
            which = (
                f" (the {pins.vllm_release} release, VLLM_IMAGE_FALLBACK)"
                if release and engine.matches(release)
                else ""
            )
            add(
                "engine",
                FAIL,
                f"{engine.describe()}{which}, not the pinned {pins.vllm_commit[:8]}",
                f"vLLM commit {engine.commit or 'unknown'}{which} is not the pinned "
                f"{pins.vllm_commit[:8]}: the engine differs from the article's",
            )

    if log.j0 is None:
        add(
            "j0",
            FAIL,
            f"no `DFLASH_CTX_NOISE=... pool=(...)` line in {log.source}: the patched "
            "speculator.py did not start (or the log is cut)",
            "J0 on/off is not known (no patch line in the log)",
        )
    else:
        shape = tuple(log.pool_shape or ())
        words = f"{log.j0}: history pool={shape}"
        if log.j0 == "on":
            cols = facts.max_model_len or (shape[1] if len(shape) == 2 else 0)
            want = (ARTICLE_MAX_NUM_SEQS, cols)
            if shape != want:
                add(
                    "j0",
                    FAIL,
                    f"{words}, expected {want} (max_num_seqs, max_model_len)",
                    f"J0's history is {shape}, not {want}",
                )
            else:
                add("j0", OK, words + " (max_num_seqs x max_model_len)")
        else:
            add("j0", OK, words + " (the baseline: vLLM's mask tokens)")

    if log.draft_kv_dtypes is None:
        add(
            "draft-kv",
            FAIL,
            f"no `DFLASH_DRAFT_KV_DTYPES=...` line in {log.source}",
            "the draft's KV cache dtype is not known",
        )
    else:
        words = (
            f"DFLASH_DRAFT_KV_DTYPES={log.draft_kv_dtypes} "
            f"spec_kv_cache_dtype={log.spec_kv_cache_dtype}"
        )
        good = set(log.draft_kv_dtypes) == {SPEC_DRAFT_KV_CACHE_DTYPE}
        good = good and log.spec_kv_cache_dtype == SPEC_DRAFT_KV_CACHE_DTYPE
        if good:
            add("draft-kv", OK, words + " (the draft's own BF16)")
        else:
            add("draft-kv", FAIL, words, f'the draft KV cache is {words}, not "auto"')

    spec = log.speculative_config
    if spec is None:
        add("spec-config", FAIL, f"no speculative config in {log.source}", "no speculative config")
    else:
        n = spec.get("num_speculative_tokens")
        words = json.dumps(spec, separators=(",", ":"))
        if spec.get("method") != SPEC_METHOD:
            add("spec-config", FAIL, words, f"speculative method {spec.get('method')!r}")
        elif n not in TESTED_NUM_SPEC_TOKENS:
            tested = " and ".join(str(x) for x in TESTED_NUM_SPEC_TOKENS)
            add("spec-config", FAIL, words, f"num_speculative_tokens={n}: the article ran {tested}")
        else:
            add("spec-config", OK, words)

    seqs = log.max_num_seqs
    if seqs is None and log.j0 == "on" and log.pool_shape:
        seqs = log.pool_shape[0]
    if seqs is not None and seqs != ARTICLE_MAX_NUM_SEQS:
        add(
            "max-num-seqs",
            FAIL,
            f"--max-num-seqs {seqs}",
            f"--max-num-seqs {seqs}, the article ran {ARTICLE_MAX_NUM_SEQS}",
        )
    return engine


def verdict(value: dict[str, Any]) -> str:
    j0 = value.get("j0")
    mode = {"on": "J0 on", "off": "J0 off (the baseline)"}.get(str(j0), "J0 unknown")
    if value["article_setup"]:
        return f"==> the article's setup, {mode}"
    return f"==> NOT the article's setup ({mode}): " + "; ".join(value["reasons"])


def main(args: argparse.Namespace) -> int:
    pins = load_pins()
    settings = resolve(pins)
    url = args.url or f"http://127.0.0.1:{settings.get('PORT', '8000')}"
    log = read_log(args, pins)
    facts = server.ask(url, _api_key(args, settings), probe=not args.no_probe)
    checks, value = judge(facts, log, pins)
    if args.json:
        print(json.dumps(value, indent=2))
    else:
        report = Report(f"j0 status of {facts.url}" + (f" (log: {log.source})" if log else ""))
        report.add(checks)
        print("\n".join(report.text().splitlines()[:-1]))
        print(verdict(value))
    return 0 if value["article_setup"] else 1
