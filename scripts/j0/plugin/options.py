"""J0's switches on the plugin route: the `speculator_options` of vLLM's `--speculative-config`,
read and checked. Standard library only: `j0 serve` reads them where vLLM is not importable.

    --speculative-config '{"method": "dflash_j0", "model": DRAFTER, "num_speculative_tokens": 15,
        "speculator_options": {"j0": true, "variant": "article", "seed": 20261031,
                               "dump_dir": null, "dump_steps": 0, "audit_dir": null}}'

Every key is optional (the defaults: J0 on, the article's variant, the pinned seed, no dumps, no
audit); an unknown key, a value of another type (`"j0": "1"` is not `true`), a seed outside
0..2^31-1, dump steps without a dump folder or the reverse are refused, naming the key, the value
and what was expected, so that a typo never runs the baseline silently.

The patched file reads three switches from the environment (VLLM_DFLASH_CTX_NOISE,
VLLM_DFLASH_DUMP, VLLM_DFLASH_DUMP_STEPS; the audit patch a fourth, VLLM_DFLASH_AUDIT): on the
plugin route they come from these options (`J0Options.switches`), handed to the patched code
as its own mapping; the process's environment is neither read nor written for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ARTICLE = "article"
PREFIX_SAFE = "prefix-safe"
VARIANTS = (ARTICLE, PREFIX_SAFE)
# The seed is a literal of the kernel (`tl.randint(SEED, ...)`): kept to what Triton takes as a
# 32-bit integer constant.
MAX_SEED = (1 << 31) - 1
MAX_DUMP_STEPS = 1_000_000
KEYS = ("j0", "variant", "seed", "dump_dir", "dump_steps", "audit_dir")


class OptionsError(ValueError):
    """A `speculator_options` value the plugin refuses (vLLM shows it as a config error)."""


@dataclass(frozen=True)
class J0Options:
    j0: bool
    variant: str
    seed: int
    dump_dir: str | None
    dump_steps: int
    audit_dir: str | None

    @property
    def audit(self) -> bool:
        return self.audit_dir is not None

    def switches(self) -> dict[str, str]:
        """The patched file's environment switches, as this run's values."""
        found = {
            "VLLM_DFLASH_CTX_NOISE": "1" if self.j0 else "0",
            "VLLM_DFLASH_DUMP_STEPS": str(self.dump_steps),
        }
        if self.dump_dir is not None:
            found["VLLM_DFLASH_DUMP"] = self.dump_dir
        if self.audit_dir is not None:
            found["VLLM_DFLASH_AUDIT"] = self.audit_dir
        return found

    def build_key(self) -> tuple[str, bool, int]:
        """What the J0 file depends on: the variant, the audit patch and the seed."""
        return (self.variant, self.audit, self.seed)

    def to_json(self) -> dict[str, Any]:
        return {
            "j0": self.j0,
            "variant": self.variant,
            "seed": self.seed,
            "dump_dir": self.dump_dir,
            "dump_steps": self.dump_steps,
            "audit_dir": self.audit_dir,
        }


def _kind(key: str, value: Any, want: type, words: str) -> Any:
    # bool is an int to Python: a whole number is never true/false, nor true/false a number.
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise OptionsError(
            f"speculator_options.{key}={value!r}: expected {words}, got {type(value).__name__}"
        )
    return value


def _folder(key: str, value: Any) -> str | None:
    if value is None:
        return None
    text = _kind(key, value, str, "a folder (a string) or null")
    if not text or any(not c.isprintable() for c in text):
        raise OptionsError(
            f"speculator_options.{key}={value!r}: expected a folder's path, one line, not empty"
        )
    return text


def parse_options(raw: Mapping[str, Any] | None, pinned_seed: int) -> J0Options:
    """`speculator_options` checked (None: every default); OptionsError names what is wrong."""
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise OptionsError(
            f"speculator_options={raw!r}: expected a JSON object of {', '.join(KEYS)}"
        )
    unknown = sorted(str(k) for k in raw if k not in KEYS)
    if unknown:
        raise OptionsError(
            f"speculator_options: unknown key(s) {', '.join(unknown)}; the dflash_j0 method "
            f"takes {', '.join(KEYS)}"
        )
    j0 = _kind("j0", raw.get("j0", True), bool, "true (J0 on) or false (J0 off)")
    variant = _kind("variant", raw.get("variant", ARTICLE), str, "a string")
    if variant not in VARIANTS:
        raise OptionsError(
            f"speculator_options.variant={variant!r}: expected one of {', '.join(VARIANTS)}"
        )
    seed = _kind("seed", raw.get("seed", pinned_seed), int, "a whole number")
    if not 0 <= seed <= MAX_SEED:
        raise OptionsError(f"speculator_options.seed={seed}: expected 0 to {MAX_SEED}")
    dump_dir = _folder("dump_dir", raw.get("dump_dir"))
    steps = _kind("dump_steps", raw.get("dump_steps", 0), int, "a whole number")
    if not 0 <= steps <= MAX_DUMP_STEPS:
        raise OptionsError(f"speculator_options.dump_steps={steps}: expected 0 to {MAX_DUMP_STEPS}")
    if (dump_dir is None) != (steps == 0):
        raise OptionsError(
            f"speculator_options: dump_dir={dump_dir!r} with dump_steps={steps}: give both (a "
            "folder and a number of steps above 0) or neither; one alone dumps nothing"
        )
    audit_dir = _folder("audit_dir", raw.get("audit_dir"))
    if audit_dir is not None and not j0:
        raise OptionsError(
            "speculator_options: audit_dir with j0 false: the J0 audit checks J0's draws and has "
            "nothing to check with J0 off"
        )
    return J0Options(j0, variant, seed, dump_dir, steps, audit_dir)
