"""One vLLM server as one value: ServerSetting, built on the speculative config (SpecConfig).

`args()` is `vllm serve`'s command line and `env()` the J0 switches of its environment, written
here once for every route that starts a server: compose's servers as j0 renders them (the
matrix, the Kubernetes manifests; compose.serve.yaml is the other place, held equal by a test),
the local launcher (engine-check, mini) and the GPU scripts (`python3 -m j0.article.server_flags`
prints their flags). `from_args()` reads a command line of these options back into the value
(compose's rendered server, from which the matrix makes its baseline); `problems()` says where
it is not the article's setup (the speculative config's rule, the request slots), each Problem
in the words `j0 serve` warns with and the words `j0 status` finds on a logged server
(`setting_problems`, which `j0 status` applies to what the log says).

Standard library only: `j0 serve` runs inside the image, on the base image's python3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from j0.article.spec_config import ARTICLE_METHODS, TOKENS, SpecConfig, tested_words
from j0.errors import USAGE, J0Error

ARTICLE_MAX_NUM_SEQS = 4
# Prefix caching: vLLM 0.33 has it on by default (vllm/config/cache.py); ENABLE_PREFIX_CACHING
# (compose.yaml's knob: 1, 0, or empty for vLLM's default) becomes one of these flags.
PREFIX_CACHING_FLAGS = ("--enable-prefix-caching", "--no-enable-prefix-caching")
# The per-request spec-decode metrics (`detailed`: per-step acceptance, which `j0 bench run`
# reads), only with speculative decoding: vLLM 0.33 refuses them without (vllm/config/vllm.py).
SPEC_METRICS = ("--per-request-spec-decode-metrics", "detailed")
PROMPT_TOKENS_DETAILS = "--enable-prompt-tokens-details"  # the cached prompt tokens, per request
EAGER = "--enforce-eager"
# J0's switches in the server's environment (the image's route: the patched speculator.py reads
# them; `j0 serve` turns ENABLE_PREFIX_CACHING into a prefix-caching flag).
NOISE, DUMP, DUMP_STEPS = "VLLM_DFLASH_CTX_NOISE", "VLLM_DFLASH_DUMP", "VLLM_DFLASH_DUMP_STEPS"
PREFIX_KNOB, HF_HOME = "ENABLE_PREFIX_CACHING", "HF_HOME"
# Options whose value is an integer (flag -> field), in the order args() writes them at the end.
INT_OPTIONS = {
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--kv-cache-memory-bytes": "kv_cache_memory_bytes",
    "--num-gpu-blocks-override": "num_gpu_blocks_override",
}


def _flag(on: bool | None) -> list[str]:
    return [] if on is None else [PREFIX_CACHING_FLAGS[0 if on else 1]]


def _bit(on: bool) -> str:
    return "1" if on else "0"


@dataclass(frozen=True)
class ServerSetting:
    """`vllm serve MODEL ...` and its J0 switches. `prefix_caching` is the flag in the arguments
    (None: none, vLLM's default or `j0 serve`'s knob), `prefix_caching_knob` compose's
    ENABLE_PREFIX_CACHING for `j0 serve` (None: not set); `hf_home` and `extra_env` go to the
    environment as they are. An option that is None is not written (vLLM's default)."""

    model: str
    spec: SpecConfig | None
    max_model_len: str | None
    gpu_memory_utilization: str | None
    port: int | None
    max_num_seqs: int | None = ARTICLE_MAX_NUM_SEQS
    kv_cache_dtype: str | None = None
    host: str | None = None
    prefix_caching: bool | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_memory_bytes: int | None = None
    num_gpu_blocks_override: int | None = None
    extra_args: tuple[str, ...] = ()  # what else vLLM gets (--served-model-name NAME, ...)
    eager: bool = False
    # With a speculative config: ask for the per-request spec-decode metrics (False: a GPU
    # script's server that never did; without a config they are never asked for)
    spec_metrics: bool = True
    j0: bool = False
    dump_dir: str = ""
    dump_steps: int = 0
    prefix_caching_knob: bool | None = None
    hf_home: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def args(self) -> list[str]:
        """`vllm serve`'s arguments, in compose.serve.yaml's order: the model, the speculative
        config, the request slots, the context length, the KV cache dtype, the memory share, the
        spec-decode metrics (only with speculative decoding), the cached prompt tokens, the
        address, the port, the prefix-caching flag; then what the local launcher's scenarios
        force, any other arguments, and eager mode. None is not written."""
        spec = self.spec

        def given(flag: str, value: object) -> list[str]:
            return [] if value is None else [flag, str(value)]

        return [
            self.model,
            *given("--speculative-config", None if spec is None else spec.to_json()),
            *given("--max-num-seqs", self.max_num_seqs),
            *given("--max-model-len", self.max_model_len),
            *given("--kv-cache-dtype", self.kv_cache_dtype),
            *given("--gpu-memory-utilization", self.gpu_memory_utilization),
            *(SPEC_METRICS if spec is not None and self.spec_metrics else ()),
            PROMPT_TOKENS_DETAILS,
            *given("--host", self.host),
            *given("--port", self.port),
            *_flag(self.prefix_caching),
            *(
                word
                for flag, name in INT_OPTIONS.items()
                for word in given(flag, getattr(self, name))
            ),
            *self.extra_args,
            *([EAGER] if self.eager else []),
        ]

    def env(self) -> dict[str, str]:
        """The switches of the server's environment: J0 (VLLM_DFLASH_CTX_NOISE), the prefix
        caching knob where set, the step dumps, HF_HOME where set, then extra_env."""
        knob = self.prefix_caching_knob
        return {
            NOISE: _bit(self.j0),
            **({} if knob is None else {PREFIX_KNOB: _bit(knob)}),
            DUMP: self.dump_dir,
            DUMP_STEPS: str(self.dump_steps),
            **({} if self.hf_home is None else {HF_HOME: self.hf_home}),
            **self.extra_env,
        }

    @classmethod
    def from_args(
        cls,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        where: str = "the server",
        *,
        speculative: bool = True,
    ) -> ServerSetting:
        """The setting that args() and env() wrote: each option as `--name VALUE` (the last one
        given wins); words of no field kept in extra_args, in their order. A value of the wrong
        kind, or no model: refused (exit 64, naming `where` and the value). With speculative
        False, the speculative config and its metrics are left unread: the server without
        them (the matrix's baseline, made from compose's server of 0 draft tokens)."""
        return _read(list(args), dict(env or {}), where, speculative)

    def problems(self) -> list[Problem]:
        """Where this server is not the article's setup (setting_problems): the speculative
        config's rule, then the request slots."""
        return setting_problems(self.spec, self.max_num_seqs)


# --- judging -------------------------------------------------------------------------------------

SPEC_CHECK, SEQS_CHECK = "spec-config", "max-num-seqs"  # j0 status's names for the two checks


@dataclass(frozen=True)
class Problem:
    """One way a server is not the article's setup. `check` is j0 status's name for it; `serve`
    the warning `j0 serve` logs before the server starts (None: `j0 serve` refuses it while
    reading the arguments, with its own message, or says nothing); `status` the finding `j0
    status` reports on a logged server (None: `j0 status` says nothing of it)."""

    check: str
    serve: str | None
    status: str | None


class JudgedSpec(Protocol):
    """What the article's rule reads of a speculative config: a SpecConfig, or a LoggedSpec (as
    a log says it, each field any value)."""

    @property
    def method(self) -> object: ...

    @property
    def tokens(self) -> object: ...

    def article_problem(self) -> str | None: ...


def setting_problems(spec: JudgedSpec | None, max_num_seqs: int | None) -> list[Problem]:
    """The article's rule on a server's speculative config (None: none given) and its request
    slots (None: not given, vLLM's default), in the order both commands say them."""
    found: list[Problem] = []
    if spec is None:
        found.append(Problem(SPEC_CHECK, None, "no speculative config"))
    elif (rule := spec.article_problem()) is not None:
        # j0 serve refuses another method while reading the config; it warns of the count
        count = (
            f"{TOKENS}={spec.tokens}: the article tested {tested_words()} only (NUM_SPEC_TOKENS)"
        )
        found.append(Problem(SPEC_CHECK, count if spec.method in ARTICLE_METHODS else None, rule))
    article = ARTICLE_MAX_NUM_SEQS
    if max_num_seqs is None:  # vLLM's default: j0 status's log does not list a default
        found.append(
            Problem(
                SEQS_CHECK,
                f"no --max-num-seqs: the article ran {article} (vLLM's default differs)",
                None,
            )
        )
    elif max_num_seqs != article:
        said = f"--max-num-seqs {max_num_seqs}"
        found.append(
            Problem(
                SEQS_CHECK,
                f"{said}: the article ran {article}",
                f"{said}, the article ran {article}",
            )
        )
    return found


# --- reading back --------------------------------------------------------------------------------

_VALUED = {
    "--speculative-config",
    "--max-num-seqs",
    "--max-model-len",
    "--kv-cache-dtype",
    "--gpu-memory-utilization",
    SPEC_METRICS[0],
    "--host",
    "--port",
    *INT_OPTIONS,
}
_BARE = {PROMPT_TOKENS_DETAILS, EAGER, *PREFIX_CACHING_FLAGS}


def _options(args: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """Option -> its last value, the bare flags, and the other words, each in their order."""
    values: dict[str, str] = {}
    flags: list[str] = []
    other: list[str] = []
    i = 1
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if eq and name in _VALUED:  # --name=VALUE, as vLLM's parser takes it
            values[name] = value
            i += 1
            continue
        if word in _VALUED and i + 1 < len(args):
            values[word] = args[i + 1]
            i += 2
            continue
        (flags if word in _BARE else other).append(word)
        i += 1
    return values, flags, other


def _int(values: Mapping[str, str], name: str, where: str) -> int | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not raw.isdigit():
        raise J0Error(f"{where}: {name} {raw!r}, expected a whole number", USAGE)
    return int(raw)


def _read(args: list[str], env: dict[str, str], where: str, speculative: bool) -> ServerSetting:
    if not args or args[0].startswith("-"):
        raise J0Error(f"{where}: no model: the first argument must be the model", USAGE)
    values, flags, other = _options(args)
    raw = values.get("--speculative-config") if speculative else None
    metrics = values.pop(SPEC_METRICS[0], None)
    if speculative and metrics is not None and (raw is None or metrics != SPEC_METRICS[1]):
        other = [*other, SPEC_METRICS[0], metrics]  # not as args() writes it: kept as given
        metrics = None
    prefix = [f for f in flags if f in PREFIX_CACHING_FLAGS]
    knob = env.pop(PREFIX_KNOB, None)
    if knob not in (None, "0", "1"):
        raise J0Error(f"{where}: {PREFIX_KNOB}={knob!r}, expected 1 or 0", USAGE)
    noise = env.pop(NOISE, "0")
    if noise not in ("0", "1"):
        raise J0Error(f"{where}: {NOISE}={noise!r}, expected 1 or 0", USAGE)
    steps = env.pop(DUMP_STEPS, "0")
    if not steps.isdigit():
        raise J0Error(f"{where}: {DUMP_STEPS}={steps!r}, expected a number of steps", USAGE)
    return ServerSetting(
        model=args[0],
        spec=None if raw is None else SpecConfig.from_json(raw, f"{where}: --speculative-config"),
        max_model_len=values.get("--max-model-len"),
        gpu_memory_utilization=values.get("--gpu-memory-utilization"),
        port=_int(values, "--port", where),
        max_num_seqs=_int(values, "--max-num-seqs", where),
        kv_cache_dtype=values.get("--kv-cache-dtype"),
        host=values.get("--host"),
        prefix_caching=None if not prefix else prefix[-1] == PREFIX_CACHING_FLAGS[0],
        **{name: _int(values, flag, where) for flag, name in INT_OPTIONS.items()},
        extra_args=tuple(other),
        eager=EAGER in flags,
        spec_metrics=raw is None or metrics is not None,
        j0=noise == "1",
        dump_dir=env.pop(DUMP, ""),
        dump_steps=int(steps),
        prefix_caching_knob=None if knob is None else knob == "1",
        hf_home=env.pop(HF_HOME, None),
        extra_env=env,
    )
