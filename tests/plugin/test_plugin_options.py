"""J0's `speculator_options` on the plugin route (j0.plugin.options): the defaults, what each key
takes, and a clear refusal of everything else (never the baseline by a typo)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from j0.plugin.options import KEYS, MAX_SEED, J0Options, OptionsError, parse_options

PINNED = 20261031


def test_no_options_is_the_article_with_j0_on() -> None:
    assert parse_options(None, PINNED) == J0Options(True, "article", PINNED, None, 0, None)
    assert parse_options({}, PINNED).switches() == {
        "VLLM_DFLASH_CTX_NOISE": "1",
        "VLLM_DFLASH_DUMP_STEPS": "0",
    }


def test_every_option_reaches_the_switches() -> None:
    options = parse_options(
        {
            "j0": True,
            "variant": "prefix-safe",
            "seed": 7,
            "dump_dir": "/dumps",
            "dump_steps": 9,
            "audit_dir": "/audit",
        },
        PINNED,
    )
    assert options.build_key() == ("prefix-safe", True, 7)
    assert options.switches() == {
        "VLLM_DFLASH_CTX_NOISE": "1",
        "VLLM_DFLASH_DUMP": "/dumps",
        "VLLM_DFLASH_DUMP_STEPS": "9",
        "VLLM_DFLASH_AUDIT": "/audit",
    }
    assert parse_options({"j0": False}, PINNED).switches()["VLLM_DFLASH_CTX_NOISE"] == "0"


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"j0": "1"}, "speculator_options.j0='1': expected true (J0 on) or false (J0 off)"),
        ({"j0": 1}, "speculator_options.j0=1"),
        ({"variant": "prefix_safe"}, "variant='prefix_safe': expected one of article, prefix-safe"),
        ({"seed": -1}, f"seed=-1: expected 0 to {MAX_SEED}"),
        ({"seed": True}, "seed=True: expected a whole number, got bool"),
        ({"seed": 1.5}, "seed=1.5: expected a whole number, got float"),
        ({"dump_dir": "/d"}, "give both"),
        ({"dump_steps": 4}, "give both"),
        ({"dump_dir": "", "dump_steps": 4}, "dump_dir='': expected a folder's path"),
        ({"dump_dir": "a\nb", "dump_steps": 4}, "one line"),
        ({"audit_dir": "/a", "j0": False}, "nothing to check with J0 off"),
        ({"ctx_noise": 1}, "unknown key(s) ctx_noise; the dflash_j0 method takes j0, variant"),
        (["j0"], "expected a JSON object"),
    ],
)
def test_refused_naming_the_key_and_the_value(raw: object, named: str) -> None:
    with pytest.raises(OptionsError) as caught:
        parse_options(raw, PINNED)  # type: ignore[arg-type]
    assert named in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what vLLM's config check reports as an error


@given(st.dictionaries(st.text(min_size=1), st.none(), min_size=1))
def test_any_unknown_key_is_refused(raw: dict[str, None]) -> None:
    if set(raw) <= set(KEYS):
        return
    with pytest.raises(OptionsError, match="unknown key"):
        parse_options(raw, PINNED)
