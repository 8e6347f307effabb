"""The article's serving rules as `j0 serve` enforces them: a `--speculative-config` read as a
SpecConfig (j0.article.spec_config) and refused where it contradicts the article's setup
(another method, no drafter folder, a draft KV cache dtype other than "auto"), with notes for
what differs without contradicting it (ServeSpec); prefix caching with J0 on (vLLM 0.33's
default on: it lets J0 draw another request's tokens). Also reading options out of a `vllm
serve` command line, and the article image's default tag.

Standard library only: `j0 serve` runs inside the image, on the base image's python3.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from j0.article.spec_config import (
    ARTICLE_METHODS,
    DFLASH,
    DRAFT_KV_CACHE_DTYPE,
    PLUGIN,
    SpecConfig,
    kv_refusal,
)
from j0.errors import USAGE, J0Error, parse_json
from j0.pins import Pins

if TYPE_CHECKING:
    from j0.plugin.options import J0Options

PREFIX_CACHING_WITH_J0 = (
    "prefix caching is on with J0 on: J0's history is written only from scheduled tokens, so for "
    "a request whose prompt prefix comes from the cache, J0 draws the tokens of those positions "
    "from whatever its request slot's history row still holds (another request's tokens); "
    "outputs are unchanged, acceptance is not. For J0 measurements use ENABLE_PREFIX_CACHING=0 "
    "(--no-enable-prefix-caching)"
)


@dataclass(frozen=True)
class ServeSpec:
    """A `--speculative-config` as `j0 serve` takes it: the value, what differs from the article's
    form without contradicting it (said when the server starts), and on the vLLM plugin's route
    (method dflash_j0) J0's switches, its speculator_options as the plugin reads them
    (j0.plugin.options); None on the image's route (method dflash)."""

    config: SpecConfig
    notes: tuple[str, ...] = ()
    plugin: J0Options | None = None


def parse_speculative_config(raw: str, target_kv_cache_dtype: str | None = None) -> ServeSpec:
    """Parse a `--speculative-config` value; refuse what contradicts the article's setup.

    Refused: another method (or none: vLLM would guess it from the drafter's path), no drafter
    folder, a num_speculative_tokens that is not a positive integer, a draft kv_cache_dtype other
    than "auto" (or none while the target's --kv-cache-dtype is not auto: the draft would inherit
    it). Accepted with a note: keys in another order, other spacing, keys the article did not set
    (passed to vLLM as given; vLLM 0.33 refuses keys its SpeculativeConfig does not know).
    """
    where = f"--speculative-config {raw!r}"
    try:
        value = parse_json(raw, where, USAGE)  # bounded; every way json.loads refuses a text
    except J0Error as exc:
        hint = ""
        if '"num_speculative_tokens":,' in raw or '"num_speculative_tokens":}' in raw:
            hint = " (is NUM_SPEC_TOKENS empty?)"
        raise J0Error(f"{exc}{hint}", USAGE) from None
    return read_speculative_config(value, raw, target_kv_cache_dtype)


def read_speculative_config(
    value: object, raw: str, target_kv_cache_dtype: str | None = None
) -> ServeSpec:
    """parse_speculative_config's rules on a value already read from JSON (`j0 serve` has it
    as vLLM's parser left it); `raw` is its text, as messages and notes name it."""
    where = f"--speculative-config {raw!r}"
    if not isinstance(value, dict):
        raise J0Error(f"{where}: expected a JSON object", USAGE)
    method = value.get("method")
    if method not in ARTICLE_METHODS:
        what = f"method is {method!r}"
        if method is None:
            what = "no method (vLLM would guess one from the drafter's path)"
        raise J0Error(
            f"{where}: {what}, expected {DFLASH!r} (the image's J0 file) or "
            f"{PLUGIN!r} (the vLLM plugin, docs/plugin.md)",
            USAGE,
        )
    plugin = _plugin_options(where, method, value.get("speculator_options"))
    config = SpecConfig.from_dict(value, where)
    notes: list[str] = []
    kv = config.kv_cache_dtype
    if kv is None and target_kv_cache_dtype in (None, DRAFT_KV_CACHE_DTYPE):
        notes.append(
            'no "kv_cache_dtype": the draft inherits the target\'s --kv-cache-dtype auto, which '
            'is what the article\'s "kv_cache_dtype":"auto" gives'
        )
        config = replace(config, kv_cache_dtype=DRAFT_KV_CACHE_DTYPE)
    elif kv is None:
        raise J0Error(
            f'{where}: no "kv_cache_dtype": the draft would inherit the target\'s --kv-cache-dtype '
            f'{target_kv_cache_dtype}; the article sets "kv_cache_dtype":"auto", which keeps the '
            "draft's KV cache BF16 under an FP8 target",
            USAGE,
        )
    elif kv != DRAFT_KV_CACHE_DTYPE:
        raise J0Error(f"{where}: {kv_refusal(kv)}", USAGE)
    for key, val in config.extra.items():
        notes.append(
            f"--speculative-config sets {key}={json.dumps(val)}, which the article's did not "
            "(passed to vLLM as given)"
        )
    article = SpecConfig.article(str(config.drafter), config.tokens).to_json()
    if plugin is None and not notes and raw != article:
        notes.append(
            f"--speculative-config is the article's {article} in another key order or spacing"
        )
    return ServeSpec(config, tuple(notes), plugin)


def _plugin_options(where: str, method: str, raw: object) -> J0Options | None:
    """The plugin's `speculator_options` read as the plugin reads them (the same parser), or
    refused as vLLM would refuse them: DFlash itself takes none."""
    if method == DFLASH:
        if raw is not None:
            raise J0Error(
                f"{where}: speculator_options with method {DFLASH!r}: vLLM refuses them "
                f"there (only a custom method such as {PLUGIN!r} takes them)",
                USAGE,
            )
        return None
    from j0.pins import load_pins
    from j0.plugin.options import OptionsError, parse_options

    try:
        return parse_options(raw, load_pins().j0_seed)  # type: ignore[arg-type]
    except OptionsError as error:
        raise J0Error(f"{where}: {error}", USAGE) from None


def option_value(args: Sequence[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` (the last one wins, as in argparse)."""
    found: str | None = None
    for i, arg in enumerate(args):
        if arg == name:
            if i + 1 >= len(args):
                raise J0Error(f"{name} is given without a value", USAGE)
            found = args[i + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1 :]
    return found


def target_model(args: Sequence[str]) -> str | None:
    """`vllm serve`'s model: the first argument when it is not an option, else `--model`."""
    if args and not args[0].startswith("-"):
        return args[0]
    return option_value(args, "--model")


def default_image_tag(pins: Pins) -> str:
    """The tag `j0 image build` gives the article's image (compose's J0_IMAGE is its own), which
    the Kubernetes manifests name too: j0/vllm-openai:<vLLM commit[:8]>-j0."""
    return f"j0/vllm-openai:{pins.vllm_commit[:8]}-j0"
