#!/usr/bin/env bash
# J0 under real serving (issue 30): every scenario of j0.engine_check.scenarios.sender (one stream,
# chunked prefill, prefix hits A A B A, 4 streams at once with chunked prefill and preemption,
# prefix hits at once) on vLLM's real engine, for the article's speculator.py (prefix caching off
# and on) and the prefix-safe variant (caching on), J0 on with the audit (overlay/
# jetspec-j0-audit.patch) and J0 off, in ONE invocation on one GPU:
#
#   scripts/engine-scenarios-h200.sh RESULTS            run everything, then the table
#   scripts/engine-scenarios-h200.sh RESULTS --dry-run  check and print the plan; start nothing
#
# Run from the checkout, after `eval "$(scripts/gpu-engine/install DIR /tmp/site)"` (vLLM 0.33's
# files at $SITE, default /tmp/site; its speculator.py the article's or vLLM's base). The install
# itself is never changed: each server gets a tree of symbolic links to $SITE ($WORK/trees/NAME)
# whose speculator.py is a real copy of its own file, every file checked by sha256 against
# overlay/pins.env. The seven servers start at once (their start, 60-90 s each, is what costs):
#
#   article-nocache   audited article's file, J0 on, prefix caching off, eager
#   article-cache     audited article's file, J0 on, prefix caching on,  eager
#   prefix-safe-cache audited variant,        J0 on, prefix caching on,  eager
#   j0off-nocache     the article's file,     J0 off, caching off, eager (outputs to compare)
#   j0off-cache       the article's file,     J0 off, caching on,  eager
#   article-graphs    audited article's file, J0 on, caching off, CUDA graphs (torch.compile)
#   j0off-graphs      the article's file,     J0 off, caching off, CUDA graphs (the graphs run's
#                     twin: its outputs to compare, issue 54 item 7)
#   article-roomy     (ROOMY=1 only) audited article's file, J0 on, caching off, eager, a KV cache
#                     of $ROOMY_BLOCKS blocks (320: four requests of 500 + $ROOMY_TOKENS fit, no
#                     preemption), the concurrency-4 scenario alone with $ROOMY_TOKENS (500) output
#                     tokens a request: steps that hold four requests (issue 54, item 7; with
#                     trained models, TARGET and DRAFT, the drafts are accepted)
#
# Every server: --max-num-seqs 4 (the article's), --max-model-len 1024, --max-num-batched-tokens
# $BATCHED (256: the 500- to 700-token prompts are chunked), --num-gpu-blocks-override $BLOCKS (80
# blocks of 16 = 1280 tokens: four 548-token requests do not fit, the scheduler preempts),
# --kv-cache-memory-bytes (no memory profiling race between servers starting together),
# --gpu-memory-utilization $UTIL (0.1 each). PARALLEL=N starts N servers at a time instead (waves). RESULTS gets, per server, its log, scenarios.json
# and the audit's records (audit/, J0 on), `j0 dumps audit` of them (audit.txt), and table.md /
# table.json (scenario x file -> audit verdict, rows, draws, mismatches, preemptions, outputs J0
# on vs off). Models: $TARGET and $DRAFT, default the tiny random models of `j0 engine-check`,
# made once in $WORK/models. $WORK: /tmp/engine-scenarios. Ports $PORT.. $PORT+5 (8021..).
set -euo pipefail

usage() {
  echo "usage: scripts/engine-scenarios-h200.sh RESULTS [--dry-run]" >&2
  exit 64
}
[[ $# -ge 1 && $# -le 2 ]] || usage
results=$1
dry=${2:-}
[[ -z "$dry" || "$dry" == --dry-run ]] || usage
[[ -n "$results" ]] || usage
if [[ -e "$results" && ! -d "$results" ]]; then
  echo "engine-scenarios-h200.sh: RESULTS $results is a file; expected a new or empty folder" >&2
  exit 2
fi
if [[ -d "$results" ]] && [[ -n "$(ls -A "$results")" ]]; then
  echo "engine-scenarios-h200.sh: RESULTS $results is not empty; expected a new or empty" \
    "folder (nothing there is overwritten)" >&2
  exit 2
fi
site=${SITE:-/tmp/site}
work=${WORK:-/tmp/engine-scenarios}
port0=${PORT:-8021}
blocks=${BLOCKS:-80}
batched=${BATCHED:-256}
util=${UTIL:-0.1}
tokens=${TOKENS:-7}
roomy_blocks=${ROOMY_BLOCKS:-320}
roomy_tokens=${ROOMY_TOKENS:-500}
parallel=${PARALLEL:-6}
relpath=vllm/v1/worker/gpu/spec_decode/dflash/speculator.py
for value in "$port0" "$blocks" "$batched" "$tokens" "$parallel" "$roomy_blocks" \
  "$roomy_tokens"; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || {
    echo "engine-scenarios-h200.sh: '$value' (PORT, BLOCKS, BATCHED, TOKENS, PARALLEL," \
      "ROOMY_BLOCKS or ROOMY_TOKENS):" \
      "expected a positive integer" >&2
    exit 64
  }
done
if [[ ! -f "$site/$relpath" ]]; then
  echo "engine-scenarios-h200.sh: SITE $site holds no $relpath (run" \
    "scripts/gpu-engine/install first, or set SITE)" >&2
  exit 2
fi

# name file(article|prefix-safe) audited(yes|no) caching(on|off) j0(on|off) mode(eager|graphs)
runs=(
  "article-nocache article yes off on eager"
  "article-cache article yes on on eager"
  "prefix-safe-cache prefix-safe yes on on eager"
  "j0off-nocache article no off off eager"
  "j0off-cache article no on off eager"
  "article-graphs article yes off on graphs"
  "j0off-graphs article no off off graphs"
)
if [[ "${ROOMY:-0}" == 1 ]]; then runs+=("article-roomy article yes off on eager"); fi
[[ -n "${PARALLEL:-}" ]] || parallel=${#runs[@]}  # all at once unless PARALLEL says otherwise

# flags_of CACHING MODE PORT [BLOCKS]: the server's flags (the model comes first), one word a
# line, printed by j0's ServerSetting (j0.article.server_flags): the speculative config and
# vLLM's spelling of each flag are written there, not here.
flags_of() {
  local caching=$1 mode=$2 port=$3 cache_blocks=${4:-$blocks} eager=()
  [[ $mode == eager ]] && eager=(--eager)
  PYTHONPATH="$PWD/scripts" python3 -m j0.article.server_flags --drafter "${draft:-DRAFT}" \
    --tokens "$tokens" --served-model-name target --max-model-len 1024 \
    --max-num-batched-tokens "$batched" --num-gpu-blocks-override "$cache_blocks" \
    --kv-cache-memory-bytes 2147483648 --gpu-memory-utilization "$util" --host 127.0.0.1 \
    --port "$port" --prefix-caching "$caching" --no-spec-metrics "${eager[@]}"
}

blocks_of() { [[ $1 == article-roomy ]] && echo "$roomy_blocks" || echo "$blocks"; }
only_of() {  # the sender's extra flags for a run (the roomy one: concurrency-4, longer outputs)
  [[ $1 == article-roomy ]] && echo " scenarios: --only concurrency-4 --max-tokens $roomy_tokens"
  return 0
}

if [[ "$dry" == --dry-run ]]; then
  n=0
  for run in "${runs[@]}"; do
    read -r name file audited caching j0 mode <<< "$run"
    mapfile -t flags < <(flags_of "$caching" "$mode" $((port0 + n)) "$(blocks_of "$name")")
    echo "$name: file=$file audited=$audited J0=$j0 caching=$caching mode=$mode" \
      "port=$((port0 + n)): vllm serve TARGET ${flags[*]}$(only_of "$name")"
    n=$((n + 1))
  done
  echo "dry run: ${#runs[@]} servers, $parallel at once, then the scenarios, then" \
    "$results/table.md"
  exit 0
fi

started=$(date +%s)
elapsed() { echo "[$(($(date +%s) - started)) s] $*"; }
export PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
mkdir -p "$results" "$work/files"
results=$(cd "$results" && pwd)
scripts_dir="$PWD/scripts"

# The four files from what the install holds, each checked by sha256 against overlay/pins.env.
PYTHONPATH="$site:$scripts_dir" python3 - "$site/$relpath" "$work/files" <<'EOF'
import sys
from pathlib import Path

from j0.article.identity import ARTICLE, BASE, identify
from j0.article.variants import variant_patch
from j0.article.build import audit_file, build_variant, patch_article
from j0.pins import load_pins

pins = load_pins()
data, out = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2])
kind = identify(data, pins).kind
if kind == ARTICLE:
    article = data
elif kind == BASE:
    article = build_variant(data, sys.argv[1], pins)
else:
    sys.exit(f"{sys.argv[1]}: identity={kind}: expected the article's file or vLLM's base")
variant = patch_article(article, sys.argv[1], pins, variant_patch(pins, "prefix-safe"))
(out / "article.py").write_bytes(article)
(out / "prefix-safe.py").write_bytes(variant)
(out / "audit-article.py").write_bytes(audit_file(article, "article", pins, "article"))
(out / "audit-prefix-safe.py").write_bytes(audit_file(variant, "variant", pins, "prefix-safe"))
print("engine-scenarios-h200.sh: files made and checked:", ", ".join(p.name for p in out.iterdir()))
EOF

if [[ -n "${TARGET:-}" ]]; then
  target=$TARGET draft=${DRAFT:?set DRAFT with TARGET}
else
  [[ -d "$work/models/target" ]] ||
    PYTHONPATH="$site:$scripts_dir" python3 -m j0.engine_check.tiny_models "$work/models"
  target=$work/models/target draft=$work/models/draft
fi

tree_for() {  # tree_for NAME FILE: links to every entry of $site; vllm/ linked file by file
  local tree=$work/trees/$1
  rm -rf "$tree" && mkdir -p "$tree"
  for entry in "$site"/*; do
    [[ "$(basename "$entry")" == vllm ]] || ln -s "$entry" "$tree/"
  done
  cp -rs "$site/vllm" "$tree/vllm"
  rm -f "$tree/$relpath"
  rm -rf "$(dirname "$tree/$relpath")/__pycache__"
  cp "$2" "$tree/$relpath"
  echo "$tree"
}

pids=()
stop_all() {
  # A server's subshell makes its own session only when it execs the server: one still printing
  # its identity is in ours, so it gets the signal by its pid (else the wait below ran out, 30 s).
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  local stopped
  for pid in "${pids[@]}"; do
    stopped=no
    for _ in $(seq 30); do  # gone, or a zombie that this shell has not reaped yet
      if ! kill -0 "$pid" 2>/dev/null || [[ "$(ps -o stat= -p "$pid" 2>/dev/null)" == Z* ]]; then
        stopped=yes && break
      fi
      sleep 1
    done
    [[ $stopped == yes ]] || echo "engine-scenarios-h200.sh: server $pid still ran 30 s after SIGTERM; SIGKILL" >&2
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  done
  pids=()
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM  # the servers (their own sessions) are stopped on the way out

start_server() {  # start_server N NAME FILE AUDITED CACHING J0 MODE: its process group's id
  local n=$1 name=$2 file=$3 audited=$4 caching=$5 j0=$6 mode=$7 out tree source_file
  local -a flags
  out=$results/$name
  mkdir -p "$out"
  source_file=$work/files/$file.py
  [[ $audited == yes ]] && source_file=$work/files/audit-$file.py
  tree=$(tree_for "$name" "$source_file")
  mapfile -t flags < <(flags_of "$caching" "$mode" $((port0 + n)) "$(blocks_of "$name")")
  (
    export PYTHONPATH="$tree:$scripts_dir"
    python3 -m j0 image identity --prefix j0-entrypoint || true
    VLLM_DFLASH_CTX_NOISE=$([[ $j0 == on ]] && echo 1 || echo 0) \
      VLLM_DFLASH_AUDIT=$([[ $audited == yes ]] && echo "$out/audit") \
      exec setsid python3 -m vllm.entrypoints.cli.main serve "$target" "${flags[@]}"
  ) > "$out/server.log" 2>&1 &
  server_pid=$!
}

# Each server's scenarios start as soon as that server answers /health (the graphs run compiles
# longer than the eager ones start).
send() {  # send N PID NAME FILE AUDITED CACHING J0 MODE
  local n=$1 pid=$2 name=$3 file=$4 audited=$5 caching=$6 j0=$7 mode=$8 url audit=() rc=0
  local only=()
  [[ $name == article-roomy ]] && only=(--only concurrency-4 --max-tokens "$roomy_tokens")
  url="http://127.0.0.1:$((port0 + n))"
  for _ in $(seq "${START_WAIT:-300}"); do
    curl -fsS -o /dev/null "$url/health" && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "engine-scenarios-h200.sh: $name exited while starting:" >&2
      tail -30 "$results/$name/server.log" >&2
      return 1
    fi
    sleep 1
  done
  elapsed "$name up"
  [[ $audited == yes ]] && audit=(--audit "$results/$name/audit")
  [[ $j0 == off ]] && file=any
  PYTHONPATH="$site:$scripts_dir" timeout "${SEND_WAIT:-240}" python3 -m j0.engine_check.scenarios.sender \
    --url "$url" --model target --out "$results/$name" --label "$name" --file "$file" \
    --caching "$caching" --j0 "$j0" --mode "$mode" "${audit[@]}" "${only[@]}" \
    > "$results/$name/scenarios.txt" 2>&1 || rc=$?
  elapsed "$name: scenarios sent (exit $rc)"
  return "$rc"
}

# PARALLEL servers at a time (default all seven at once), each wave stopped before the next.
first=0
while ((first < ${#runs[@]})); do
  senders=()
  for ((n = first; n < first + parallel && n < ${#runs[@]}; n++)); do
    read -r name file audited caching j0 mode <<< "${runs[$n]}"
    start_server "$n" "$name" "$file" "$audited" "$caching" "$j0" "$mode"
    pids+=("$server_pid")
    send "$n" "$server_pid" "$name" "$file" "$audited" "$caching" "$j0" "$mode" &
    senders+=($!)
  done
  elapsed "servers $first.. starting"
  for pid in "${senders[@]}"; do
    wait "$pid" || echo "engine-scenarios-h200.sh: a sender failed" >&2
  done
  stop_all
  elapsed "servers $first.. stopped"
  first=$((first + parallel))
done

for run in "${runs[@]}"; do
  read -r name _ audited _ <<< "$run"
  [[ $audited == yes ]] || continue
  PYTHONPATH="$scripts_dir" python3 -m j0 dumps audit "$results/$name/audit" \
    --json "$results/$name/audit.json" > "$results/$name/audit.txt" 2>&1 || true
  echo "$name: $(head -c 300 "$results/$name/audit.txt")"
done
PYTHONPATH="$site:$scripts_dir" python3 -m j0.engine_check.scenarios.table "$results"
elapsed "done: $results/table.md"
