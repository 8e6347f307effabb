#!/usr/bin/env bash
# How docs/results/engine-check-h200/ was made: on the H200 machine (no network, torch 2.11 and
# Triton 3.6 installed, no vLLM), after scripts/gpu-engine/install (docs/gpu-without-docker.md) put
# vLLM 0.33.0's Python files, wheels and compiled extensions under /tmp/site. Usage, from the
# checkout's root:  h200-run.sh OUT MODE...   MODE: eager7 eager15 graphs7 graphs15 live
set -euo pipefail
out=$1; shift
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0 S=/tmp/site
so=$S/vllm/_C_stable_libtorch.abi3.so
[ -f "$so" ] || { cat /tmp/parts/so.part* | xz -d | tar -x -C "$S"; }
export PYTHONPATH="$S:$PWD/scripts"
# The article's speculator.py over the wheel's (made here by `j0 overlay build`, carried).
cp overlay/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py \
  "$S/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
mkdir -p "$out"
for mode in "$@"; do
  case $mode in
  eager7) flags=(--eager --tokens 7) ;; eager15) flags=(--eager --tokens 15) ;;
  graphs7) flags=(--graphs --tokens 7) ;; graphs15) flags=(--graphs --tokens 15) ;;
  live)
    # A live J0-on server of the tiny models (kept from an engine check), then `j0 status` and
    # `j0 bench run` against it, as a user would.
    found=(/tmp/ec-*/models); models=${found[0]}
    spec='{"method":"dflash","model":"'$models'/draft","num_speculative_tokens":7,"kv_cache_dtype":"auto"}'
    { python3 -m j0 image identity --prefix j0-entrypoint
      VLLM_DFLASH_CTX_NOISE=1 python3 -m vllm.entrypoints.cli.main serve "$models/target" \
        --speculative-config "$spec" --max-num-seqs 4 --max-model-len 2048 --enforce-eager \
        --gpu-memory-utilization 0.3 --port 8000 --per-request-spec-decode-metrics detailed \
        --enable-prompt-tokens-details --no-enable-prefix-caching; } > "$out/live-server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 240); do curl -sf localhost:8000/health >/dev/null && break; sleep 1; done
    python3 -c 'import json, random
r = random.Random(5)
for n in (100, 400, 800, 1500):
    print(json.dumps({"prompt": " ".join(f"t{r.randrange(4, 4000)}" for _ in range(n))}))' > /tmp/prompts.jsonl
    python3 -m j0 status --url http://127.0.0.1:8000 --log "$out/live-server.log" > "$out/live-status.txt" 2>&1 || true
    python3 -m j0 status --url http://127.0.0.1:8000 --log "$out/live-server.log" --json > "$out/live-status.json" 2>/dev/null || true
    python3 -m j0 bench run --url http://127.0.0.1:8000 --out "$out/live-bench.json" --requests 4 \
      --max-tokens 200 --dataset /tmp/prompts.jsonl --endpoint completions --ignore-eos \
      --status-json "$out/live-status.json" --no-progress > "$out/live-bench.txt" 2>&1 || true
    kill "$pid"; wait "$pid" 2>/dev/null || true
    continue ;;
  *) echo "unknown mode $mode" >&2; exit 64 ;;
  esac
  python3 -m j0 engine-check --here "${flags[@]}" --keep "/tmp/ec-$mode" --json "$out/$mode.json" \
    > "$out/$mode.txt" 2>&1 || true
  tail -n 14 "$out/$mode.txt"
  cp "/tmp/ec-$mode"/server-j0-on.log "$out/$mode-server-j0-on.log"
done
