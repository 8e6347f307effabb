#!/usr/bin/env bash
# The miniature on one H200 (docs/mini.md): `j0 mini train`, then `j0 mini run --here` in parts,
# each phase one command (each meant to stay under 10 minutes), all parts into one run folder
# ($MINI_WORK/run, `--resume`), the results copied into $1 after each phase.
#
#   scripts/mini-h200.sh RESULTS [all|train|base|mask7|j07|mask15|j015|run7|run15]
#
#   train   j0 mini train (the models; $MINI_TRAIN_ARGS more flags, e.g. the recipe)
#   base    the baseline without speculative decoding, vLLM's n-gram speculator at 7 and 15
#   mask7   the mask-trained drafter at 7 draft tokens: J0 off, J0 on with each J0 seed
#   j07     the J0-trained drafter likewise (mask15, j015: at 15 draft tokens)
#   run7    mask7 then j07 (two commands); run15 likewise
#   all     train, base, mask7, j07, mask15, j015
#
# Run from the checkout, with vLLM 0.33's Python files (the article's speculator.py installed)
# already on PYTHONPATH. The models go to $MINI_WORK (default /tmp/mini, which must not exist yet
# for `train`); $MINI_BUDGET seconds per model (default 140). The run: $MINI_REQUESTS prompts per
# context (default 48), $MINI_CONTEXTS (default: 0.5, 1, 2, 4, 8 x the drafters' training
# length), $MINI_SLOTS request slots (default 4), $MINI_MAX_TOKENS (default 256), $MINI_RUN_ARGS
# more flags for `j0 mini run` (e.g. --graphs). Each phase's exit status is `j0 mini run`'s.
set -euo pipefail

results=${1:?usage: scripts/mini-h200.sh RESULTS [all|train|base|mask7|j07|mask15|j015|run7|run15]}
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
    --max-tokens "${MINI_MAX_TOKENS:-256}" "${contexts[@]}" "${extra[@]}" \
    2>&1 | tee -a "$results/run.log" || status=$?
  # everything but the dumps themselves (dumps-sha256.txt and dumps-check.json stay beside them)
  mkdir -p "$results/run"
  (cd "$work/run" && find . -path '*/dumps' -prune -o -type f -print0 \
    | xargs -0 cp --parents -t "$results/run")
  return "$status"
}

case $phase in
  train) train ;;
  base) run_part baseline,ngram 7,15 ;;
  mask7) run_part mask 7 ;;
  j07) run_part j0 7 ;;
  mask15) run_part mask 15 ;;
  j015) run_part j0 15 ;;
  run7) status=0; run_part mask 7 || status=$?; run_part j0 7 || status=$?; exit "$status" ;;
  run15) status=0; run_part mask 15 || status=$?; run_part j0 15 || status=$?; exit "$status" ;;
  all)
    train
    status=0
    for part in "baseline,ngram 7,15" "mask 7" "j0 7" "mask 15" "j0 15"; do
      read -r parts tokens <<< "$part"
      run_part "$parts" "$tokens" || status=$?
    done
    exit "$status"
    ;;
  *)
    echo "mini-h200.sh: phase $phase: expected all, train, base, mask7, j07, mask15, j015," \
      "run7 or run15" >&2
    exit 64
    ;;
esac
