"""`vllm serve`'s arguments read as vLLM 0.33 reads them, for `j0 serve`'s checks: what vLLM will
run, not what an argument is spelled like.

vLLM's parser (vllm.utils.argparse_utils.FlexibleArgumentParser, an argparse parser) takes more
than the exact dashed names: underscores for dashes (`--max_num_seqs`), any unambiguous prefix
(`--speculative`), `--name=value`, dotted sub-keys of a JSON argument merged into one object and
put after every other argument (`--speculative-config.num_speculative_tokens 3` replaces a whole
`--speculative-config {...}` given before it), `--model NAME` for the first argument, an empty
`--api-key ""` read as no key; and the last value given wins.

`read(args)` calls vLLM's own parser where vLLM is installed and a GPU is visible (in the image);
elsewhere it reads ARGS with our table of vLLM 0.33.0's option strings (j0.serve.vllm_options),
by the same rules, and says why. vLLM 0.33 infers its device while building the parser: where no
GPU shows (no /dev/nvidia<N>: outside a GPU container, or a machine where scripts/selfcheck-setup
installed vLLM's module alone) it fails there, after importing torch (seconds), so it is not
tried; `VLLM_TARGET_DEVICE` set, or vLLM's CPU build, is tried all the same.
Either way, what cannot be read is refused (exit 2), as vLLM would refuse it; a `--config FILE` is
refused (its options would escape the checks). `J0_SERVE_ARGS_READER=table` reads with the table
even where vLLM is importable (building vLLM's parser imports torch: seconds, which the test
suite does not spend on every `j0 serve`). Standard library only (vLLM's parser is imported
only where it is installed).
"""

from __future__ import annotations

import contextlib
import glob
import importlib.metadata
import importlib.util
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from j0.article.server_setting import ServerSetting
from j0.article.spec_config import SpecConfig
from j0.errors import USAGE, J0Error, JsonNestedTooDeep, parse_json

VLLM_PARSER = "vLLM's own parser"
OUR_TABLE = "j0's table of vLLM 0.33.0's options"
# What `j0 serve` judges: the attributes it reads from the parsed arguments.
JUDGED = (
    "host",
    "speculative_config",
    "api_key",
    "max_num_seqs",
    "kv_cache_dtype",
    "enable_prefix_caching",
)
_MODEL = re.compile(r"^--model(=.+|$)")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True)
class ServeArgs:
    """What vLLM will take from ARGS."""

    model: str | None
    values: dict[str, Any]  # JUDGED attribute -> its value as vLLM's parser leaves it (None: unset)
    reader: str  # VLLM_PARSER, or OUR_TABLE and why the table
    given: dict[str, int] = field(default_factory=dict)  # attribute -> times given (our table)

    @property
    def speculative_config(self) -> dict[str, Any] | None:
        return self.values.get("speculative_config")

    @property
    def api_key(self) -> list[str | None] | None:
        return self.values.get("api_key")

    def judged(self) -> dict[str, Any]:
        return {"model": self.model, **{k: self.values.get(k) for k in JUDGED}}

    def setting(self, spec: SpecConfig) -> ServerSetting:
        """The server these arguments start, as vLLM reads them (any spelling it takes), for
        `j0 serve` to judge (ServerSetting.problems); `spec` the speculative config as `j0 serve`
        took it. The arguments themselves go to vLLM as given, never rewritten from this value.
        What `j0 serve` does not judge is left out (None: not read here)."""
        caching = self.values.get("enable_prefix_caching")
        return ServerSetting(
            model=self.model or "",
            spec=spec,
            max_model_len=None,
            gpu_memory_utilization=None,
            port=None,
            max_num_seqs=self.values.get("max_num_seqs"),
            kv_cache_dtype=self.values.get("kv_cache_dtype"),
            host=self.values.get("host"),
            prefix_caching=None if caching is None else bool(caching),
        )


def read(args: Sequence[str]) -> ServeArgs:
    """ARGS as vLLM reads them: by vLLM's own parser where it can be built, else by our table."""
    args = list(args)
    if any(_is_config_option(a) for a in args):
        raise J0Error(
            "--config: j0 serve judges the arguments on its command line; give the options there "
            "(a config file's would escape the checks)",
            USAGE,
        )
    parser, why = _vllm_parser()
    if parser is None:
        return read_with_table(args, why)
    found = read_with_parser(parser, args)
    refuse_disagreement(found, args)
    return found


def refuse_disagreement(found: ServeArgs, args: list[str]) -> None:
    """Where vLLM's parser read ARGS, our table's reading of the speculative config and the API
    key must be the same: `j0 serve`'s log and j0's other readers (the status, the bench) follow
    our rules; a difference is refused, naming both (vLLM's reading runs)."""
    try:
        ours = read_with_table(args)
    except J0Error:
        return  # an option our table does not know: vLLM's reading stands alone
    for name in ("speculative_config", "api_key"):
        if ours.values.get(name) != found.values.get(name):
            shown = "set" if name == "api_key" else json.dumps(found.values.get(name))
            mine = "set" if name == "api_key" else json.dumps(ours.values.get(name))
            if name == "api_key":
                shown = f"{len(found.api_key or [])} key(s)"
                mine = f"{len(ours.api_key or [])} key(s)"
            raise J0Error(
                f"{name}: vLLM's parser reads {shown}, j0's table {mine}: refused, what j0 "
                "logs would not be what runs",
                USAGE,
            )


def _is_config_option(arg: str) -> bool:
    name = arg.split("=", 1)[0].replace("_", "-")
    return len(name) > 3 and name.startswith("--") and "--config".startswith(name)


def model_first(args: list[str]) -> list[str]:
    """vLLM's rule for `--model NAME` (FlexibleArgumentParser.parse_args for `vllm serve`): the
    first one is moved to the front as the positional model."""
    at = next((i for i, a in enumerate(args) if _MODEL.match(a)), None)
    if at is None:
        return args
    if args[at] == "--model":
        if at + 1 >= len(args):
            raise J0Error("--model is given without a value", USAGE)
        return [args[at + 1], *args[:at], *args[at + 2 :]]
    return [args[at].removeprefix("--model="), *args[:at], *args[at + 1 :]]


# -- vLLM's own parser -------------------------------------------------------------------------


def _vllm_parser() -> tuple[Any | None, str]:
    """vLLM's `vllm serve` parser; or None, and why not (said with the table's reading)."""
    if os.environ.get("J0_SERVE_ARGS_READER") == "table":  # tests: the table where vLLM is too
        return None, "J0_SERVE_ARGS_READER=table"
    if importlib.util.find_spec("vllm") is None:
        return None, "vLLM is not installed here"
    if not _vllm_finds_a_device():
        return None, (
            "vLLM is installed, but no GPU is visible here (no /dev/nvidia<N>), and vLLM 0.33 "
            "builds its parser only where it infers a device"
        )
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        return make_arg_parser(FlexibleArgumentParser(prog="vllm serve")), ""
    except Exception as exc:  # unusable here (a dependency missing): our table reads ARGS
        said = " ".join(str(exc).split())[:200]
        return None, f"vLLM's parser cannot be built here: {type(exc).__name__}: {said}"


def _vllm_finds_a_device() -> bool:
    """Whether vLLM can infer a device here without importing it: an NVIDIA device node, a
    VLLM_TARGET_DEVICE the user set, or vLLM's CPU build (its version says `cpu`)."""
    if glob.glob("/dev/nvidia[0-9]*") or os.environ.get("VLLM_TARGET_DEVICE"):
        return True
    try:
        return "cpu" in importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False


def read_with_parser(parser: Any, args: list[str]) -> ServeArgs:
    """ARGS read by `parser`, vLLM's own (what `vllm serve` will take from them)."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            namespace = parser.parse_args(model_first(args))
    except SystemExit:
        lines = [x for x in said.getvalue().splitlines() if x.strip()]
        why = lines[-1] if lines else "refused"
        raise J0Error(f"`vllm serve` would refuse these arguments: {why}", USAGE) from None
    except Exception as exc:  # vLLM's parser fails on it (an IndexError, a ValueError): no start
        raise J0Error(f"`vllm serve` would refuse these arguments: {exc!r}", USAGE) from None
    values = {k: getattr(namespace, k, None) for k in JUDGED}
    return ServeArgs(getattr(namespace, "model_tag", None), values, VLLM_PARSER)


# -- our table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Option:
    dest: str
    nargs: str  # "0", "1", "+", "?"
    on: bool | None  # an enable/disable flag's sense; None for others


def _table() -> dict[str, _Option]:
    from j0.serve.vllm_options import TABLE

    found = {}
    for line in TABLE.splitlines():
        string, dest, nargs, *sense = line.split()
        found[string] = _Option(dest, nargs, (sense[0] == "on") if sense else None)
    return found


def _flexible(args: list[str]) -> list[str]:
    """FlexibleArgumentParser's rewriting: underscores to dashes in a name (before any `.`),
    `-O3` / `-O 3` to `--optimization-level`, dotted sub-keys merged into one JSON object per
    argument and put at the end."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            head, dot, rest = key[2:].partition(".")
            out.append("--" + head.replace("_", "-") + dot + rest + eq + value)
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return _merge_dotted(out)


def _merge_dotted(args: list[str]) -> list[str]:
    kept: list[str] = []
    merged: dict[str, dict[str, Any]] = {}
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        name, eq, value = arg.partition("=")
        if not (arg.startswith("-") and "." in name):
            kept.append(arg)
            continue
        if not eq:
            if i + 1 >= len(args):
                raise J0Error(f"{arg} is given without a value", USAGE)
            value, skip = args[i + 1], True
        if name.endswith("+"):
            name, value = name[:-1], json.dumps(value.split(","))
        key, *keys = name.split(".")
        try:
            parsed: Any = parse_json(value, arg, USAGE)
        except JsonNestedTooDeep:
            raise
        except J0Error:  # not JSON: the text as it is (vLLM's rule for a dotted option)
            parsed = value
        for sub in reversed(keys):
            parsed = {sub: parsed}
        _update(merged.setdefault(key, {}), parsed)
    for key, value in merged.items():
        kept += [key, json.dumps(value)]
    return kept


def _update(original: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _update(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def _resolve(name: str, table: dict[str, _Option]) -> tuple[str, _Option]:
    """argparse's matching: the exact string, else the one long option it is a prefix of."""
    if name in table:
        return name, table[name]
    if name.startswith("--") and len(name) > 2:
        matches = sorted(s for s in table if s.startswith(name))
        if len(matches) == 1:
            return matches[0], table[matches[0]]
        if matches:
            raise J0Error(
                f"{name}: ambiguous, it could be {', '.join(matches[:6])}: vLLM refuses it", USAGE
            )
    raise J0Error(f"{name}: not an option of `vllm serve` (vLLM 0.33): vLLM refuses it", USAGE)


def _looks_like_option(arg: str) -> bool:
    return arg.startswith("-") and arg != "-" and not _NEGATIVE_NUMBER.match(arg)


def read_with_table(args: Sequence[str], why: str = "") -> ServeArgs:
    """ARGS read by our table, by vLLM 0.33's rules (see the module's docstring); `why` the
    table, not vLLM's parser (said in the reader's name)."""
    table = _table()
    tokens = _flexible(model_first(list(args)))
    model: str | None = None
    raw: dict[str, Any] = {}
    given: dict[str, int] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not _looks_like_option(token):
            if model is None:  # argparse: the first argument no option takes is the model
                model = token
                continue
            raise J0Error(f"{token!r}: an argument of no option: vLLM refuses it", USAGE)
        name, eq, explicit = token.partition("=")
        string, option = _resolve(name, table)
        values: list[str] = [explicit] if eq else []
        if option.nargs == "0":
            if eq:
                raise J0Error(f"{string} takes no value (given {token!r})", USAGE)
            raw[option.dest] = option.on if option.on is not None else True
        else:
            while not eq and i < len(tokens) and not _looks_like_option(tokens[i]):
                values.append(tokens[i])
                i += 1
                if option.nargs in ("1", "?"):
                    break
            if not values and option.nargs in ("1", "+"):
                raise J0Error(f"{string} is given without a value", USAGE)
            raw[option.dest] = values if option.nargs == "+" else (values[0] if values else None)
        given[option.dest] = given.get(option.dest, 0) + 1
    return ServeArgs(model, _typed(raw), f"{OUR_TABLE} ({why})" if why else OUR_TABLE, given)


def _typed(raw: dict[str, Any]) -> dict[str, Any]:
    """The judged values with vLLM's types: the speculative config a JSON object, each API key a
    string or None for an empty one (vLLM's optional_type), --max-num-seqs a number."""
    values: dict[str, Any] = {k: raw.get(k) for k in JUDGED}
    if values["kv_cache_dtype"] is None:
        values["kv_cache_dtype"] = "auto"  # vLLM 0.33's default for --kv-cache-dtype
    spec = values["speculative_config"]
    if isinstance(spec, str):
        where = f"--speculative-config {spec}"
        values["speculative_config"] = parse_json(spec, where, USAGE) if spec else None
    if values["api_key"] is not None:
        values["api_key"] = [key if key else None for key in values["api_key"]]
    seqs = values["max_num_seqs"]
    if seqs is not None:
        try:
            values["max_num_seqs"] = int(seqs)
        except ValueError:
            why = f"--max-num-seqs {seqs!r}: not a number: vLLM refuses it"
            raise J0Error(why, USAGE) from None
    return values
