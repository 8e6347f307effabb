#!/usr/bin/env bash
# Issue 55, item 5: J0 through the vLLM plugin (method dflash_j0) in vLLM 0.34.0's real engine,
# every serving scenario of j0.engine_check.scenarios (single, chunked, prefix, concurrency-4,
# prefix-4), eager and with CUDA graphs: the article variant without prefix caching and the
# prefix-safe variant with it, J0 on with the audit (speculator_options.audit_dir), and J0 off to
# compare outputs. Not run yet: prepared on a machine without a GPU (docs/plugin.md).
#
#   eval "$(scripts/gpu-engine/install-plugin DIR /tmp/site-v034)"
#   scripts/plugin-scenarios-gpu.sh RESULTS [--dry-run]
#
# vLLM's files are never changed: the plugin makes the J0 file in memory from the installed
# speculator.py (each server's log says so in its `j0-plugin:` line). Servers, one per run below,
# PARALLEL at a time (default 3): --max-num-seqs 4, --max-model-len 1024,
# --max-num-batched-tokens $BATCHED (256: chunked prefill), --num-gpu-blocks-override $BLOCKS (80:
# four long requests do not fit, the scheduler preempts), --kv-cache-memory-bytes 2 GiB,
# --gpu-memory-utilization $UTIL. Models: TARGET and DRAFT (set both: models that accept drafts,
# such as `j0 mini train`'s target and drafter, so that multi-token commits are audited), else the
# tiny random models of `j0 engine-check` (drafts rarely accepted). RESULTS gets per server its
# log, scenarios.json, the audit's records and `j0 dumps audit` of them, then table.md.
set -euo pipefail
usage() { echo "usage: scripts/plugin-scenarios-gpu.sh RESULTS [--dry-run]" >&2; exit 64; }
[[ $# -ge 1 && $# -le 2 ]] || usage
results=$1 dry=${2:-}
[[ -z "$dry" || "$dry" == --dry-run ]] || usage
if [[ -e "$results" && ( ! -d "$results" || -n "$(ls -A "$results")" ) ]]; then
  echo "plugin-scenarios-gpu.sh: RESULTS $results exists and is not an empty folder" >&2
  exit 2
fi
work=${WORK:-/tmp/plugin-scenarios}
port0=${PORT:-8041}
blocks=${BLOCKS:-80}
batched=${BATCHED:-256}
util=${UTIL:-0.1}
tokens=${TOKENS:-7}
parallel=${PARALLEL:-3}
for value in "$port0" "$blocks" "$batched" "$tokens" "$parallel"; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || { echo "plugin-scenarios-gpu.sh: '$value': expected a positive integer" >&2; exit 64; }
done

# name variant audited(yes|no) caching(on|off) j0(on|off) mode(eager|graphs)
runs=(
  "article-nocache-eager article yes off on eager"
  "article-nocache-graphs article yes off on graphs"
  "prefix-safe-cache-eager prefix-safe yes on on eager"
  "prefix-safe-cache-graphs prefix-safe yes on on graphs"
  "j0off-nocache-eager article no off off eager"
  "j0off-cache-eager article no on off eager"
)

spec_of() {  # spec_of VARIANT AUDIT_DIR J0: the speculative config (JSON)
  python3 -c 'import json, sys
draft, n, variant, audit, j0 = sys.argv[1:]
options = {"j0": j0 == "on", "variant": variant}
if audit:
    options["audit_dir"] = audit
print(json.dumps({"method": "dflash_j0", "model": draft, "num_speculative_tokens": int(n),
                  "kv_cache_dtype": "auto", "speculator_options": options}))' \
    "${draft:-DRAFT}" "$tokens" "$1" "$2" "$3"
}

flags_of() {  # flags_of CACHING MODE PORT
  echo --served-model-name target --max-num-seqs 4 --max-model-len 1024 \
    --max-num-batched-tokens "$batched" --num-gpu-blocks-override "$blocks" \
    --kv-cache-memory-bytes 2147483648 --gpu-memory-utilization "$util" --host 127.0.0.1 \
    --port "$3" --enable-prompt-tokens-details \
    "$([[ $1 == on ]] && echo --enable-prefix-caching || echo --no-enable-prefix-caching)" \
    "$([[ $2 == eager ]] && echo --enforce-eager)"
}

if [[ "$dry" == --dry-run ]]; then
  n=0
  for run in "${runs[@]}"; do
    read -r name variant audited caching j0 mode <<< "$run"
    audit=$([[ $audited == yes ]] && echo "RESULTS/$name/audit")
    echo "$name: vllm serve TARGET --speculative-config '$(spec_of "$variant" "$audit" "$j0")'" \
      "$(flags_of "$caching" "$mode" $((port0 + n)))"
    n=$((n + 1))
  done
  exit 0
fi

started=$(date +%s)
elapsed() { echo "[$(($(date +%s) - started)) s] $*"; }
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
mkdir -p "$results" "$work"
results=$(cd "$results" && pwd)
scripts_dir="$PWD/scripts"
if [[ -n "${TARGET:-}" ]]; then
  target=$TARGET draft=${DRAFT:?set DRAFT with TARGET}
else
  [[ -d "$work/models/target" ]] || PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" \
    python3 -m j0.engine_check.tiny_models "$work/models"
  target=$work/models/target draft=$work/models/draft
fi

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  pids=()
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run_one() {  # run_one N NAME VARIANT AUDITED CACHING J0 MODE (the server, then its scenarios)
  local n=$1 name=$2 variant=$3 audited=$4 caching=$5 j0=$6 mode=$7 out url audit="" rc=0 pid
  out=$results/$name url="http://127.0.0.1:$((port0 + n))"
  mkdir -p "$out"
  [[ $audited == yes ]] && audit=$out/audit
  # shellcheck disable=SC2046 # flags_of's words are the flags, split on purpose
  setsid python3 -m vllm.entrypoints.cli.main serve "$target" \
    --speculative-config "$(spec_of "$variant" "$audit" "$j0")" \
    $(flags_of "$caching" "$mode" $((port0 + n))) > "$out/server.log" 2>&1 &
  pid=$!
  echo "$pid" > "$out/server.pid"
  for _ in $(seq "${START_WAIT:-400}"); do
    curl -fsS -o /dev/null "$url/health" && break
    kill -0 "$pid" 2>/dev/null || { echo "$name exited while starting:" >&2; tail -30 "$out/server.log" >&2; return 1; }
    sleep 1
  done
  elapsed "$name up"
  local flags=()
  [[ -n "$audit" ]] && flags=(--audit "$audit")
  PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" timeout "${SEND_WAIT:-300}" python3 -m j0.engine_check.scenarios \
    --url "$url" --model target --out "$out" --label "$name" \
    --file "$([[ $j0 == off ]] && echo any || echo "$variant")" --caching "$caching" \
    --j0 "$j0" --mode "$mode" "${flags[@]}" > "$out/scenarios.txt" 2>&1 || rc=$?
  elapsed "$name: scenarios sent (exit $rc)"
  return "$rc"
}

first=0
while ((first < ${#runs[@]})); do
  senders=()
  for ((n = first; n < first + parallel && n < ${#runs[@]}; n++)); do
    read -r name variant audited caching j0 mode <<< "${runs[$n]}"
    run_one "$n" "$name" "$variant" "$audited" "$caching" "$j0" "$mode" &
    senders+=($!)
  done
  for pid in "${senders[@]}"; do wait "$pid" || echo "plugin-scenarios-gpu.sh: a run failed" >&2; done
  for ((n = first; n < first + parallel && n < ${#runs[@]}; n++)); do
    read -r name _ <<< "${runs[$n]}"
    [[ -f "$results/$name/server.pid" ]] && pids+=("$(cat "$results/$name/server.pid")")
  done
  stop_all
  first=$((first + parallel))
done

for run in "${runs[@]}"; do
  read -r name _ audited _ <<< "$run"
  [[ $audited == yes ]] || continue
  PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" python3 -m j0 dumps audit "$results/$name/audit" \
    --json "$results/$name/audit.json" > "$results/$name/audit.txt" 2>&1 || true
  echo "$name: $(head -c 300 "$results/$name/audit.txt")"
done
PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" python3 -m j0.engine_check.scenario_table "$results"
elapsed "done: $results/table.md"
