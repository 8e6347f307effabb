"""`python3 -m j0.article.server_flags ...`: a vLLM server's flags, printed from ServerSetting for
the GPU scripts (scripts/engine-scenarios-h200.sh, prefix-safe-h200.sh, plugin-scenarios-gpu.sh),
so that they do not write vLLM's command line themselves.

The options name the setting (the speculative config: --drafter, --tokens, --method, --option
KEY=VALUE for the plugin's speculator_options; the server: --port, --prefix-caching on|off,
--eager, ...); the output is `vllm serve`'s arguments after the model, one word a line (a script
reads them with `mapfile -t`), or with --spec-only the speculative config alone.

Standard library only: the scripts run it on the GPU machine's python3.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS, ServerSetting
from j0.article.spec_config import ARTICLE_METHODS, DFLASH, DRAFT_KV_CACHE_DTYPE, SpecConfig
from j0.errors import J0Error, parse_json

USAGE_EXIT = 64
# The options whose value is the ServerSetting field of the same name.
SAME_NAMED = (
    "max_model_len",
    "gpu_memory_utilization",
    "port",
    "max_num_seqs",
    "kv_cache_dtype",
    "host",
    "max_num_batched_tokens",
    "kv_cache_memory_bytes",
    "num_gpu_blocks_override",
    "eager",
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m j0.article.server_flags",
        description="A vLLM server's flags (after the model), one word a line.",
    )
    p.add_argument("--drafter", default="DRAFT", help="the drafter's folder (default DRAFT)")
    p.add_argument("--tokens", type=int, help="draft tokens; without it no speculative config")
    p.add_argument("--method", choices=ARTICLE_METHODS, default=DFLASH)
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a speculator_options entry (method dflash_j0); VALUE read as JSON, else text",
    )
    p.add_argument("--spec-only", action="store_true", help="print the speculative config only")
    p.add_argument("--max-num-seqs", type=int, default=ARTICLE_MAX_NUM_SEQS)
    p.add_argument("--max-model-len")
    p.add_argument("--kv-cache-dtype")
    p.add_argument("--gpu-memory-utilization")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--prefix-caching", choices=("on", "off"))
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--kv-cache-memory-bytes", type=int)
    p.add_argument("--num-gpu-blocks-override", type=int)
    p.add_argument("--served-model-name")
    p.add_argument("--eager", action="store_true", help="--enforce-eager (no CUDA graphs)")
    p.add_argument(
        "--no-spec-metrics",
        action="store_true",
        help="without --per-request-spec-decode-metrics detailed",
    )
    return p


def option_value(text: str) -> Any:
    """A --option's VALUE: JSON where it reads as JSON (true, 7), else the text (a folder)."""
    try:
        return parse_json(text, "--option")
    except J0Error:
        return text


def setting_of(args: argparse.Namespace) -> ServerSetting:
    options = None
    if args.option:
        pairs = [entry.partition("=") for entry in args.option]
        if any(not key or not eq for key, eq, _ in pairs):
            raise ValueError(f"--option {args.option}: expected KEY=VALUE")
        options = {key: option_value(value) for key, _, value in pairs}
    spec = None
    if args.tokens is not None:
        spec = SpecConfig(args.method, args.tokens, args.drafter, DRAFT_KV_CACHE_DTYPE, options)
    served = args.served_model_name
    return ServerSetting(
        model="",
        spec=spec,
        # the options of the same name as the setting's fields, as given
        **{name: getattr(args, name) for name in SAME_NAMED},
        prefix_caching=None if args.prefix_caching is None else args.prefix_caching == "on",
        extra_args=() if served is None else ("--served-model-name", served),
        spec_metrics=not args.no_spec_metrics,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        setting = setting_of(args)
    except ValueError as exc:  # a draft-token count below 1, an --option without '='
        print(f"j0.article.server_flags: {exc}", file=sys.stderr)
        return USAGE_EXIT
    if args.spec_only:
        if setting.spec is None:
            print("j0.article.server_flags: --spec-only needs --tokens", file=sys.stderr)
            return USAGE_EXIT
        print(setting.spec.to_json())
        return 0
    print("\n".join(setting.args()[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
