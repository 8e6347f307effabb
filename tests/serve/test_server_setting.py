"""One vLLM server as one value (j0.article.server_setting.ServerSetting): `vllm serve`'s command
line (args()) and switches (env()), read back by from_args(), judged by problems().

Expected command lines are typed from compose.serve.yaml's server command and the launcher's
flags, not produced by the code under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from j0.article.server_setting import Problem, ServerSetting
from j0.article.spec_config import SpecConfig
from j0.errors import J0Error

# Typed from compose.serve.yaml's server command with compose's defaults (15 draft tokens).
ARTICLE_15 = (
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
)
COMPOSE_15 = [
    "Qwen/Qwen3.5-27B",
    "--speculative-config",
    ARTICLE_15,
    "--max-num-seqs",
    "4",
    "--max-model-len",
    "auto",
    "--kv-cache-dtype",
    "auto",
    "--gpu-memory-utilization",
    "0.90",
    "--per-request-spec-decode-metrics",
    "detailed",
    "--enable-prompt-tokens-details",
    "--port",
    "8000",
]


def compose_15() -> ServerSetting:
    return ServerSetting(
        model="Qwen/Qwen3.5-27B",
        spec=SpecConfig.article("/drafter", 15),
        max_model_len="auto",
        kv_cache_dtype="auto",
        gpu_memory_utilization="0.90",
        port=8000,
        j0=True,
        prefix_caching_knob=True,
        hf_home="/root/.cache/huggingface",
    )


def test_compose_default_server() -> None:
    server = compose_15()
    assert server.args() == COMPOSE_15
    assert server.env() == {
        "VLLM_DFLASH_CTX_NOISE": "1",
        "ENABLE_PREFIX_CACHING": "1",
        "VLLM_DFLASH_DUMP": "",
        "VLLM_DFLASH_DUMP_STEPS": "0",
        "HF_HOME": "/root/.cache/huggingface",
    }
    assert ServerSetting.from_args(COMPOSE_15, server.env()) == server
    assert server.problems() == []


def test_the_baseline_goes_without_the_spec_decode_metrics() -> None:
    """vLLM 0.33 refuses --per-request-spec-decode-metrics without speculative decoding."""
    base = ServerSetting("m", None, "auto", "0.90", 8000, prefix_caching=False)
    assert base.args() == [
        "m",
        "--max-num-seqs",
        "4",
        "--max-model-len",
        "auto",
        "--gpu-memory-utilization",
        "0.90",
        "--enable-prompt-tokens-details",
        "--port",
        "8000",
        "--no-enable-prefix-caching",
    ]
    assert base.problems() == [Problem("spec-config", None, "no speculative config")]


def test_the_launchers_flags_follow_composes() -> None:
    """The local launcher's scenario flags and eager mode come after compose's arguments."""
    server = ServerSetting(
        "t",
        SpecConfig("ngram", 7, None, None, extra={"prompt_lookup_max": 4}),
        "2048",
        "0.3",
        8765,
        host="127.0.0.1",
        prefix_caching=True,
        max_num_batched_tokens=256,
        kv_cache_memory_bytes=2147483648,
        num_gpu_blocks_override=64,
        eager=True,
        dump_dir="/d",
        dump_steps=5,
    )
    assert server.args()[9:] == [
        "--per-request-spec-decode-metrics",
        "detailed",
        "--enable-prompt-tokens-details",
        "--host",
        "127.0.0.1",
        "--port",
        "8765",
        "--enable-prefix-caching",
        "--max-num-batched-tokens",
        "256",
        "--kv-cache-memory-bytes",
        "2147483648",
        "--num-gpu-blocks-override",
        "64",
        "--enforce-eager",
    ]
    assert server.env() == {
        "VLLM_DFLASH_CTX_NOISE": "0",
        "VLLM_DFLASH_DUMP": "/d",
        "VLLM_DFLASH_DUMP_STEPS": "5",
    }
    # j0 serve refuses another method while reading the config: no warning of its own
    assert server.problems() == [Problem("spec-config", None, "speculative method 'ngram'")]


def test_problems_are_the_articles_rule_and_its_request_slots() -> None:
    server = ServerSetting("m", SpecConfig.article("/d", 9), "auto", "0.90", 8000, max_num_seqs=8)
    assert server.problems() == [
        Problem(
            "spec-config",
            "num_speculative_tokens=9: the article tested 15 and 7 only (NUM_SPEC_TOKENS)",
            "num_speculative_tokens=9: the article ran 15 and 7",
        ),
        Problem(
            "max-num-seqs",
            "--max-num-seqs 8: the article ran 4",
            "--max-num-seqs 8, the article ran 4",
        ),
    ]


KNOWN = {
    "--speculative-config",
    "--max-num-seqs",
    "--max-model-len",
    "--kv-cache-dtype",
    "--gpu-memory-utilization",
    "--per-request-spec-decode-metrics",
    "--enable-prompt-tokens-details",
    "--host",
    "--port",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--max-num-batched-tokens",
    "--kv-cache-memory-bytes",
    "--num-gpu-blocks-override",
    "--enforce-eager",
}
words = st.text(min_size=1, max_size=10).filter(lambda w: w not in KNOWN)
names = st.text(min_size=1, max_size=10).filter(lambda w: not w.startswith("-"))
small = st.integers(0, 10**12)
env_names = st.text(min_size=1, max_size=8).filter(
    lambda n: (
        n
        not in {
            "VLLM_DFLASH_CTX_NOISE",
            "ENABLE_PREFIX_CACHING",
            "VLLM_DFLASH_DUMP",
            "VLLM_DFLASH_DUMP_STEPS",
            "HF_HOME",
        }
    )
)


@st.composite
def servers(draw: st.DrawFn) -> ServerSetting:
    tokens = draw(st.integers(1, 64))
    spec = draw(
        st.sampled_from(
            [
                None,
                SpecConfig.article(draw(names), tokens),
                SpecConfig("ngram", tokens, None, None, extra={"prompt_lookup_max": 4}),
            ]
        )
    )
    return ServerSetting(
        model=draw(names),
        spec=spec,
        max_model_len=draw(st.none() | words),
        gpu_memory_utilization=draw(st.none() | words),
        port=draw(st.none() | st.integers(0, 65535)),
        max_num_seqs=draw(st.none() | st.integers(0, 512)),
        kv_cache_dtype=draw(st.none() | words),
        host=draw(st.none() | words),
        prefix_caching=draw(st.none() | st.booleans()),
        max_num_batched_tokens=draw(st.none() | small),
        kv_cache_memory_bytes=draw(st.none() | small),
        num_gpu_blocks_override=draw(st.none() | small),
        extra_args=tuple(draw(st.lists(words, max_size=4))),
        eager=draw(st.booleans()),
        spec_metrics=spec is None or draw(st.booleans()),
        j0=draw(st.booleans()),
        dump_dir=draw(st.text(max_size=8)),
        dump_steps=draw(small),
        prefix_caching_knob=draw(st.none() | st.booleans()),
        hf_home=draw(st.none() | st.text(max_size=8)),
        extra_env=draw(st.dictionaries(env_names, st.text(max_size=6), max_size=3)),
    )


@given(servers())
def test_from_args_reads_what_args_and_env_wrote(server: ServerSetting) -> None:
    assert ServerSetting.from_args(server.args(), server.env()) == server
    again = ServerSetting.from_args(server.args(), server.env())
    assert (again.args(), again.env()) == (server.args(), server.env())


def test_from_args_reads_an_option_and_its_value_as_one_word() -> None:
    """`--name=VALUE`, as vLLM's parser takes it; args() writes it back as two words."""
    joined = [
        "Qwen/Qwen3.5-27B",
        f"--speculative-config={ARTICLE_15}",
        "--max-num-seqs=4",
        "--max-model-len=auto",
        "--kv-cache-dtype=auto",
        "--gpu-memory-utilization=0.90",
        "--per-request-spec-decode-metrics=detailed",
        "--enable-prompt-tokens-details",
        "--port=8000",
    ]
    server = ServerSetting.from_args(joined, {})
    assert server.args() == COMPOSE_15


def test_an_option_not_given_is_not_written() -> None:
    server = ServerSetting.from_args(["m", "--served-model-name", "target"])
    assert server.args() == ["m", "--enable-prompt-tokens-details", "--served-model-name", "target"]
    assert server.problems() == [
        Problem("spec-config", None, "no speculative config"),
        # not given: vLLM's default, which j0 serve warns of and a log does not list
        Problem(
            "max-num-seqs", "no --max-num-seqs: the article ran 4 (vLLM's default differs)", None
        ),
    ]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "no model"),
        (["--port", "1"], {}, "no model"),
        ([*COMPOSE_15[:-1], "80a"], {}, "--port '80a', expected a whole number"),
        (COMPOSE_15, {"VLLM_DFLASH_CTX_NOISE": "yes"}, "VLLM_DFLASH_CTX_NOISE='yes'"),
        (COMPOSE_15, {"VLLM_DFLASH_DUMP_STEPS": "-1"}, "VLLM_DFLASH_DUMP_STEPS='-1'"),
        (COMPOSE_15, {"ENABLE_PREFIX_CACHING": ""}, "ENABLE_PREFIX_CACHING=''"),
        (
            [*COMPOSE_15[:2], '{"method":"eagle"}', *COMPOSE_15[3:]],
            {},
            "method is 'eagle'",
        ),
    ],
)
def test_from_args_refuses_what_no_server_setting_holds(
    args: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(J0Error, match=message) as info:
        ServerSetting.from_args(args, env, "the plan's server")
    assert info.value.exit_code == 64 and "the plan's server" in str(info.value)


def test_the_baseline_is_read_from_composes_server_without_its_config() -> None:
    """The matrix's baseline: compose's server of 0 draft tokens, its config left unread."""
    zero = [COMPOSE_15[0], "--speculative-config", ARTICLE_15.replace("15", "0"), *COMPOSE_15[3:]]
    with pytest.raises(J0Error, match="num_speculative_tokens is 0"):
        ServerSetting.from_args(zero)
    base = ServerSetting.from_args(zero, speculative=False)
    assert base.spec is None
    assert base.args() == [
        COMPOSE_15[0],
        *COMPOSE_15[3:11],
        "--enable-prompt-tokens-details",
        "--port",
        "8000",
    ]
