"""The speculative config as one value (j0.article.spec_config): its one written form, its one
reader, and the article's rule that `j0 serve` and `j0 status` both apply.

The expected forms are typed from the seed's serving flags and vLLM's keys, never produced by the
code under test; the rule's reference is the article's own words (DFlash, 15 or 7 draft tokens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from j0.article.spec_config import KNOWN_KEYS, METHODS, LoggedSpec, SpecConfig, article_problem
from j0.checks import OK
from j0.engine.server.server_log import LogFacts
from j0.errors import J0Error
from j0.serve import launch as serve_launch
from j0.status.log_checks import spec_config as status_spec_check

# Typed from the seed's serving flags.
ARTICLE_15 = (
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
)

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
extra_keys = st.text(min_size=1, max_size=12).filter(lambda key: key not in KNOWN_KEYS)


@st.composite
def configs(draw: st.DrawFn) -> SpecConfig:
    method = draw(st.sampled_from(METHODS))
    drafter = draw(st.text(min_size=1, max_size=20))
    if method == "ngram":
        drafter = draw(st.none() | st.just(drafter))
    return SpecConfig(
        method,
        draw(st.integers(1, 10**9)),
        drafter,
        draw(st.none() | st.sampled_from(["auto", "fp8", "bfloat16"])),
        draw(st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3)),
        draw(st.dictionaries(extra_keys, json_values, max_size=3)),
    )


@given(configs())
def test_to_json_and_from_json_round_trip(config: SpecConfig) -> None:
    text = config.to_json()
    assert SpecConfig.from_json(text) == config
    assert SpecConfig.from_json(text).to_json() == text  # one written form


@given(configs())
def test_to_json_is_compact_json_in_vllms_keys(config: SpecConfig) -> None:
    """What vLLM reads: each field under vLLM's key, nothing else but the extra keys."""
    value = json.loads(config.to_json())
    assert value["method"] == config.method
    assert value["num_speculative_tokens"] == config.tokens
    assert value.get("model") == config.drafter
    assert value.get("kv_cache_dtype") == config.kv_cache_dtype
    assert value.get("speculator_options") == config.speculator_options
    assert {k: v for k, v in value.items() if k not in KNOWN_KEYS} == config.extra
    assert config.to_json() == json.dumps(value, separators=(",", ":"))


@given(st.permutations(["method", "model", "num_speculative_tokens", "kv_cache_dtype"]))
def test_any_key_order_reads_as_the_same_value(order: list[str]) -> None:
    article = json.loads(ARTICLE_15)
    raw = json.dumps({key: article[key] for key in order})
    assert SpecConfig.from_json(raw) == SpecConfig.article("/drafter", 15)
    assert SpecConfig.from_json(raw).to_json() == ARTICLE_15


def test_the_articles_config_is_the_seeds_form() -> None:
    assert SpecConfig.article("/drafter", 15).to_json() == ARTICLE_15
    ngram = SpecConfig("ngram", 7, None, None, extra={"prompt_lookup_max": 4})
    assert ngram.to_json() == '{"method":"ngram","num_speculative_tokens":7,"prompt_lookup_max":4}'
    plugin = SpecConfig("dflash_j0", 7, "/d", "auto", {"j0": True, "variant": "article"})
    assert plugin.to_json() == (
        '{"method":"dflash_j0","model":"/d","num_speculative_tokens":7,"kv_cache_dtype":"auto",'
        '"speculator_options":{"j0":true,"variant":"article"}}'
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[1]", "expected a JSON object"),
        ('{"method":"eagle3","model":"/d","num_speculative_tokens":7}', "method is 'eagle3'"),
        ('{"method":"dflash","num_speculative_tokens":7}', "drafter's directory"),
        ('{"method":"dflash","model":"/d","num_speculative_tokens":0}', "positive integer"),
        ('{"method":"ngram","num_speculative_tokens":true}', "positive integer"),
        ('{"method":"ngram","num_speculative_tokens":2,"kv_cache_dtype":8}', "expected 'auto'"),
        ('{"method":"ngram","num_speculative_tokens":2,"speculator_options":[]}', "JSON object"),
    ],
)
def test_from_json_refuses_what_is_not_a_config(raw: str, message: str) -> None:
    with pytest.raises(J0Error, match=message) as info:
        SpecConfig.from_json(raw, "the test's config")
    assert info.value.exit_code == 64
    assert "the test's config" in str(info.value)


def test_a_config_cannot_be_made_wrong() -> None:
    with pytest.raises(ValueError, match="method"):
        SpecConfig("eagle", 7, "/d")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive integer"):
        SpecConfig("dflash", 0, "/d")
    with pytest.raises(ValueError, match="fields of the config"):
        SpecConfig("ngram", 3, None, None, extra={"num_speculative_tokens": 4})


def articles_words(method: object, tokens: object) -> bool:
    """The article's setup, from its own words: DFlash (on the image or the plugin), 15 or 7."""
    return method in ("dflash", "dflash_j0") and type(tokens) is int and tokens in (15, 7)


methods = st.sampled_from([*METHODS, "eagle3", None, ""])
token_counts = st.one_of(st.integers(-2, 40), st.sampled_from([True, None, "15", 15.5]))


@given(methods, token_counts)
def test_the_articles_rule(method: Any, tokens: Any) -> None:
    problem = article_problem(method, tokens)
    assert (problem is None) == articles_words(method, tokens)
    if problem is not None and method in ("dflash", "dflash_j0"):
        assert problem == f"num_speculative_tokens={tokens}: the article ran 15 and 7"


@given(st.sampled_from(METHODS), st.integers(1, 40))
def test_status_applies_the_same_rule(method: Any, tokens: int) -> None:
    """`j0 status` on a log that shows the config fails it exactly where the rule does."""
    config = SpecConfig(method, tokens, "/d")
    logged = LogFacts(source="server.log", speculative_config=config.to_dict())
    finding = status_spec_check(logged)
    assert (finding.check.status == OK) == articles_words(method, tokens)


@pytest.mark.parametrize("tokens", [15, 7, 3, 16])
def test_j0_serve_warns_where_the_rule_says(tokens: int, tmp_path: Path) -> None:
    folder = tmp_path / "drafter"
    folder.mkdir()
    causal = {"num_hidden_layers": 5, "dflash_config": {"causal_head": True, "causal": True}}
    (folder / "config.json").write_text(json.dumps(causal))
    spec = SpecConfig.article(str(folder), tokens).to_json()
    args = ["Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4"]
    plan = serve_launch.plan_serve(args, {}, api_key_file=None)
    warned = any(w.startswith("num_speculative_tokens=") for w in plan.warnings)
    assert warned == (not articles_words("dflash", tokens))


@given(
    st.dictionaries(
        st.sampled_from(["method", "model", "num_speculative_tokens", "other"]), json_values
    )
    | st.none()
)
def test_what_a_log_says_is_read_as_said(value: dict[str, Any] | None) -> None:
    """LoggedSpec: each field as the log or document said it, the rule on what was said."""
    said = LoggedSpec.of(value)
    given = value or {}
    assert (said.method, said.drafter, said.tokens) == (
        given.get("method"),
        given.get("model"),
        given.get("num_speculative_tokens"),
    )
    n = given.get("num_speculative_tokens")
    assert said.whole_tokens == (n if type(n) is int else None)
    assert (said.article_problem() is None) == articles_words(given.get("method"), n)


@given(
    st.text(min_size=1, max_size=20),
    st.integers(1, 10**6),
    st.dictionaries(extra_keys, json_values, max_size=3),
)
def test_j0_serve_reads_the_one_written_form_back(drafter: str, tokens: int, extra: dict) -> None:
    """What to_json writes, `j0 serve`'s reader (parse_speculative_config) takes as the same
    value: the article's form without a note, each key the article did not set with one."""
    from j0.article.serving import parse_speculative_config

    config = SpecConfig("dflash", tokens, drafter, "auto", extra=extra)
    spec = parse_speculative_config(config.to_json())
    assert spec.config == config and spec.plugin is None
    assert len(spec.notes) == len(extra)
    assert all("which the article's did not" in note for note in spec.notes)
