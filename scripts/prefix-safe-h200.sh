#!/usr/bin/env bash
# J0 under prefix caching in the real engine, the article's speculator.py against the prefix-safe
# variant (issue 24, part 4; docs/overlay.md), on one GPU, each phase a command of its own (each
# under 10 minutes; the GPU machine's commands are capped there):
#
#   scripts/prefix-safe-h200.sh RESULTS files        both speculator.py files from the install
#   scripts/prefix-safe-h200.sh RESULTS article      A, A, B, A with prefix caching on, dumps on,
#   scripts/prefix-safe-h200.sh RESULTS prefix-safe    then `j0 dumps check` (tiny models)
#   scripts/prefix-safe-h200.sh RESULTS acc-article      A, B, A with caching on and off, j0 mini's
#   scripts/prefix-safe-h200.sh RESULTS acc-prefix-safe  trained models: acceptance of the last A
#   scripts/prefix-safe-h200.sh RESULTS restore      put the install's own speculator.py back
#   scripts/prefix-safe-h200.sh RESULTS summary      one table of every phase's results
#
# Run from the checkout, with vLLM 0.33's Python files at $SITE (default /tmp/site; on PYTHONPATH,
# as scripts/gpu-engine/install sets it up: its speculator.py is the article's or the base).
# Models: $TARGET and $DRAFT (default: the tiny random models of `j0 engine-check`, made in
# $WORK/models); for the acc-* phases $MINI_TARGET and $MINI_DRAFT (default $MINI_WORK/target and
# $MINI_WORK/drafter-j0, MINI_WORK=/tmp/mini, made by `j0 mini train`). $WORK: /tmp/prefix-safe.
# The server listens on 127.0.0.1:$PORT (default 8011), eager, --max-num-seqs 4,
# --max-model-len 2048, VLLM_DFLASH_CTX_NOISE=1, VLLM_DFLASH_DUMP=<dir>, VLLM_DFLASH_DUMP_STEPS=200.
set -euo pipefail

results=${1:?usage: scripts/prefix-safe-h200.sh RESULTS files|article|prefix-safe|acc-article|acc-prefix-safe|restore|summary}
phase=${2:?usage: scripts/prefix-safe-h200.sh RESULTS PHASE}
site=${SITE:-/tmp/site}
work=${WORK:-/tmp/prefix-safe}
port=${PORT:-8011}
export PYTHONPATH="$site:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export VLLM_USE_FLASHINFER_SAMPLER=0
relpath=vllm/v1/worker/gpu/spec_decode/dflash/speculator.py
installed="$site/$relpath"
mkdir -p "$results" "$work"
results=$(cd "$results" && pwd)

# Both files from what the install holds (the article's file or vLLM's base), each checked by
# sha256 against overlay/pins.env; the install's own file is kept as $work/original.py.
files() {
  [[ -f "$work/original.py" ]] || cp "$installed" "$work/original.py"
  python3 - "$work/original.py" "$work" <<'EOF'
import sys
from pathlib import Path

from j0.article.identity import ARTICLE, BASE, identify
from j0.article.variants import variant_patch
from j0.article.build import build_variant, patch_article
from j0.pins import load_pins

pins = load_pins()
data, work = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2])
kind = identify(data, pins).kind
if kind == ARTICLE:
    article = data
    variant = patch_article(article, sys.argv[1], pins, variant_patch(pins, "prefix-safe"))
elif kind == BASE:
    article = build_variant(data, sys.argv[1], pins)
    variant = build_variant(data, sys.argv[1], pins, "prefix-safe")
else:
    sys.exit(f"{sys.argv[1]}: identity={kind}: expected the article's file or vLLM's base")
(work / "article.py").write_bytes(article)
(work / "prefix-safe.py").write_bytes(variant)
EOF
  python3 -m j0 overlay verify "$work/article.py"
  python3 -m j0 overlay verify "$work/prefix-safe.py" || [[ $? -eq 5 ]]
}

install_file() {  # install_file article|prefix-safe
  [[ -f "$work/$1.py" ]] || { echo "prefix-safe-h200.sh: run the files phase first" >&2; exit 2; }
  cp "$work/$1.py" "$installed"
  rm -f "$(dirname "$installed")"/__pycache__/speculator.*.pyc
}

tiny_models() {
  if [[ -n "${TARGET:-}" ]]; then
    echo "$TARGET ${DRAFT:?set DRAFT with TARGET}"
    return
  fi
  [[ -d "$work/models/target" ]] || python3 -m j0.engine_check.tiny_models "$work/models" >&2
  echo "$work/models/target $work/models/draft"
}

server_pid=
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM -- "-$server_pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$server_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$server_pid" 2>/dev/null || true
  fi
  server_pid=
}
trap stop_server EXIT

# serve TARGET DRAFT CACHING(on|off) DUMPS LOG: identity line first (as the image's entrypoint and
# `j0 engine-check --here` write it), then vLLM in its own process group; waits for /health.
serve() {
  local target=$1 draft=$2 caching=$3 dumps=$4 log=$5
  local -a flags
  # The flags (the speculative config with them) as j0's ServerSetting writes them.
  mapfile -t flags < <(python3 -m j0.article.server_flags --drafter "$draft" \
    --tokens "${TOKENS:-7}" --served-model-name target --max-model-len 2048 \
    --gpu-memory-utilization 0.3 --host 127.0.0.1 --port "$port" --prefix-caching "$caching" \
    --eager)
  python3 -m j0 image identity --prefix j0-entrypoint > "$log" 2>&1
  VLLM_DFLASH_CTX_NOISE=1 VLLM_DFLASH_DUMP="$dumps" VLLM_DFLASH_DUMP_STEPS=200 \
    setsid python3 -m vllm.entrypoints.cli.main serve "$target" "${flags[@]}" >> "$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/health"; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { tail -40 "$log" >&2; exit 1; }
    sleep 1
  done
  echo "prefix-safe-h200.sh: no /health after 300 s (see $log)" >&2
  exit 1
}

# The A, A, B, A scenario with prefix caching on, then `j0 dumps check` of its dumps.
scenario() {  # scenario article|prefix-safe
  local name=$1 out="$results/$1" models target draft status=0
  models=$(tiny_models)
  read -r target draft <<< "$models"
  install_file "$name"
  rm -rf "$out" && mkdir -p "$out"
  serve "$target" "$draft" on "$out/dumps" "$out/server.log"
  python3 -m j0.engine_check.prefix_requests --url "http://127.0.0.1:$port" --model target \
    --out "$out" --order A,A,B,A --max-tokens 32 --tokens 600 --vocab 4,4000 | tee "$out/requests.txt"
  stop_server
  python3 -m j0 dumps check "$out/dumps" --log "$out/server.log" --prompts "$out/prompts.json" \
    --json "$out/check.json" > "$out/check.txt" 2>&1 || status=$?
  tail -3 "$out/check.txt"
  echo "j0 dumps check exit $status" | tee "$out/check-exit.txt"
}

# Acceptance with trained models: A, B, A with caching on, and the same with caching off.
acceptance() {  # acceptance article|prefix-safe
  local name=$1 target=${MINI_TARGET:-${MINI_WORK:-/tmp/mini}/target}
  local draft=${MINI_DRAFT:-${MINI_WORK:-/tmp/mini}/drafter-j0} caching out
  install_file "$name"
  local text_a text_b
  text_a=$(python3 -c 'import json.decoder as m; print(m.__file__)')
  text_b=$(python3 -c 'import textwrap as m; print(m.__file__)')
  for caching in on off; do
    out="$results/acc-$name/caching-$caching"
    rm -rf "$out" && mkdir -p "$out"
    serve "$target" "$draft" "$caching" "$out/dumps" "$out/server.log"
    python3 -m j0.engine_check.prefix_requests --url "http://127.0.0.1:$port" --model target \
      --out "$out" --order A,B,A --max-tokens 128 --text-a "$text_a" --text-b "$text_b" \
      --chars 3000 | tee "$out/requests.txt"
    stop_server
  done
}

summary() {
  python3 - "$results" <<'EOF'
import json
import sys
from pathlib import Path

root = Path(sys.argv[1])
print("| run | request | cached | acceptance length | accepted/drafted |")
print("|---|---|---:|---:|---:|")
for path in sorted(root.glob("**/summary.json")):
    for row in json.loads(path.read_text()):
        drafted = row.get("num_draft_tokens")
        print(
            f"| {path.parent.relative_to(root)} | {row['name']} | {row['cached_tokens']} "
            f"| {row['mean_acceptance_length']} | {row['num_accepted_draft_tokens']}/{drafted} |"
        )
for path in sorted(root.glob("*/check.json")):
    report = json.loads(path.read_text())
    draws = [(r["number"], r["start_pos"], r["verified"], r["draws"], r["unverifiable"])
             for r in report["requests"] if r["status"] == "checked"]
    print(f"{path.parent.name}: j0 dumps check {report['verdict']} (variant {report['variant']}); "
          "request, start, verified/draws, unverifiable: " + "; ".join(map(str, draws)))
EOF
}

case $phase in
  files) files ;;
  article | prefix-safe) scenario "$phase" ;;
  acc-article) acceptance article ;;
  acc-prefix-safe) acceptance prefix-safe ;;
  restore) cp "$work/original.py" "$installed" && rm -f "$(dirname "$installed")"/__pycache__/speculator.*.pyc ;;
  summary) summary | tee "$results/summary.md" ;;
  *) echo "prefix-safe-h200.sh: phase $phase: see the usage at the top" >&2; exit 64 ;;
esac
