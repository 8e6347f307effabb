"""Property: j0's table of vLLM 0.33's options reads any ARGS as vLLM's own parser does
(j0.serve.vllm_args): where vLLM's parser takes ARGS, the table reads the same model,
speculative config, API keys, --max-num-seqs, --kv-cache-dtype and prefix caching (never refuses
them, never reads another value); where vLLM refuses them (a value of the wrong type for an
option j0 does not judge, say), nothing runs, and the table may take them. ARGS are built from
the options `j0 serve` judges in every spelling vLLM takes (underscores, prefixes, `=`, dotted
sub-keys, short forms) with values, other options and arbitrary words. The reference is vLLM
0.33.0's parser of the test environment (tests/serve/vllm_parser.py); skipped where it cannot be
built."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from j0.errors import J0Error
from j0.serve import vllm_args
from serve.vllm_parser import vllm_parser

# One worker for the modules that build vLLM's parser (tests/serve/vllm_parser.py: torch and
# vLLM's engine arguments imported, about 10 s of CPU in each process that builds it), so that
# it is built once per run, not once in every worker that draws one of these tests.
pytestmark = pytest.mark.xdist_group("vllm-parser")

NAMES = [
    "--speculative-config",
    "--speculative_config",
    "--speculative",
    "--spec",
    "-sc",
    "--speculative-config.num_speculative_tokens",
    "--speculative-config.method",
    "--speculative_config.model",
    "--api-key",
    "--api_key",
    "--api-k",
    "--max-num-seqs",
    "--max_num_seqs",
    "--max-num-se",
    "--max-num-s",
    "--kv-cache-dtype",
    "--kv_cache",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--disable_prefix_caching",
    "--enable-prefix",
    "--model",
    "--enforce-eager",
    "--port",
    "-tp",
    "--bogus",
    "-O3",
    "--",
]
VALUES = [
    '{"method":"dflash","model":"/d","num_speculative_tokens":15}',
    '{"method":"ngram"}',
    "3",
    "",
    "k",
    "fp8",
    "auto",
    "-1",
    "x",
    "[1]",
    "{",
    "null",
]
token = st.one_of(
    st.sampled_from(NAMES),
    st.sampled_from(VALUES),
    st.builds(lambda n, v: f"{n}={v}", st.sampled_from(NAMES), st.sampled_from(VALUES)),
    st.text(alphabet="-_.=abcdekmpsx0123", max_size=6),
)
arguments = st.builds(
    lambda first, rest: [first, *rest],
    st.sampled_from(["m", "--model"]),
    st.lists(token, max_size=8),
)


def reading(read: object) -> object:
    try:
        return read().judged()  # type: ignore[operator]
    except J0Error:
        return "refused"


# Slow: builds vLLM's own parser, which imports torch and vLLM's engine arguments (13 s in a
# fast-subset run of 2026-12-06).
@pytest.mark.slow
@given(arguments)
def test_the_table_reads_as_vllms_parser(args: list[str]) -> None:
    parser = vllm_parser()
    if parser is None:
        pytest.skip("vLLM's parser cannot be built here")
    if any(vllm_args._is_config_option(a) for a in args) or "--help".startswith(args[-1]):
        return  # refused before either reads (--config), or vLLM prints its help
    ours = reading(lambda: vllm_args.read_with_table(list(args)))
    theirs = reading(lambda: vllm_args.read_with_parser(parser, list(args)))
    if theirs != "refused":
        assert ours == theirs, args
