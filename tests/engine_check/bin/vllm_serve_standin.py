"""In the place of `python -m vllm.entrypoints.cli.main serve` for `j0 engine-check --here
--server-command ...` in tests without a GPU: takes `vllm serve`'s arguments and environment,
prints the two log lines the article's patch prints (their exact text recorded from the real
engine, tests/data/engine-h200-graphs-k15/server-j0-*.log), puts a recorded real dump set of the
right J0 mode into $VLLM_DFLASH_DUMP, and serves with our vLLM stand-in (tests/servers/) on --port.

Knobs for tampering tests (environment): STANDIN_POOL (the pool printed with J0 on),
STANDIN_DUMPS (the dump folder to copy with J0 on) and STANDIN_IDENTITY (article, base, ...: an
identity line for that file, as `j0 image identity --prefix j0-entrypoint` writes one, printed
after the one the caller logged: a server that imported another file than the one checked).
Without --speculative-config it serves without speculative decoding. J0_MINI_SPECULATOR (`j0 mini
run`'s speculator.py of another J0 seed, which vLLM would import in the place of its own) is named
in the log; the dumps copied are still the recorded ones (seed 20261031) unless
STANDIN_VARIANT_DUMPS names others. With J0 on and VLLM_DFLASH_AUDIT it writes audit records
(standin_audit.py: STANDIN_AUDIT_FAULT=N makes the steps of N-token prompts fail the audit);
--enable-prefix-caching serves with prefix caching, --num-gpu-blocks-override counts preemptions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))

from servers.vllm import server as vllm_server  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import standin_audit  # noqa: E402


def arg(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def main(argv: list[str]) -> int:
    j0 = os.environ.get("VLLM_DFLASH_CTX_NOISE", "0") == "1"
    spec = json.loads(arg(argv, "--speculative-config") or "{}")
    seqs, length = arg(argv, "--max-num-seqs"), arg(argv, "--max-model-len")
    dump = os.environ.get("VLLM_DFLASH_DUMP", "")
    steps = os.environ.get("VLLM_DFLASH_DUMP_STEPS", "0")
    pool = os.environ.get("STANDIN_POOL", f"({seqs}, {length})") if j0 else "(1, 1)"
    nondefault = {
        "model_tag": argv[0],
        "model": argv[0],
        "max_model_len": int(length or 2048),
        "enable_prefix_caching": "--enable-prefix-caching" in argv,
        "max_num_seqs": int(seqs or 4),
        "speculative_config": spec,
    }
    for flag, key, kind in (
        ("--gpu-memory-utilization", "gpu_memory_utilization", float),
        ("--kv-cache-memory-bytes", "kv_cache_memory_bytes", int),
        ("--port", "port", int),
    ):
        value = arg(argv, flag)
        if value is not None:  # vLLM logs the arguments given that are not its defaults
            nondefault[key] = kind(value)
    identity = os.environ.get("STANDIN_IDENTITY")
    if identity:
        from j0.article.identity import Identity
        from j0.pins import load_pins

        pins = load_pins()
        sha = {"article": pins.patched_sha256, "base": pins.base_sha256}.get(identity, "0" * 64)
        line = Identity(identity, sha).line()
        print(f"j0-entrypoint: /standin/site/{pins.speculator_relpath}: {line}", flush=True)
    print(f"(APIServer pid=1) INFO 11-30 13:32:08 [startup.py:96] non-default args: {nondefault!r}")
    prefix = "(EngineCore pid=1) INFO 11-30 13:33:32 [speculator.py:144]"
    print(f"{prefix} DFLASH_CTX_NOISE={int(j0)} pool={pool} dump={dump}/{steps}", flush=True)
    print(
        "(EngineCore pid=1) INFO 11-30 13:33:35 [speculator.py:263] "
        f"DFLASH_DRAFT_KV_DTYPES=['{spec.get('kv_cache_dtype', 'auto')}'] "
        f"spec_kv_cache_dtype={spec.get('kv_cache_dtype', 'auto')}",
        flush=True,
    )
    recorded = TESTS / "data" / "engine-h200" / ("j0-on" if j0 else "j0-off")
    source = Path(os.environ.get("STANDIN_DUMPS", str(recorded))) if j0 else recorded
    variant = os.environ.get("J0_MINI_SPECULATOR")
    if variant:
        print(f"j0-standin: the speculator.py imported would be {variant}", flush=True)
        if j0 and os.environ.get("STANDIN_VARIANT_DUMPS"):
            source = Path(os.environ["STANDIN_VARIANT_DUMPS"])
    if dump:
        shutil.copytree(source, dump, dirs_exist_ok=True)
    audit = os.environ.get("VLLM_DFLASH_AUDIT")
    fault = os.environ.get("STANDIN_AUDIT_FAULT")
    blocks = arg(argv, "--num-gpu-blocks-override")
    standin_audit.install(
        standin_audit.AuditWriter(
            Path(audit) if audit and j0 else None,
            int(fault) if fault else None,
            int(blocks) if blocks else None,
        )
    )
    caching = [] if "--enable-prefix-caching" in argv else ["--no-prefix-caching"]
    port = arg(argv, "--port") or "8000"
    # The server coming up, as vLLM and uvicorn log it (tests/status/data/server-j0-on.log).
    print(
        "(APIServer pid=1) INFO 11-30 13:35:10 [entry.py:139] Starting vLLM server on "
        f"http://127.0.0.1:{port}",
        flush=True,
    )
    return vllm_server.main(
        [
            "--port",
            port,
            "--model",
            argv[0],
            "--max-model-len",
            length or "2048",
            "--num-spec-tokens",
            str(spec.get("num_speculative_tokens", 7)) if spec else "0",
            *caching,
            "--prefill-delay",
            str(standin_audit.PREFILL_DELAY if blocks else 0.0),
        ]
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
