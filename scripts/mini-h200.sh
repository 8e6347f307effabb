#!/usr/bin/env bash
# The miniature on one H200 (docs/mini.md): `j0 mini train`, then `j0 mini run --here` in parts,
# each phase one command (each meant to stay under 10 minutes), all parts into one run folder
# ($MINI_WORK/run, `--resume`), the results copied into $1 after each phase.
#
#   scripts/mini-h200.sh RESULTS PHASE
#
#   train        j0 mini train (the models; $MINI_TRAIN_ARGS more flags, e.g. the recipe)
#   base         the baseline without speculative decoding, vLLM's n-gram speculator at 7 and 15
#   DRAFTER K    (mask7, j07, mask15, j015) a drafter at K draft tokens: J0 off, then J0 on
#                with each J0 seed; DRAFTER K off|on (mask7off, j015on, ...) one of the two
#   run7, run15  every drafter part at 7 (15) draft tokens, one after the other
#   every        every setting (base and every drafter part at 7 and 15) in one `j0 mini run`,
#                $MINI_SERVERS of them at once on the GPU (`--servers`; default 1)
#   every7       the baseline, then n-gram and both drafters at 7 draft tokens, in one `j0 mini run`
#                (9 settings); every15 the n-gram and both drafters at 15 (6 settings): `every`
#                in two commands, each under 10 minutes with all its servers at once
#   all          train, base, then every drafter part at 7 and at 15
#
# At the defaults (48 prompts per context, 5 contexts: 240 requests a setting, about 60 s to start
# a server) a J0-off part is one server start, a J0-on part two (two seeds): give each its own
# call where 10 minutes are the limit.
#
# Run from the checkout, with vLLM 0.33's Python files (the article's speculator.py installed)
# already on PYTHONPATH. The models go to $MINI_WORK (default /tmp/mini, which must not exist yet
# for `train`); $MINI_BUDGET seconds per model (default 140). The run: $MINI_REQUESTS prompts per
# context (default 48), $MINI_CONTEXTS (default: 0.5, 1, 2, 4, 8 x the drafters' training
# length), $MINI_SLOTS request slots (default 4), $MINI_MAX_TOKENS (default 256), $MINI_SERVERS
# servers at once (default 1), $MINI_RUN_ARGS more flags for `j0 mini run` (e.g. --graphs).
# Each phase's exit status is `j0 mini run`'s.
set -euo pipefail

results=${1:?usage: scripts/mini-h200.sh RESULTS [all|train|base|mask7|j07|mask15|j015|run7|run15|...]}
phase=${2:-all}
work=${MINI_WORK:-/tmp/mini}
budget=${MINI_BUDGET:-140}
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export VLLM_USE_FLASHINFER_SAMPLER=0
mkdir -p "$results"

train() {
  local extra
  read -r -a extra <<< "${MINI_TRAIN_ARGS:-}"
  python3 -m j0 mini train "$work" --budget "$budget" --seed 0 --no-progress "${extra[@]}" \
    2>&1 | tee "$results/train.log"
  mkdir -p "$results/train"
  cp "$work/mini.json" "$work/corpus.json" "$results/train/"
  cp -r "$work/logs" "$results/train/"
  for model in target drafter-mask drafter-j0; do
    mkdir -p "$results/train/$model"
    cp "$work/$model/config.json" "$results/train/$model/"
  done
}

# run_part PARTS TOKENS: those settings, added to the run folder
run_part() {
  local parts=$1 tokens=$2 status=0 extra contexts=()
  read -r -a extra <<< "${MINI_RUN_ARGS:-}"
  if [[ -n "${MINI_CONTEXTS:-}" ]]; then contexts=(--contexts "$MINI_CONTEXTS"); fi
  echo "==> mini-h200.sh: $parts at $tokens draft tokens" | tee -a "$results/run.log"
  python3 -m j0 mini run "$work" --here --resume --run-dir "$work/run" --parts "$parts" \
    --tokens "$tokens" --requests "${MINI_REQUESTS:-48}" --slots "${MINI_SLOTS:-4}" \
    --max-tokens "${MINI_MAX_TOKENS:-256}" --servers "${MINI_SERVERS:-1}" "${contexts[@]}" \
    "${extra[@]}" \
    2>&1 | tee -a "$results/run.log" || status=$?
  # everything but the dumps themselves (dumps-sha256.txt and dumps-check.json stay beside them)
  mkdir -p "$results/run"
  (cd "$work/run" && find . -path '*/dumps' -prune -o -type f -print0 \
    | xargs -0 cp --parents -t "$results/run")
  return "$status"
}

drafter_parts() {  # drafter_parts K: every drafter part at K draft tokens
  local status=0
  run_part mask-off "$1" || status=$?
  run_part mask-on "$1" || status=$?
  run_part j0-off "$1" || status=$?
  run_part j0-on "$1" || status=$?
  return "$status"
}

if [[ $phase =~ ^(mask|j0)(7|15)(off|on)?$ ]]; then
  drafter=${BASH_REMATCH[1]} k=${BASH_REMATCH[2]} which=${BASH_REMATCH[3]}
  if [[ -n $which ]]; then
    run_part "$drafter-$which" "$k"
  else
    status=0
    run_part "$drafter-off" "$k" || status=$?
    run_part "$drafter-on" "$k" || status=$?
    exit "$status"
  fi
  exit
fi
case $phase in
  train) train ;;
  base) run_part baseline,ngram 7,15 ;;
  run7) drafter_parts 7 ;;
  run15) drafter_parts 15 ;;
  every) run_part baseline,ngram,mask,j0 7,15 ;;
  every7) run_part baseline,ngram,mask,j0 7 ;;
  every15) run_part ngram,mask,j0 15 ;;
  all)
    train
    status=0
    run_part baseline,ngram 7,15 || status=$?
    drafter_parts 7 || status=$?
    drafter_parts 15 || status=$?
    exit "$status"
    ;;
  *)
    echo "mini-h200.sh: phase $phase: expected all, train, base, mask7, j07, mask15, j015" \
      "(each with off or on after it, or neither), run7, run15, every, every7 or every15" >&2
    exit 64
    ;;
esac
