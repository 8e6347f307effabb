"""j0.serve.vllm_args: ARGS read as vLLM 0.33 reads them. Each behaviour of vLLM's parser that
the issue lists (underscores, unambiguous prefixes, dotted sub-keys of a JSON argument,
`--name=value`, `--model`, an empty key, the last value winning) with the value typed here, read
by j0's table and, where the test environment's vLLM 0.33.0 can build its parser, by vLLM's own
parser too; and the table itself against that parser's registered options.

Each case read by the table is a fast test; the same case read by vLLM's parser, and the table
against the parser's options, are slow (in the whole run, `.ci/run`): building vLLM's parser
imports torch and vLLM's engine arguments, 15 s of CPU and 31 s of one worker's time in a
fast-subset run of 2026-12-07, as tests/fuzz/test_fuzz_serve_args.py and
tests/drafter/test_drafter_config.py's vLLM comparison are slow for the same import. The values
expected here were seen with that parser; what holds them to it is the pinned vLLM, which the
whole run checks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from j0.errors import USAGE, J0Error
from j0.serve import vllm_args
from j0.serve.vllm_options import TABLE
from serve.vllm_parser import FAILED, vllm_parser

# One worker for the modules that build vLLM's parser (tests/serve/vllm_parser.py: torch and
# vLLM's engine arguments imported, about 10 s of CPU in each process that builds it), so that
# it is built once per run, not once in every worker that draws one of these tests.
pytestmark = pytest.mark.xdist_group("vllm-parser")

A = '{"method":"dflash","model":"/d","num_speculative_tokens":15}'
A_VALUE = {"method": "dflash", "model": "/d", "num_speculative_tokens": 15}

# (ARGS, attribute, what vLLM 0.33.0 reads: seen with its parser, typed here)
BEHAVIOURS = [
    (["m", "--speculative_config", A], "speculative_config", A_VALUE),
    (["m", f"--speculative-config={A}"], "speculative_config", A_VALUE),
    (["m", "--speculative", A], "speculative_config", A_VALUE),
    (["m", "-sc", A], "speculative_config", A_VALUE),
    (
        ["m", "--speculative-config", A, "--speculative-config", '{"method":"ngram"}'],
        "speculative_config",
        {"method": "ngram"},
    ),
    # dotted keys make one object, put after everything: it replaces the whole JSON given
    (
        ["m", "--speculative-config", A, "--speculative-config.num_speculative_tokens", "3"],
        "speculative_config",
        {"num_speculative_tokens": 3},
    ),
    (
        ["m", "--speculative-config.num_speculative_tokens", "3", "--speculative-config", A],
        "speculative_config",
        {"num_speculative_tokens": 3},
    ),
    (
        [
            "m",
            "--speculative-config.method",
            "ngram",
            "--speculative_config.num_speculative_tokens=3",
        ],
        "speculative_config",
        {"method": "ngram", "num_speculative_tokens": 3},
    ),
    (["m", "--api-key", ""], "api_key", [None]),
    (["m", "--api_key=k"], "api_key", ["k"]),
    (["m", "--api-k", "z"], "api_key", ["z"]),
    (["m", "--api-key", "a", "--api-key", "b"], "api_key", ["b"]),
    (["m", "--api-key", "a", "b"], "api_key", ["a", "b"]),
    (["m", "--max_num_seqs", "8"], "max_num_seqs", 8),
    (["m", "--max-num-se", "8"], "max_num_seqs", 8),
    (["m", "--max-num-seqs=2", "--max-num-seqs", "3"], "max_num_seqs", 3),
    (["m", "--no-enable-prefix-caching"], "enable_prefix_caching", False),
    (["m", "--no_enable_prefix_caching"], "enable_prefix_caching", False),
    (["m", "--disable-prefix-caching"], "enable_prefix_caching", False),
    (["m", "--enable-prefix"], "enable_prefix_caching", True),
    (["m", "--kv_cache_dtype", "fp8"], "kv_cache_dtype", "fp8"),
    (["m"], "kv_cache_dtype", "auto"),
    (["--max-num-seqs", "2", "--model", "M"], "model", "M"),
    (["--model=M"], "model", "M"),
]
REFUSED = [
    ["m", "--spec", A],  # ambiguous: --spec-method, --spec-model, ... --speculative-config
    ["m", "--max-num-s", "8"],  # --max-num-seqs or --max-num-scheduled-tokens
    ["m", "--bogus"],
    ["m", "extra"],
    ["m", "--enable-prefix-caching=1"],
    ["m", "--api-key"],
    ["m", "--max-num-seqs", "many"],
]


# Who reads ARGS: j0's table (fast), and vLLM's own parser (slow: its import, above).
READERS = [
    pytest.param("table", id="table"),
    pytest.param("vllm-parser", id="vllm-parser", marks=pytest.mark.slow),
]


def reader(name: str) -> Callable[[list[str]], vllm_args.ServeArgs]:
    if name == "table":
        return vllm_args.read_with_table
    parser = vllm_parser()
    if parser is None:  # test_vllms_parser_was_the_reference_here fails, saying why
        pytest.skip("vLLM's parser cannot be built here")
    return lambda args: vllm_args.read_with_parser(parser, args)


def value(read: vllm_args.ServeArgs, attribute: str) -> object:
    return read.model if attribute == "model" else read.values[attribute]


@pytest.mark.parametrize("by", READERS)
@pytest.mark.parametrize(("args", "attribute", "expected"), BEHAVIOURS)
def test_each_behaviour_of_vllms_parser(
    args: list[str], attribute: str, expected: object, by: str
) -> None:
    assert value(reader(by)(list(args)), attribute) == expected


@pytest.mark.parametrize("by", READERS)
@pytest.mark.parametrize("args", REFUSED)
def test_what_vllm_refuses_is_refused(args: list[str], by: str) -> None:
    with pytest.raises(J0Error) as caught:
        reader(by)(list(args))
    assert caught.value.exit_code == USAGE


@pytest.mark.slow
def test_vllms_parser_was_the_reference_here() -> None:
    """The test environment has vLLM 0.33.0 and torch: the reference above did run."""
    assert vllm_parser() is not None, FAILED


@pytest.mark.slow
def test_the_table_is_vllms_option_list() -> None:
    """Every option string vLLM 0.33.0's parser registers, with its destination, its number of
    values and (for enable/disable flags) its sense, is the table's; and nothing else is."""
    parser = vllm_parser()
    if parser is None:
        pytest.skip("vLLM's parser cannot be built here")
    want = set()
    for string, action in parser._option_string_actions.items():
        nargs = "1" if action.nargs is None else str(action.nargs)
        line = f"{string} {action.dest} {nargs}"
        if hasattr(action, "negative_option_strings"):
            line += " off" if string in action.negative_option_strings else " on"
        want.add(line)
    have = set(TABLE.splitlines())
    assert sorted(want - have) == [] and sorted(have - want) == []


def test_a_config_file_is_refused() -> None:
    for args in (["m", "--config", "x.yaml"], ["m", "--config=x.yaml"], ["m", "--conf", "x"]):
        with pytest.raises(J0Error, match="--config"):
            vllm_args.read(args)
