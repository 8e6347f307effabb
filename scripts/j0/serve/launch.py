"""The server's command line, checked before vLLM starts: what compose.yaml's server service runs.

`j0 serve -- ARGS` (the server's entrypoint in compose.yaml) reads the `vllm serve` arguments and
the J0 switches, refuses what would silently run something other than the article's setup, warns
about what the article did not test, applies the optional API key and overlay swap, says in one
block what will run, then execs the image's entrypoint (which logs the speculator.py identity and
execs `vllm serve ARGS`).

Standard library only: this runs inside the image, on the base image's python3.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS, PREFIX_CACHING_FLAGS
from j0.article.serving import (
    PREFIX_CACHING_WITH_J0,
    ServeSpec,
    read_speculative_config,
)
from j0.edge.secret_file import check_secret_text, read_secret_file
from j0.engine.server import server_log
from j0.engine.server.j0_state import OFF, ON, UNKNOWN, J0State
from j0.errors import CHECK_FAILED, INPUT_LACKS, USAGE, J0Error, read_json_file
from j0.serve import vllm_args
from j0.serve.vllm_args import ServeArgs

if TYPE_CHECKING:
    from j0.plugin.options import J0Options

# Where compose.yaml puts things inside the server container.
DEFAULT_THEN = "/usr/local/bin/j0-entrypoint"
DEFAULT_API_KEY_FILE = Path("/run/secrets/api_key")
DEFAULT_OVERLAY_MOUNT = Path("/opt/j0/speculator.py")


@dataclass
class ServePlan:
    """What will run: facts to log, warnings, and the environment for vLLM."""

    args: list[str]
    env: dict[str, str]
    facts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    api_keys: list[str] = field(default_factory=list)  # given in args: masked where shown
    plugin: J0Options | None = None  # the plugin route's switches (method dflash_j0)
    # J0 as asked (the switch, or the plugin's option) and as it will run: the one rule
    # (j0.engine.server.j0_state) once the speculator.py vLLM will import is identified
    j0: J0State | None = None
    j0_fact: int | None = None  # where in `facts` the switch's J0 line is


def _check_drafter(spec: ServeSpec, plan: ServePlan) -> None:
    from j0.engine.source import causality as drafter_causality

    drafter = str(spec.config.drafter)  # the DFlash methods' drafter folder: always given
    config_path = Path(drafter) / "config.json"
    if not config_path.is_file():
        raise J0Error(
            f"{config_path}: no such file; the drafter is fetched by compose's drafter service "
            "(`j0 drafter fetch --out DIR`)",
            INPUT_LACKS,
        )
    config = read_json_file(config_path)  # a regular file under its limit, JSON, bounded
    if not isinstance(config, dict) or not isinstance(config.get("dflash_config"), dict):
        raise J0Error(f"{config_path}: no dflash_config object", INPUT_LACKS)
    try:
        causality = drafter_causality.resolve(config)
    except ValueError as exc:
        raise J0Error(f"{config_path}: {exc}", INPUT_LACKS) from exc
    if not causality.all_causal:
        raise J0Error(
            f"{config_path}: {causality.summary()}; expected dflash_config.causal true "
            f"(run `j0 drafter patch-config {drafter}`)",
            CHECK_FAILED,
        )
    plan.facts.append(f"drafter {drafter}: {causality.summary()}")


def _check_switches(env: MutableMapping[str, str], plan: ServePlan) -> None:
    noise = env.get("VLLM_DFLASH_CTX_NOISE", "0")
    if noise not in ("0", "1"):
        raise J0Error(
            f"VLLM_DFLASH_CTX_NOISE={noise!r}: expected 1 (J0 on) or 0 (the baseline); the patched "
            "speculator.py treats anything but '1' as off",
            USAGE,
        )
    asked = ON if noise == "1" else OFF
    why = f"VLLM_DFLASH_CTX_NOISE={noise}; the speculator.py vLLM will import is not identified yet"
    plan.j0, plan.j0_fact = J0State(asked, UNKNOWN, why, seen=False), len(plan.facts)
    plan.facts.append(
        f"VLLM_DFLASH_CTX_NOISE={noise}: " + ("J0 on" if asked == ON else "J0 off (baseline)")
    )
    steps_raw = env.get("VLLM_DFLASH_DUMP_STEPS", "") or "0"
    if "VLLM_DFLASH_DUMP_STEPS" in env:
        env["VLLM_DFLASH_DUMP_STEPS"] = steps_raw  # the patched file's int("") would fail
    try:
        steps = int(steps_raw)
    except ValueError:
        steps = -1
    if steps < 0:
        raise J0Error(
            f"VLLM_DFLASH_DUMP_STEPS={steps_raw!r}: expected a number of steps, 0 or more", USAGE
        )
    dump_dir = env.get("VLLM_DFLASH_DUMP", "")
    if dump_dir and steps > 0:
        plan.facts.append(
            f"dumps: the first {steps} single-request draft steps to {dump_dir}/stepNNNN.pt "
            "(copies to the CPU and synchronises: not for timing)"
        )
        try:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise J0Error(f"VLLM_DFLASH_DUMP={dump_dir}: cannot create it: {exc}", USAGE) from exc
        if not os.access(dump_dir, os.W_OK):
            raise J0Error(f"VLLM_DFLASH_DUMP={dump_dir}: not writable", USAGE)
    elif dump_dir:
        plan.warnings.append(
            f"VLLM_DFLASH_DUMP={dump_dir} but VLLM_DFLASH_DUMP_STEPS={steps}: nothing is dumped"
        )
    elif steps > 0:
        plan.warnings.append(
            f"VLLM_DFLASH_DUMP_STEPS={steps} but VLLM_DFLASH_DUMP is empty: nothing is dumped"
        )
    else:
        plan.facts.append("dumps: off")


# The image route's switches, which the plugin route does not read (its own are
# speculator_options): set there, they would look like J0's state and are not.
IMAGE_ROUTE_SWITCHES = ("VLLM_DFLASH_CTX_NOISE", "VLLM_DFLASH_DUMP", "VLLM_DFLASH_DUMP_STEPS")


def _plugin_switches(spec: ServeSpec, plan: ServePlan) -> None:
    """The plugin route (method dflash_j0): J0's switches are its speculator_options."""
    options = plan.plugin = spec.plugin
    assert options is not None
    state = "J0 on" if options.j0 else "J0 off (baseline)"
    why = f"speculator_options j0={str(options.j0).lower()}: the plugin's `j0-plugin:` line says"
    plan.j0 = J0State(ON if options.j0 else OFF, UNKNOWN, why, seen=False)
    plan.facts.append(
        f"plugin route: method dflash_j0, {state}, variant {options.variant}, seed "
        f"{options.seed}" + (", the J0 audit (a test instrument)" if options.audit else "")
    )
    for name in IMAGE_ROUTE_SWITCHES:
        if plan.env.get(name):
            plan.warnings.append(
                f"{name}={plan.env[name]} is not read on the plugin route (method dflash_j0): "
                "J0's switches are its speculator_options"
            )
    if options.dump_dir is not None:
        plan.facts.append(
            f"dumps: the first {options.dump_steps} single-request draft steps to "
            f"{options.dump_dir}/stepNNNN.pt (copies to the CPU and synchronises: not for timing)"
        )
    else:
        plan.facts.append("dumps: off")


def _apply_prefix_caching(plan: ServePlan, read: ServeArgs, spec: ServeSpec | None = None) -> None:
    """ENABLE_PREFIX_CACHING (1, 0 or empty) to vLLM's flag; warn when J0 runs with caching on.
    Whether ARGS set it is as vLLM reads them (any spelling vLLM takes)."""
    knob = plan.env.get("ENABLE_PREFIX_CACHING", "").strip()
    if knob not in ("", "0", "1"):
        raise J0Error(
            f"ENABLE_PREFIX_CACHING={knob!r}: expected 1 (on), 0 (off) or empty (vLLM's "
            "default: on)",
            USAGE,
        )
    given = read.values.get("enable_prefix_caching")
    flag_of = {True: PREFIX_CACHING_FLAGS[0], False: PREFIX_CACHING_FLAGS[1]}
    if knob and given is not None:
        raise J0Error(
            f"ENABLE_PREFIX_CACHING={knob} and {flag_of[bool(given)]} in the arguments: say it "
            "once",
            USAGE,
        )
    if knob:
        given = knob == "1"
        plan.args.append(flag_of[given])
    on = given is None or bool(given)
    how = flag_of[bool(given)] if given is not None else "vLLM's default"
    plan.facts.append(f"prefix caching: {'on' if on else 'off'} ({how})")
    if on and plan.j0 is not None and plan.j0.asked == ON:
        if spec is not None and spec.plugin is not None and spec.plugin.variant != "article":
            plan.facts.append(
                "prefix caching with J0 on: safe with the prefix-safe variant (it fills a "
                "request's cached positions from its own tokens)"
            )
        else:
            plan.warnings.append(PREFIX_CACHING_WITH_J0)


def _apply_api_key(api_key_file: Path | None, plan: ServePlan, read: ServeArgs) -> None:
    """The key of --api-key-file, else of compose's secret where one is mounted, as VLLM_API_KEY.

    A file that is given (or mounted) but is not one line of text stops here, exit 2, before
    vLLM starts: a server must never come up open because its key could not be read. /dev/null
    (compose's secret with API_KEY_FILE unset) is "no key". An `--api-key` in ARGS (any spelling
    vLLM takes) is vLLM's key; an empty one is refused: vLLM drops empty keys, and with no other
    it would serve /v1 without authentication while j0 said a key was given."""
    keys = read.api_key
    if keys is not None:
        if not keys or any(not key for key in keys):
            raise J0Error(
                "--api-key holds an empty key: vLLM drops empty keys and would serve /v1 with "
                "no authentication; give the key (or API_KEY_FILE / --api-key-file), or no "
                "--api-key",
                USAGE,
            )
        plan.api_keys = [key for key in keys if key]
        plan.facts.append(
            "API key: from --api-key" + (f" ({len(keys)} keys)" if len(keys) > 1 else "")
        )
        return
    path = api_key_file
    if path is None and os.path.lexists(DEFAULT_API_KEY_FILE):
        path = DEFAULT_API_KEY_FILE
    key = read_secret_file(path, "API key file") if path is not None else None
    if key is None:
        _no_api_key(plan, read, compose=path == DEFAULT_API_KEY_FILE)
        return
    # vLLM reads VLLM_API_KEY like --api-key; an environment variable stays out of `ps`.
    plan.env["VLLM_API_KEY"] = key
    plan.facts.append(f"API key: required on /v1 (read from {path})")


def _no_api_key(plan: ServePlan, read: ServeArgs, compose: bool) -> None:
    """No key: /v1 answers whoever reaches the server. In compose (its api_key secret mounted)
    the port is published on the host's 127.0.0.1 only; elsewhere vLLM listens where --host says,
    every interface without one."""
    if compose:
        plan.facts.append("API key: none (compose publishes the port on 127.0.0.1 only)")
        return
    host = read.values.get("host")
    where = (
        f"vLLM listens on {host} (--host)"
        if host
        else "vLLM listens on every interface (no --host: vLLM's default; --host 127.0.0.1 keeps "
        "it to this machine)"
    )
    plan.facts.append(f"API key: none: /v1 answers whoever reaches the server; {where}")


def _apply_hf_token(plan: ServePlan) -> None:
    """Say whether a Hugging Face token is given, never what it is; refuse a token file that
    huggingface_hub in vLLM could not use (the rule of j0.edge.secret_file).

    compose.yaml mounts the token secret at $HF_HOME/token, where huggingface_hub looks by default
    (/dev/null there with HF_TOKEN_FILE unset: no token). An empty HF_TOKEN_PATH value is dropped
    (huggingface_hub fails on it); one naming /dev/null is dropped too.
    """
    if "HF_TOKEN" in plan.env:
        if plan.env["HF_TOKEN"].strip():
            check_secret_text(plan.env["HF_TOKEN"], "HF_TOKEN")
        plan.warnings.append(
            "HF_TOKEN is set in the environment (deploy/k8s passes it so, from the optional "
            "secret j0-hf-token); compose passes the token as a secret file (HF_TOKEN_FILE)"
        )
    token_path = plan.env.get("HF_TOKEN_PATH")
    if token_path:
        path = Path(token_path).expanduser()
        if read_secret_file(path, "HF_TOKEN_PATH") is None:
            del plan.env["HF_TOKEN_PATH"]
            plan.facts.append(f"Hugging Face token: none (HF_TOKEN_PATH={token_path})")
        else:
            plan.facts.append(f"Hugging Face token: from {path} (HF_TOKEN_PATH)")
        return
    if token_path is not None:
        del plan.env["HF_TOKEN_PATH"]
    home = plan.env.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    path = Path(home).expanduser() / "token"
    if os.path.lexists(path) and read_secret_file(path, "Hugging Face token file") is not None:
        plan.facts.append(f"Hugging Face token: from {path}")
    else:
        plan.facts.append("Hugging Face token: none (HF_TOKEN_FILE unset)")


def apply_overlay_swap(mount: Path, installed: Path, plan: ServePlan) -> None:
    """Make vLLM import the bind-mounted file at `mount`, if one is mounted there.

    Where the image links `mount` to the installed file, the bind mount already lands on it and
    nothing is left to do. Otherwise the installed file (in this container's own layer) becomes a
    link to the mounted one, and its stale bytecode goes.
    """
    if not mount.is_file() or mount.stat().st_size == 0:
        return
    if installed.resolve() == mount.resolve():
        plan.facts.append(f"overlay swap: {mount} is mounted over {installed}")
        return
    if os.path.samefile(installed, mount):
        plan.facts.append(f"overlay swap: {installed} is the mounted {mount}")
        return
    cache = installed.parent / "__pycache__"
    for stale in cache.glob(f"{installed.stem}.*.pyc"):
        stale.unlink(missing_ok=True)
    link = installed.with_name(f".{installed.name}.j0-swap")
    link.unlink(missing_ok=True)
    link.symlink_to(mount)
    os.replace(link, installed)
    plan.facts.append(f"overlay swap: {installed} -> {mount} (read-only bind mount)")


# The knobs compose passes to the server that reach its log (compose.serve.yaml's environment).
LOGGED_KNOBS = (
    "VLLM_DFLASH_CTX_NOISE",
    "ENABLE_PREFIX_CACHING",
    "VLLM_DFLASH_DUMP",
    "VLLM_DFLASH_DUMP_STEPS",
    "HF_HOME",
    "HF_ENDPOINT",
    "HF_HUB_OFFLINE",
    "HF_TOKEN_PATH",
)


def refuse_log_forgery(args: Sequence[str], env: Mapping[str, str]) -> None:
    """Refuse an argument or knob that holds a line break or a marker of the server log's grammar
    (j0.engine.server.server_log): written into the log by `j0 serve` or vLLM, it could pose as a
    line that `j0 status` believes. The value itself is not repeated in the message."""
    for number, arg in enumerate(args, start=1):
        if (what := server_log.forged_marker(arg)) is not None:
            before = args[number - 2] if number > 1 else ""
            after = f", the value of {before}" if before.startswith("-") else ""
            raise J0Error(
                f"`vllm serve` argument {number}{after} holds {what}: refused, it would forge "
                "a line of the server's log (which `j0 status` reads)",
                USAGE,
            )
    for knob in LOGGED_KNOBS:
        if (what := server_log.forged_marker(env.get(knob, ""))) is not None:
            raise J0Error(
                f"{knob} holds {what}: refused, it would forge a line of the server's log "
                "(which `j0 status` reads)",
                USAGE,
            )


def plan_serve(
    args: Sequence[str],
    env: Mapping[str, str],
    api_key_file: Path | None = None,
) -> ServePlan:
    """Check the `vllm serve` arguments and switches; return what will run."""
    plan = ServePlan(args=list(args), env=dict(env))
    refuse_log_forgery(plan.args, plan.env)
    read = vllm_args.read(plan.args)
    model = read.model
    if not model:
        raise J0Error("no target model: the first argument must be the model (TARGET_MODEL)", USAGE)
    config = read.speculative_config
    if config is None:
        raise J0Error(
            "no --speculative-config: the article's run drafts with the JetSpec++ drafter", USAGE
        )
    # What vLLM will run, whatever the spelling (dotted keys, prefixes, the last value): logged
    # as such, so that the log's config is the one that runs.
    raw = json.dumps(config, separators=(",", ":"))
    spec = read_speculative_config(config, raw, read.values.get("kv_cache_dtype"))
    plan.facts.append(f"target {model}")
    plan.facts.append(f"--speculative-config {raw}")
    plan.facts.append(f"arguments read by {read.reader}")
    plan.warnings.extend(
        f"{name} is given {times} times: vLLM takes the last"
        for name, times in read.given.items()
        if times > 1 and name in vllm_args.JUDGED
    )
    plan.facts.extend(f"note: {note}" for note in spec.notes)
    # The article's rule and the request slots, judged on the server these arguments start
    # (ServerSetting.problems, the words j0 status's checks share); the arguments pass as given.
    setting = read.setting(spec.config)
    plan.warnings.extend(p.serve for p in setting.problems() if p.serve is not None)
    if setting.max_num_seqs == ARTICLE_MAX_NUM_SEQS:
        plan.facts.append(f"--max-num-seqs {setting.max_num_seqs}")
    _check_drafter(spec, plan)
    if spec.plugin is None:
        _check_switches(plan.env, plan)
    else:
        _plugin_switches(spec, plan)
    _apply_prefix_caching(plan, read, spec)
    _apply_api_key(api_key_file, plan, read)
    _apply_hf_token(plan)
    if plan.env.get("HF_ENDPOINT") == "":
        # Empty means the Hub (an uncommented `HF_ENDPOINT=`); huggingface_hub in vLLM would
        # take "" as the Hub's address.
        del plan.env["HF_ENDPOINT"]
        plan.facts.append("HF_ENDPOINT is empty: the Hub (https://huggingface.co)")
    return plan


def confirm_j0(plan: ServePlan, path: Path, kind: str) -> None:
    """Say what VLLM_DFLASH_CTX_NOISE=1 really runs, by the one rule (j0.engine.server.j0_state) for
    the file vLLM will import (`kind`, its identity): J0 needs the article's (patched) file or
    its prefix-safe variant, which log the switch as asked. With vLLM's unpatched file the switch
    does nothing and the baseline runs; say so rather than "J0 on" above an identity line that
    says base."""
    from dataclasses import replace

    from j0.article.identity import PREFIX_SAFE
    from j0.article.serving import PREFIX_CACHING_WITH_J0
    from j0.engine.server.j0_state import j0_of

    if plan.j0 is None or plan.j0.asked != ON or plan.j0_fact is None:
        return
    plan.j0 = replace(j0_of(kind, ON, str(path)).asking(True), seen=False)  # not run yet
    at, ran = plan.j0_fact, plan.j0.ran
    noise_on = "VLLM_DFLASH_CTX_NOISE=1: J0 on"
    if ran == ON and server_log.role_of(kind) == PREFIX_SAFE:
        plan.facts[at] = (
            f"{noise_on} ({path} is the prefix-safe variant of the article's J0 file, "
            "identity=prefix-safe: J0 reads each request's own tokens under prefix caching)"
        )
        # The warning about prefix caching concerns the article's file, not this one.
        if PREFIX_CACHING_WITH_J0 in plan.warnings:
            plan.warnings.remove(PREFIX_CACHING_WITH_J0)
            plan.facts.append(
                "prefix caching with J0 on: safe with this file (the prefix-safe variant fills "
                "a request's cached positions from its own tokens)"
            )
    elif ran == ON:
        plan.facts[at] = f"{noise_on} ({path} is the article's J0 file)"
    elif ran == OFF:
        plan.facts[at] = (
            f"VLLM_DFLASH_CTX_NOISE=1, but J0 is absent: {path} is vLLM's unpatched "
            "speculator.py (identity=base), which ignores the switch: this runs the baseline"
        )
        plan.warnings.append(
            f"J0 was asked for (VLLM_DFLASH_CTX_NOISE=1), but {path} is vLLM's unpatched file: "
            "the baseline runs (build the image, or J0_OVERLAY= the article's file)"
        )
        # No J0 runs, so prefix caching takes nothing from it.
        if PREFIX_CACHING_WITH_J0 in plan.warnings:
            plan.warnings.remove(PREFIX_CACHING_WITH_J0)
    else:
        plan.facts[at] = (
            f"VLLM_DFLASH_CTX_NOISE=1: J0 on only if {path} implements it (identity=other: "
            "not the article's file; `j0 overlay verify` and `j0 selfcheck` tell)"
        )


def unknown_j0(plan: ServePlan) -> None:
    """VLLM_DFLASH_CTX_NOISE=1 where the speculator.py vLLM will import cannot be identified: J0
    was asked for, whether it runs is not known here."""
    if plan.j0 is None or plan.j0.asked != ON or plan.j0_fact is None:
        return
    plan.facts[plan.j0_fact] = (
        "VLLM_DFLASH_CTX_NOISE=1: J0 asked for; whether it runs is not known here (no "
        "speculator.py to identify): the entrypoint's identity line says which file runs"
    )


def plugin_running(plan: ServePlan) -> None:
    """The plugin route: this Python's vLLM one the plugin was proven on (else vLLM would refuse
    method dflash_j0: refused here first, naming what is supported), the plugin installed for it
    (its entry point), and the J0 file it will make said; no vLLM here: the plugin's line will."""
    import importlib.metadata

    from j0.errors import UNAVAILABLE
    from j0.plugin.proven import check, installed, plugin_pins

    pins = plugin_pins()
    found = installed(pins.speculator_relpath)
    if found.speculator is None:
        plan.facts.append("vLLM: not importable here; the plugin's `j0-plugin:` line will say")
        return
    verdict = check(pins, found)
    if verdict.release is None:
        raise J0Error(f"method dflash_j0: {verdict.reason}", INPUT_LACKS)
    plugins = importlib.metadata.entry_points(group="vllm.general_plugins")
    if not any(e.value == "j0.plugin.register:register" for e in plugins):
        raise J0Error(
            "method dflash_j0: j0's vLLM plugin is not installed for this Python (no entry point "
            "j0.plugin.register:register in vllm.general_plugins): pip install --no-deps "
            "'j0[plugin]' into vLLM's environment (docs/plugin.md)",
            UNAVAILABLE,
        )
    plan.facts.append(
        f"plugin route: vLLM {found.version} at {found.speculator} is proven "
        f"(sha256 {found.sha256}); the plugin runs its {plan.plugin.variant if plan.plugin else ''}"
        " J0 file, made in memory from it (no file of vLLM's changed)"
    )


def identify_running(plan: ServePlan) -> None:
    """Identify the speculator.py that vLLM will import (after any overlay swap) and adjust the
    J0 fact to it; where no vLLM is found, say that the entrypoint's identity line will tell."""
    if plan.plugin is not None:
        plugin_running(plan)
        return
    from j0.article.identity import identify
    from j0.engine.source.base_sources import installed_speculator
    from j0.pins import load_pins

    try:
        pins = load_pins()
        path = installed_speculator(pins)
        kind = identify(path.read_bytes(), pins).kind
    except (J0Error, OSError) as exc:
        plan.facts.append(f"speculator.py: cannot identify it here ({exc})")
        unknown_j0(plan)
        return
    confirm_j0(plan, path, kind)


def drop_own_pythonpath(env: MutableMapping[str, str]) -> None:
    """Remove the folder holding this `j0` package from PYTHONPATH (the image's `j0` launcher puts
    it there for itself), so that vLLM runs with the environment the image gave it."""
    own = str(Path(__file__).resolve().parents[2])
    entries = [x for x in env.get("PYTHONPATH", "").split(os.pathsep) if x]
    kept = [x for x in entries if os.path.abspath(x) != own]
    if kept == entries:
        return
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del env["PYTHONPATH"]


def claim_dumps(plan: ServePlan, force: bool, dry_run: bool) -> None:
    """The dump folder new or empty (j0.serve.dump_folder), where steps are dumped."""
    from j0.serve.dump_folder import claim_dump_folder

    if plan.plugin is not None:
        if plan.plugin.dump_dir is not None:
            plan.facts.extend(claim_dump_folder(Path(plan.plugin.dump_dir), force, dry_run))
        return
    folder = plan.env.get("VLLM_DFLASH_DUMP", "")
    if folder and plan.env.get("VLLM_DFLASH_DUMP_STEPS", "0") != "0":
        plan.facts.extend(claim_dump_folder(Path(folder), force, dry_run))
