"""`j0 serve` judges ARGS as vLLM 0.33 reads them, not by their spelling: underscores, prefixes,
`--name=value`, dotted sub-keys of the speculative config and the last value winning can no
longer make j0 check and log one speculative config while vLLM runs another; an empty
`--api-key ""` (which vLLM drops, serving /v1 open) is refused.

In process, on j0's table of vLLM's options (tests/conftest.py sets J0_SERVE_ARGS_READER=table);
tests/serve/test_vllm_args.py checks that table's readings against vLLM's own parser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.errors import USAGE, J0Error
from j0.serve import launch as serve_launch
from serve.test_serve_launch import drafter, serve_args

OTHER = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'


def logged_config(plan: serve_launch.ServePlan) -> dict:
    (line,) = [f for f in plan.facts if f.startswith("--speculative-config ")]
    return json.loads(line.removeprefix("--speculative-config "))


@pytest.mark.parametrize(
    "spelling",
    [
        ["--speculative_config", OTHER],
        [f"--speculative_config={OTHER}"],
        ["--speculative", OTHER],
        ["-sc", OTHER],
        ["--speculative-config.num_speculative_tokens", "3"],
        ["--speculative-config.method", "ngram"],
    ],
    ids=["underscores", "underscores=", "prefix", "short", "dotted-n", "dotted-method"],
)
def test_a_second_speculative_config_in_another_spelling_is_what_is_judged(
    tmp_path: Path, spelling: list[str]
) -> None:
    """Before: j0 read only the exact `--speculative-config`, passed the article's config and
    logged it, while vLLM took the last one given (for dotted keys: an object of those keys
    alone, put after every other argument). Now that config is the one checked: refused."""
    args = serve_args(drafter(tmp_path), 15, *spelling)
    with pytest.raises(J0Error) as caught:
        serve_launch.plan_serve(args, {})
    assert caught.value.exit_code in (USAGE, 64), caught.value


def test_the_config_logged_is_the_one_vllm_runs(tmp_path: Path) -> None:
    """The article's config given first in another spelling, then exactly: the last wins (the
    logged one is that one), with a warning that it was given twice."""
    folder = drafter(tmp_path)
    article = serve_args(folder)[2]
    seven = json.loads(article) | {"num_speculative_tokens": 7}
    args = serve_args(folder, 15, f"--speculative_config={json.dumps(seven)}")
    plan = serve_launch.plan_serve(args, {})
    assert logged_config(plan) == seven
    assert "speculative_config is given 2 times: vLLM takes the last" in plan.warnings


@pytest.mark.parametrize("key", [[""], ["", "k"], ["k", ""]], ids=["empty", "first", "last"])
def test_an_empty_api_key_is_refused(tmp_path: Path, key: list[str]) -> None:
    """Before: `--api-key ""` made j0 skip the key file it was given ("API key: from --api-key")
    while vLLM drops empty keys: /v1 served with no authentication."""
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    args = serve_args(drafter(tmp_path), 15, "--api-key", *key)
    with pytest.raises(J0Error) as caught:
        serve_launch.plan_serve(args, {}, api_key_file=secret)
    assert caught.value.exit_code == USAGE
    assert "empty key" in str(caught.value) and "no authentication" in str(caught.value)


@pytest.mark.parametrize("spelling", [["--api_key", "k"], ["--api-k=k"], ["--api-key", "a", "k"]])
def test_an_api_key_in_any_spelling_is_vllms(tmp_path: Path, spelling: list[str]) -> None:
    """Before: `--api_key k` was not seen: j0 also set the key file's key and said "required on
    /v1 (read from FILE)" while vLLM took the one in ARGS."""
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    plan = serve_launch.plan_serve(serve_args(drafter(tmp_path), 15, *spelling), {}, secret)
    assert any(f.startswith("API key: from --api-key") for f in plan.facts), plan.facts
    assert "VLLM_API_KEY" not in plan.env


@pytest.mark.parametrize("spelling", [["--max_num_seqs", "8"], ["--max-num-se=8"]])
def test_max_num_seqs_in_any_spelling_is_read(tmp_path: Path, spelling: list[str]) -> None:
    folder = drafter(tmp_path)
    args = serve_args(folder)
    args = [*args[:3], *spelling]
    plan = serve_launch.plan_serve(args, {})
    assert "--max-num-seqs 8: the article ran 4" in plan.warnings, plan.warnings


@pytest.mark.parametrize("flag", ["--no_enable_prefix_caching", "--disable-prefix-caching"])
def test_prefix_caching_in_any_spelling_counts_once(tmp_path: Path, flag: str) -> None:
    args = serve_args(drafter(tmp_path), 15, flag)
    with pytest.raises(J0Error, match="say it once"):
        serve_launch.plan_serve(args, {"ENABLE_PREFIX_CACHING": "1"})
    plan = serve_launch.plan_serve(args, {})
    assert "prefix caching: off (--no-enable-prefix-caching)" in plan.facts


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--max-num-s", "4"], "ambiguous"),
        (["--bogus"], "not an option"),
        (["--config", "serve.yaml"], "--config"),
        (["--conf=serve.yaml"], "--config"),
        (["--enforce-eager=1"], "takes no value"),
        (["--api-key"], "without a value"),
    ],
)
def test_what_vllm_would_refuse_is_refused(tmp_path: Path, extra: list[str], words: str) -> None:
    with pytest.raises(J0Error, match=words) as caught:
        serve_launch.plan_serve(serve_args(drafter(tmp_path), 15, *extra), {})
    assert caught.value.exit_code == USAGE
