"""`j0 doctor`'s checks: can this host run the article's `docker compose up`? Each check ok /
warn / fail, with a one-line fix; ready when none fails (run.py runs them, in order).

The order follows what `docker compose up` meets: Docker, Compose, buildx, a GPU for containers,
the base image, the GPU and its memory for the target, the Hub (token, gated repos), free disk.
"""

from __future__ import annotations

from pathlib import Path

from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS
from j0.checks import FAIL, OK, WARN, Check
from j0.compose.switches import Knobs
from j0.doctor import cuda, gpu, hub, needs

GPU_FIX = (
    "run on a host with an NVIDIA GPU and its driver (`nvidia-smi` must list the GPU); the "
    "article ran one RTX PRO 6000 Blackwell (96 GB)"
)
# The article's GPU (its seed: "one RTX PRO 6000 Blackwell", 96 GB of GDDR7, 96 GiB). Its memory
# is what the article's setup had: the weights, J0's history and, with --max-model-len auto, a KV
# cache of whatever was left; a GPU with less holds a shorter context for the same 4 requests.
# The bar is 95 GiB: nvidia-smi reports a little less than the nominal 96 GiB (what the driver
# keeps), and the next smaller cards (H100 NVL 94 GB, the 84 GB RTX PRO 6000D) are below it.
ARTICLE_GPU = "RTX PRO 6000 Blackwell"
ARTICLE_GPU_BYTES = 96 * needs.GIB
ARTICLE_GPU_BAR = 95 * needs.GIB


def is_unset(value: str) -> bool:
    return value in ("", "/dev/null")


def repo_facts(
    repo_id: str, revision: str, local: Path | None, settings: Knobs, token: hub.TokenFound
) -> hub.RepoFacts:
    facts = hub.RepoFacts(repo_id, revision)
    if local is not None:
        hub.from_folder(facts, local)
    hub.from_cache(facts, settings.hub_cache())
    offline = settings.get("HF_HUB_OFFLINE").lower() in ("1", "true", "yes", "on")
    if offline:
        facts.problems.append("HF_HUB_OFFLINE is set: the Hub was not asked")
    elif not hub.hub_available():
        facts.problems.append(
            "huggingface_hub is not installed (pip install -e '.[hub]'): the Hub was not asked"
        )
    else:
        hub.ask_hub(facts, token.value, settings.get("HF_ENDPOINT") or None)
    return facts


def compute_needs(
    target: hub.RepoFacts, drafter: hub.RepoFacts, settings: Knobs
) -> tuple[needs.Needs | None, str]:
    """The GPU memory the server takes, or None and why not."""
    notes = []
    attention = None
    if target.config is not None:
        try:
            attention = needs.attention_from_config(target.config, target.config_source)
        except ValueError as exc:
            notes.append(f"{target.config_source}: {exc}")
    if attention is None:
        attention = needs.assumed_attention()
    if attention.max_len == 0:
        attention = needs.Attention(
            **{**attention.__dict__, "max_len": needs.ASSUMED_SHAPE["max_len"]}
        )
        notes.append(f"no max_position_embeddings: {attention.max_len} tokens assumed")
    draft = None
    if drafter.config is not None:
        try:
            draft = needs.attention_from_config(drafter.config, drafter.config_source)
        except ValueError as exc:
            notes.append(f"{drafter.config_source}: {exc}")
    draft = draft or needs.assumed_drafter(attention)
    if target.weights_bytes is not None:
        weights = needs.Sized(target.weights_bytes, target.weights_source)
    else:
        params = needs.params_from_name(target.repo_id)
        if params is None:
            return None, f"cannot size {target.repo_id}: no file sizes and no size in its name"
        weights = needs.Sized(
            int(params * needs.BF16_BYTES),
            f"estimate: {params / 1e9:g}B parameters x 2 bytes (BF16)",
        )
    if drafter.weights_bytes is not None:
        drafter_weights = needs.Sized(drafter.weights_bytes, drafter.weights_source)
    else:
        drafter_weights = needs.Sized(needs.ASSUMED_DRAFTER_BYTES, "estimate")
    try:
        length, length_source = needs.max_model_len(settings.get("MAX_MODEL_LEN"), attention)
    except ValueError as exc:
        return None, str(exc)
    result = needs.Needs(
        weights,
        drafter_weights,
        attention,
        draft,
        settings.get("KV_CACHE_DTYPE", "auto"),
        length,
        length_source,
        ARTICLE_MAX_NUM_SEQS,
        notes + list(attention.notes),
    )
    return result, ""


def gpu_checks(
    query: gpu.GpuQuery,
    need: needs.Needs | None,
    why: str,
    util: float,
    image_cuda: cuda.ImageCuda | None = None,
) -> list[Check]:
    if not query.gpus:
        required = ""
        if need is not None:
            estimated = ", estimated" if need.weights.source.startswith("estimate") else ""
            required = (
                f"; the article's server needs a GPU of about "
                f"{needs.gib((need.fixed + need.kv_cache(1)) / util)} at GPU_MEMORY_UTILIZATION="
                f"{util:.2f} (one request of {need.max_model_len} tokens{estimated})"
            )
        return [Check("gpu", FAIL, f"no NVIDIA GPU: {query.problem}{required}", GPU_FIX)]
    listed = "; ".join(
        f"GPU {g.index}: {g.name}, {needs.gib(g.total_bytes)} ({needs.gib(g.free_bytes)} free), "
        f"driver {g.driver}"
        for g in query.gpus
    )
    checks = [Check("gpu", OK, listed)]
    if image_cuda is not None:
        checks.append(cuda.driver_check(query.gpus, image_cuda))
    if need is None:
        checks.append(Check("gpu-memory", WARN, f"cannot tell what the target needs: {why}"))
    else:
        checks.append(fit(query.gpus, need, util))
    checks.append(article_gpu(query.gpus, need, util))
    return checks


def article_gpu(gpus: list[gpu.Gpu], need: needs.Needs | None, util: float) -> Check:
    """The GPU against the article's: ok with its memory or more; a warning with less, saying
    how much shorter the context of --max-num-seqs 4 requests then is than on the article's."""
    name = "article-gpu"
    best = max(gpus, key=lambda g: g.total_bytes)
    head = f"GPU {best.index} ({best.name}, {needs.gib(best.total_bytes)})"
    article = f"the article's GPU, one {ARTICLE_GPU} (96 GB)"
    if best.total_bytes >= ARTICLE_GPU_BAR:
        return Check(name, OK, f"{head} has the memory of {article}, or more")
    detail = f"{head} has less memory than {article}"
    if need is not None:
        seqs = need.max_num_seqs
        here = need.longest_context(best.total_bytes * util, seqs)
        there = need.longest_context(ARTICLE_GPU_BYTES * util, seqs)
        detail += (
            f": at GPU_MEMORY_UTILIZATION={util:.2f} its KV cache holds {seqs} requests of about "
            f"{here} tokens each, against about {there} on the article's GPU (the same "
            "estimate as gpu-memory)"
        )
    return Check(
        name,
        WARN,
        detail + "; results at long context are then not the article's setup",
        f"for the article's setup, a GPU of 96 GB or more (the {ARTICLE_GPU}, an H200)",
    )


def fit(gpus: list[gpu.Gpu], need: needs.Needs, util: float) -> Check:
    """Whether one GPU holds the server: compose reserves one (count: 1); vLLM takes `util` of its
    memory (GPU_MEMORY_UTILIZATION) and needs that much free when it starts."""
    best = max(gpus, key=lambda g: g.total_bytes)
    budget = best.total_bytes * util
    seqs = need.max_num_seqs
    one, all_seqs = need.fixed + need.kv_cache(1), need.fixed + need.kv_cache(seqs)
    head = f"GPU {best.index} ({best.name}): {needs.gib(budget)} at {util:.2f}; needs "
    detail = head + f"{needs.gib(all_seqs)} = {need.summary()}"
    if need.notes:
        detail += "; " + "; ".join(need.notes)
    if best.free_bytes < budget:
        return Check(
            "gpu-memory",
            FAIL,
            detail + f"; but only {needs.gib(best.free_bytes)} is free now (other processes)",
            "stop what uses the GPU (`nvidia-smi` lists it) or lower GPU_MEMORY_UTILIZATION",
        )
    if all_seqs <= budget:
        return Check("gpu-memory", OK, detail)
    auto = need.max_len_source.startswith("MAX_MODEL_LEN=auto")
    longest = need.longest_context(budget, seqs)
    if one <= budget:
        return Check(
            "gpu-memory",
            WARN,
            detail + f"; one request of {need.max_model_len} tokens fits, {seqs} do not "
            f"(vLLM then runs fewer at once; {seqs} fit up to about {longest} tokens each)",
            f"MAX_MODEL_LEN={longest} in .env keeps {seqs} requests of full length, or "
            "KV_CACHE_DTYPE=fp8 (the draft's stays BF16), or a larger GPU",
        )
    if auto and need.fixed < budget:
        return Check(
            "gpu-memory",
            WARN,
            detail + f"; MAX_MODEL_LEN=auto will shorten the context to about "
            f"{need.longest_context(budget, 1)} tokens",
            "fine for short prompts; a larger GPU or KV_CACHE_DTYPE=fp8 gives longer contexts",
        )
    return Check(
        "gpu-memory",
        FAIL,
        detail + "; it does not fit",
        "a GPU with more memory, a shorter MAX_MODEL_LEN, or KV_CACHE_DTYPE=fp8",
    )


def token_check(token: hub.TokenFound, facts: list[hub.RepoFacts]) -> Check:
    gated = [f.repo_id for f in facts if f.gated]
    unknown = [f.repo_id for f in facts if f.gated is None]
    if token.compose_file is not None:
        if token.value:
            return Check("hf-token", OK, f"a token in {token.source} (not shown)")
        return Check(
            "hf-token",
            FAIL,
            f"{token.source}: compose mounts it as the token secret",
            "put the token in that file (`hf auth login` writes ~/.cache/huggingface/token) or "
            "unset HF_TOKEN_FILE",
        )
    if token.value:
        status = WARN if gated or unknown else OK
        return Check(
            "hf-token",
            status,
            f"a token is on this host ({token.source}, not shown), but HF_TOKEN_FILE is unset: "
            "compose's containers get no token"
            + (f"; {', '.join(gated)} is gated" if gated else ""),
            "HF_TOKEN_FILE=~/.cache/huggingface/token in .env" if status != OK else "",
        )
    if gated:
        return Check(
            "hf-token",
            FAIL,
            f"no Hugging Face token, and {', '.join(gated)} is gated",
            "accept the repo's terms on the Hub, `hf auth login`, then "
            "HF_TOKEN_FILE=~/.cache/huggingface/token in .env",
        )
    if unknown:
        return Check(
            "hf-token",
            WARN,
            f"no Hugging Face token; whether {' and '.join(unknown)} "
            + ("are" if len(unknown) > 1 else "is")
            + " gated is unknown",
            "if a download is refused: `hf auth login`, then HF_TOKEN_FILE in .env",
        )
    return Check("hf-token", OK, "no token, none needed (neither repo is gated)")


def repo_check(name: str, facts: hub.RepoFacts, cached: int) -> Check:
    where = f"{facts.repo_id}@{facts.revision}"
    local = f"; {needs.gib(cached)} already in the Hub cache" if cached else ""
    if facts.gated and facts.access is False:
        return Check(
            name,
            FAIL,
            f"{where} is gated ({facts.gated}) and this token cannot download it",
            f"accept its terms at https://huggingface.co/{facts.repo_id} with the token's account",
        )
    if facts.reachable:
        gated = f"gated ({facts.gated}), access granted" if facts.gated else "not gated"
        problems = ("; " + "; ".join(facts.problems)) if facts.problems else ""
        status = WARN if facts.problems else OK
        return Check(name, status, f"{where} on the Hub: {gated}{local}{problems}")
    have = facts.config is not None or facts.weights_bytes is not None
    words = "; ".join(facts.problems) or "the Hub was not asked"
    known = local or ("; sizes from what is on disk" if have else "; sizes are estimates")
    return Check(
        name,
        WARN,
        f"{where}: {words}{known}",
        "check the network, HF_ENDPOINT and HF_HUB_OFFLINE" if facts.reachable is False else "",
    )
