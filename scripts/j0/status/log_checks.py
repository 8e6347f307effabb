"""`j0 status`'s checks of what the server's log says: which speculator.py and which vLLM run,
J0 on/off and its history's shape, the draft's KV cache dtypes, the speculative config and
--max-num-seqs, each against the pins and the article's serving rules."""

from __future__ import annotations

import json

from j0.article.identity import PREFIX_SAFE
from j0.article.server_setting import (
    ARTICLE_MAX_NUM_SEQS,
    SEQS_CHECK,
    SPEC_CHECK,
    setting_problems,
)
from j0.article.spec_config import DRAFT_KV_CACHE_DTYPE, LoggedSpec
from j0.checks import FAIL, OK
from j0.engine.server.server_log import LogFacts, role_of
from j0.engine.source.vllm_version import VllmVersion
from j0.pins import Pins
from j0.status.finding import StatusFinding
from j0.status.server_facts import ServerFacts


def no_log(why: str | None = None) -> StatusFinding:
    """No log: none asked for, or `why` there is none (no server container)."""
    if why is not None:
        return StatusFinding.of(
            "log", FAIL, why, "no server container (compose has not started the server)"
        )
    return StatusFinding.of(
        "log",
        FAIL,
        "no server log read: give --compose (docker compose logs server) or --log FILE",
        "which speculator.py and vLLM run is not known (no log)",
    )


def all_of(log: LogFacts, facts: ServerFacts, pins: Pins) -> list[StatusFinding]:
    """Every log check, in the order `j0 status` prints them."""
    found = [
        started(log),
        speculator(log, pins),
        engine(log, pins),
        j0_history(log, facts),
        draft_kv(log),
        spec_config(log),
    ]
    seqs = max_num_seqs(log)
    return found if seqs is None else [*found, seqs]


def started(log: LogFacts) -> StatusFinding:
    """The log shows the server coming up: only the lines before it are read (a request's text
    reaches the log after it), so without it no line can be told from one a client wrote."""
    if log.server_up is None:
        return StatusFinding.of(
            "log",
            FAIL,
            f"no line of the server coming up in {log.source} (vLLM's `Starting vLLM server "
            "on ...`, uvicorn's `Started server process`): the start-up's lines cannot be told "
            "from lines a request wrote (the log is cut, or is not vLLM's)",
            "the log does not show the server's start-up",
        )
    read = f"the start-up, read up to the server being up: {log.server_up}"
    if log.startups > 1:
        read = (
            f"the log holds {log.startups} start-ups (a restarted server, an appended log): the "
            f"last, from line {log.startup_line}, is judged, read up to the server being up: "
            f"{log.server_up}"
        )
    if log.not_up is not None:
        read += f"; a later start-up did not come up and is not judged: {log.not_up}"
    return StatusFinding.of("log", OK, read)


def plugin_speculator(log: LogFacts, pins: Pins) -> StatusFinding:
    """The vLLM plugin's identity line: a J0 file pinned for the release it ran on (the article's
    patch, or the variant, cut for that release), at the article's seed. The engine is another
    vLLM than the article's: `engine` says so."""
    from j0.article.releases import releases

    role = role_of(log.identity)
    pinned = {
        f"{r.kind(role)}": r.value("PATCHED_SHA256" if role == "article" else "PREFIX_SAFE_SHA256")
        for r in releases(pins)
        if not r.is_default and role in ("article", PREFIX_SAFE)
    }
    where = f"{log.speculator_path} + the plugin (method dflash_j0)"
    if log.identity not in pinned or pinned[log.identity] != log.speculator_sha256:
        return StatusFinding.of(
            "speculator",
            FAIL,
            f"{where}: sha256 {log.speculator_sha256} identity={log.identity}",
            f"the plugin ran identity={log.identity}, not a pinned J0 file",
        )
    if log.seed != pins.j0_seed:
        return StatusFinding.of(
            "speculator",
            FAIL,
            f"{where}: identity={log.identity} with seed {log.seed}",
            f"J0's seed is {log.seed}, not the article's {pins.j0_seed}",
        )
    return StatusFinding.of(
        "speculator",
        OK,
        f"{where}: identity={log.identity} (the {role} J0 file cut for vLLM "
        f"{log.vllm_version}), seed {log.seed}, made in memory; no file of vLLM's changed",
    )


def speculator(log: LogFacts, pins: Pins) -> StatusFinding:
    """The entrypoint's identity line names the article's speculator.py (identity and sha256), or
    its prefix-safe variant (said as such: identity=prefix-safe, never "the article's file"); on
    the plugin route, the plugin's line (plugin_speculator)."""
    if log.route == "plugin":
        return plugin_speculator(log, pins)
    if log.identity is None:
        return StatusFinding.of(
            "speculator",
            FAIL,
            f"no `j0-entrypoint: ... identity=...` line (nor the plugin's `j0-plugin: ...`) in "
            f"{log.source}: not started by the "
            "image's entrypoint, or the log is cut",
            "which speculator.py runs is not known",
        )
    if log.identity == PREFIX_SAFE and log.speculator_sha256 == pins.values.get(
        "PREFIX_SAFE_SHA256"
    ):
        return StatusFinding.of(
            "speculator",
            OK,
            f"{log.speculator_path}: the prefix-safe variant of the article's file "
            "(identity=prefix-safe; J0 safe under prefix caching, not the article's file)",
        )
    if log.identity != "article" or log.speculator_sha256 != pins.patched_sha256:
        return StatusFinding.of(
            "speculator",
            FAIL,
            f"{log.speculator_path}: sha256 {log.speculator_sha256} identity={log.identity}",
            f"speculator.py is identity={log.identity}, not the article's file",
        )
    return StatusFinding.of(
        "speculator", OK, f"{log.speculator_path}: the article's file (identity=article)"
    )


def engine(log: LogFacts, pins: Pins) -> StatusFinding:
    """The identity line's vLLM commit is the pinned one (the release's commit is named)."""
    if log.vllm_commit is None:
        return StatusFinding.of(
            "engine",
            FAIL,
            f"the vLLM commit is not in {log.source} (an image built before j0 recorded it)",
            "the vLLM commit is unknown",
        )
    found = VllmVersion("", log.vllm_version or "", log.vllm_commit)
    if found.matches(pins.vllm_commit):
        return StatusFinding.of("engine", OK, f"{found.describe()}: the pinned commit")
    release = pins.values.get("VLLM_RELEASE_COMMIT", "")
    which = (
        f" (the {pins.vllm_release} release, VLLM_IMAGE_FALLBACK)"
        if release and found.matches(release)
        else ""
    )
    return StatusFinding.of(
        "engine",
        FAIL,
        f"{found.describe()}{which}, not the pinned {pins.vllm_commit[:8]}",
        f"vLLM commit {found.commit or 'unknown'}{which} is not the pinned "
        f"{pins.vllm_commit[:8]}: the engine differs from the article's",
    )


def j0_history(log: LogFacts, facts: ServerFacts) -> StatusFinding:
    """The patch's `DFLASH_CTX_NOISE=... pool=(...)` line: J0 on with a (max_num_seqs,
    max_model_len) history, or off (the baseline)."""
    if log.j0 is None:
        return StatusFinding.of(
            "j0",
            FAIL,
            f"no `DFLASH_CTX_NOISE=... pool=(...)` line in {log.source}: the patched "
            "speculator.py did not start (or the log is cut)",
            "J0 on/off is not known (no patch line in the log)",
        )
    shape = tuple(log.pool_shape or ())
    words = f"{log.j0}: history pool={shape}"
    if log.j0 != "on":
        return StatusFinding.of("j0", OK, words + " (the baseline: vLLM's mask tokens)")
    cols = facts.max_model_len or (shape[1] if len(shape) == 2 else 0)
    want = (ARTICLE_MAX_NUM_SEQS, cols)
    if shape != want:
        return StatusFinding.of(
            "j0",
            FAIL,
            f"{words}, expected {want} (max_num_seqs, max_model_len)",
            f"J0's history is {shape}, not {want}",
        )
    return StatusFinding.of("j0", OK, words + " (max_num_seqs x max_model_len)")


def draft_kv(log: LogFacts) -> StatusFinding:
    """The patch's `DFLASH_DRAFT_KV_DTYPES=...` line: the draft's KV cache is its own ("auto")."""
    if log.draft_kv_dtypes is None:
        return StatusFinding.of(
            "draft-kv",
            FAIL,
            f"no `DFLASH_DRAFT_KV_DTYPES=...` line in {log.source}",
            "the draft's KV cache dtype is not known",
        )
    words = (
        f"DFLASH_DRAFT_KV_DTYPES={log.draft_kv_dtypes} "
        f"spec_kv_cache_dtype={log.spec_kv_cache_dtype}"
    )
    good = set(log.draft_kv_dtypes) == {DRAFT_KV_CACHE_DTYPE}
    good = good and log.spec_kv_cache_dtype == DRAFT_KV_CACHE_DTYPE
    if good:
        return StatusFinding.of("draft-kv", OK, words + " (the draft's own BF16)")
    return StatusFinding.of("draft-kv", FAIL, words, f'the draft KV cache is {words}, not "auto"')


def spec_config(log: LogFacts) -> StatusFinding:
    """The speculative config: DFlash, with a draft length the article ran."""
    spec = log.speculative_config
    if spec is None:
        said = _logged_problem(None, None, SPEC_CHECK)
        return StatusFinding.of(SPEC_CHECK, FAIL, f"no speculative config in {log.source}", said)
    words = json.dumps(spec, separators=(",", ":"))
    problem = _logged_problem(LoggedSpec.of(spec), None, SPEC_CHECK)  # the rule j0 serve applies
    if problem is not None:
        return StatusFinding.of(SPEC_CHECK, FAIL, words, problem)
    return StatusFinding.of(SPEC_CHECK, OK, words)


def max_num_seqs(log: LogFacts) -> StatusFinding | None:
    """--max-num-seqs (vLLM's non-default args, else J0's history rows) where it is not the
    article's; None where it is, or where the log does not say."""
    seqs = log.max_num_seqs
    if seqs is None and log.j0 == "on" and log.pool_shape:
        seqs = log.pool_shape[0]
    problem = _logged_problem(None, seqs, SEQS_CHECK)
    if seqs is None or problem is None:  # not said, or the article's
        return None
    return StatusFinding.of(SEQS_CHECK, FAIL, f"--max-num-seqs {seqs}", problem)


def _logged_problem(spec: LoggedSpec | None, seqs: int | None, check: str) -> str | None:
    """j0 status's words for `check` on the logged setting: the server setting's problems
    (setting_problems, the rule and words j0 serve's warnings share), None where there is none."""
    found = [p.status for p in setting_problems(spec, seqs) if p.check == check]
    return found[0] if found else None
