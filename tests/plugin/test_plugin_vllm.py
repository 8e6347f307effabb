"""The plugin in real vLLM 0.34.0 on the CPU (its Python package, which scripts/test installs
apart, tests/vllm_releases.py; no GPU, Triton's interpreter): registered through vLLM's own loader
of general plugins (the entry point of the installed j0), refused on a vLLM it was not proven on,
its speculator class built from the installed speculator.py and the pinned patch, and the J0
kernel it runs checked against j0's independent reference (j0.selfcheck's batteries). Each case
runs in a process of its own: vLLM's registry and the plugin's caches are per process, as in
vLLM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from j0.pins import Pins
from j0.plugin.log_line import LINE
from vllm_releases import vllm_site as site

ROOT = Path(__file__).resolve().parents[2]
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


def run(code: str, *paths: Path, expect: int = 0) -> tuple[dict, str]:
    """Run `code` in a fresh Python with `paths` first on PYTHONPATH; its last stdout line is
    JSON. Returns that and the whole output."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT / "scripts")]),
        "CUDA_VISIBLE_DEVICES": "",
        "TRITON_INTERPRET": "1",
        "VLLM_LOGGING_LEVEL": "INFO",
    }
    # The process's objects left out of the interpreter's last garbage collections at its exit
    # (what it prints is printed by then): about 1 s of CPU less where it imported vLLM 0.34.0.
    code += "\nimport gc\ngc.freeze()\n"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == expect, output[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), output


# What the plugin logs, printed (vLLM 0.34 sets up its own handler only where it starts a server).
KEEP_LOG = """
import logging, sys
logging.getLogger("vllm.j0_plugin").addHandler(logging.StreamHandler(sys.stderr))
logging.getLogger("vllm.j0_plugin").setLevel(logging.INFO)
"""
REGISTERED = (
    KEEP_LOG
    + """
import json
from vllm.plugins import load_general_plugins
load_general_plugins()
from vllm.v1.worker.gpu.spec_decode import speculator_config as sc
from vllm.v1.worker.gpu.spec_decode.dflash.config import DFlashSpeculatorConfig
cfg = sc.get_custom_speculator_config_class("dflash_j0")
print(json.dumps({
    "methods": sc.registered_speculative_methods(),
    "config": f"{cfg.__module__}.{cfg.__qualname__}",
    "dflash": issubclass(cfg, DFlashSpeculatorConfig),
    "base_method": cfg.base_method,
    "speculator_class": cfg.speculator_class,
    "options": "speculator_options" in cfg.supported_options,
}))
"""
)


# Slow (whole run only): the process imports vLLM 0.34.0 and torch for vLLM's loader, about 5 s
# of CPU and 10-13 s of a worker in a fast-subset run (2026-12-07), as test_plugin_wheel.py's
# loading of the installed plugin is slow; the plugin's own decisions (a vLLM it was not proven on,
# a changed speculator.py: below) stay fast.
@pytest.mark.slow
def test_vllms_loader_registers_dflash_j0() -> None:
    found, output = run(REGISTERED, site())
    assert found == {
        "methods": ["dflash_j0"],
        "config": "j0.plugin.config.DFlashJ0SpeculatorConfig",
        "dflash": True,
        "base_method": "dflash",
        "speculator_class": "j0.plugin.dflash_j0.DFlashJ0Speculator",
        "options": True,
    }
    assert "j0-plugin: registered speculative method dflash_j0 for vLLM 0.34.0" in output


REGISTER = (
    KEEP_LOG
    + """
import json
from j0.plugin.register import register
print(json.dumps({"registered": register()}))
"""
)


def test_vllm_0330_is_refused_naming_what_is_supported(pins: Pins) -> None:
    """The test environment's own vLLM is 0.33.0: nothing registered, the warning says why."""
    found, output = run(REGISTER)
    assert found == {"registered": False}
    assert "j0-plugin: not registering dflash_j0: vLLM 0.33.0 with " in output
    assert f"sha256 {pins.base_sha256}: not a vLLM it was proven on" in output
    assert f"supported: vLLM 0.34.0 (commit {pins.values['V0340_COMMIT']}" in output


def test_a_changed_speculator_py_is_refused(tmp_path: Path) -> None:
    """0.34.0 whose speculator.py differs by one byte (a copy of the package, links but for that
    file): refused, with the sha256 it found."""
    copy = tmp_path / "site"
    shutil.copytree(site(), copy, copy_function=os.link)
    target = copy / SPECULATOR
    data = target.read_bytes().replace(b"BLOCK_SIZE", b"BLOCK_SIZF", 1)
    target.unlink()
    target.write_bytes(data)
    found, output = run(REGISTER, copy)
    assert found == {"registered": False}
    import hashlib

    assert f"sha256 {hashlib.sha256(data).hexdigest()}: not a vLLM it was proven on" in output


BUILT = """
import inspect, json, logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("vllm.j0_plugin").addHandler(Keep())
logging.getLogger("vllm.j0_plugin").setLevel(logging.INFO)
from j0.plugin.register import register
assert register()
from vllm.v1.worker.gpu.spec_decode.dflash.speculator import DFlashSpeculator
from j0.plugin.dflash_j0 import DFlashJ0Speculator, built_class
from j0.plugin.options import parse_options
from j0.selfcheck import batches
from j0.selfcheck.compare import run_case
PINNED = 20261031
out = {"signature": list(inspect.signature(DFlashJ0Speculator).parameters)}
for name, raw in [("article", {}), ("seed7", {"seed": 7}), ("off", {"j0": False}),
                  ("prefix-safe", {"variant": "prefix-safe"}),
                  ("audit", {"audit_dir": "/nonexistent/audit"})]:
    built = built_class(parse_options(raw, PINNED))
    module = sys.modules[vars(built)["load_draft_model"].__globals__["__name__"]]
    out[name] = {
        "subclass": issubclass(built, DFlashJ0Speculator) and issubclass(built, DFlashSpeculator),
        "environ": dict(module.os.environ),
        "ctx_pool": "ctx_pool" in inspect.signature(module.prepare_dflash_inputs).parameters,
        "line": records[-1],
    }
    if name in ("article", "seed7"):
        cases = batches.battery(11, 2)
        seed = raw.get("seed", PINNED)
        out[name]["own_seed"] = [repr(run_case(module, c, "cpu", seed)) for c in cases]
    if name == "seed7":  # (the article's own seed is the pinned one: checked above)
        out[name]["pinned_seed"] = [repr(run_case(module, c, "cpu", PINNED)) for c in cases]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_speculator_runs_the_pinned_j0_kernel(pins: Pins) -> None:
    found, _ = run(BUILT, site())
    assert found["signature"] == ["vllm_config", "device", "req_states"]
    patched = pins.values["V0340_PATCHED_SHA256"]
    for name, seed, j0 in [
        ("article", 20261031, "on"),
        ("seed7", 7, "on"),
        ("off", 20261031, "off"),
    ]:
        built = found[name]
        assert built["subclass"] and built["ctx_pool"]
        assert built["environ"] == {
            "VLLM_DFLASH_CTX_NOISE": "1" if j0 == "on" else "0",
            "VLLM_DFLASH_DUMP_STEPS": "0",
        }
        line = LINE.match(built["line"])
        assert line is not None, built["line"]
        assert (line["version"], line["commit"], line["method"]) == (
            "0.34.0",
            "62d4bc3c7",
            "dflash_j0",
        )
        assert line["path"].endswith(SPECULATOR)
        assert (line["sha"], line["kind"], line["variant"]) == (
            patched,
            "article-0.34.0",
            "article",
        )
        assert (line["j0"], line["seed"]) == (j0, str(seed))
        assert line["patches"] == pins.values["V0340_PATCH_FILE"]
        assert (line["running"] == patched) == (seed == 20261031)
    # The variant and the audit build too, each the file its pins name.
    safe = LINE.match(found["prefix-safe"]["line"])
    assert safe is not None and safe["kind"] == "prefix-safe-0.34.0"
    assert safe["sha"] == pins.values["V0340_PREFIX_SAFE_SHA256"]
    assert safe["patches"] == ",".join(
        pins.values[k] for k in ("V0340_PATCH_FILE", "V0340_PREFIX_SAFE_PATCH_FILE")
    )
    audit = LINE.match(found["audit"]["line"])
    assert audit is not None and audit["kind"] == "audit"
    assert audit["sha"] == pins.values["V0340_AUDIT_ARTICLE_SHA256"]
    assert found["audit"]["environ"]["VLLM_DFLASH_AUDIT"] == "/nonexistent/audit"
    # The pinned kernel matches the reference at its seed, as the seed-7 kernel does at 7 and not
    # at the pinned one: the option reached the kernel.
    assert found["article"]["own_seed"] == ["None", "None"]
    assert found["seed7"]["own_seed"] == ["None", "None"]
    assert all(m != "None" for m in found["seed7"]["pinned_seed"])
