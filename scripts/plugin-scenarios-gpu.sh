#!/usr/bin/env bash
# Issue 55, item 5: J0 through the vLLM plugin (method dflash_j0) in vLLM 0.34.0's real engine,
# every serving scenario of j0.engine_check.scenarios.sender (single, chunked, prefix, concurrency-4,
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

# flags_of VARIANT AUDIT_DIR J0 CACHING MODE PORT: the server's flags (the model comes first), one
# word a line, printed by j0's ServerSetting (j0.article.server_flags): the speculative config
# (method dflash_j0, J0's switches in its speculator_options) and vLLM's spelling of each flag
# are written there, not here.
flags_of() {
  local variant=$1 audit=$2 j0=$3 caching=$4 mode=$5 port=$6 more=()
  [[ -n $audit ]] && more+=(--option "audit_dir=$audit")
  [[ $mode == eager ]] && more+=(--eager)
  PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" python3 -m j0.article.server_flags \
    --method dflash_j0 --drafter "${draft:-DRAFT}" --tokens "$tokens" \
    --option "j0=$([[ $j0 == on ]] && echo true || echo false)" --option "variant=$variant" \
    --served-model-name target --max-model-len 1024 --max-num-batched-tokens "$batched" \
    --num-gpu-blocks-override "$blocks" --kv-cache-memory-bytes 2147483648 \
    --gpu-memory-utilization "$util" --host 127.0.0.1 --port "$port" --prefix-caching "$caching" \
    --no-spec-metrics "${more[@]}"
}

if [[ "$dry" == --dry-run ]]; then
  n=0
  for run in "${runs[@]}"; do
    read -r name variant audited caching j0 mode <<< "$run"
    audit=""  # (a failing $(...) here ended the dry run under set -e at the first J0-off run)
    [[ $audited == yes ]] && audit="RESULTS/$name/audit"
    mapfile -t flags < <(flags_of "$variant" "$audit" "$j0" "$caching" "$mode" $((port0 + n)))
    echo "$name: vllm serve TARGET ${flags[*]}"
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
  local -a flags
  mapfile -t flags < <(flags_of "$variant" "$audit" "$j0" "$caching" "$mode" $((port0 + n)))
  setsid python3 -m vllm.entrypoints.cli.main serve "$target" "${flags[@]}" \
    > "$out/server.log" 2>&1 &
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
  PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" timeout "${SEND_WAIT:-300}" python3 -m j0.engine_check.scenarios.sender \
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
PYTHONPATH="${PYTHONPATH:-}:$scripts_dir" python3 -m j0.engine_check.scenarios.table "$results"
elapsed "done: $results/table.md"
