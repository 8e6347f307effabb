#!/usr/bin/env bash
# The miniature on one H200 (docs/mini.md): `j0 mini train`, then `j0 mini run --here` for 7 and
# for 15 draft tokens, each step a command of its own (each under 10 minutes), results into $1.
#
#   scripts/mini-h200.sh RESULTS [all|train|run7|run15]
#
# Run from the checkout, with vLLM 0.33's Python files (the article's speculator.py installed)
# already on PYTHONPATH. The models go to $MINI_WORK (default /tmp/mini, which must not exist yet
# for `train`); $MINI_BUDGET seconds per model (default 140); $MINI_TRAIN_ARGS more flags for
# `j0 mini train`, e.g. "--draft-data generated" (the drafters on the target's own text).
set -euo pipefail

results=${1:?usage: scripts/mini-h200.sh RESULTS [all|train|run7|run15]}
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

run_k() {
  local k=$1
  local status=0
  python3 -m j0 mini run "$work" --here --tokens "$k" --contexts 256,1024,2048 --requests 4 \
    --max-tokens 256 --run-dir "$work/run-k$k" 2>&1 | tee "$results/run-k$k.log" || status=$?
  # everything but the dumps themselves (j0 dumps check's verdicts are in mini-run.json)
  mkdir -p "$results/run-k$k"
  (cd "$work/run-k$k" && find . -path '*/dumps' -prune -o -type f -print0 \
    | xargs -0 cp --parents -t "$results/run-k$k")
  return "$status"
}

case $phase in
  train) train ;;
  run7) run_k 7 ;;
  run15) run_k 15 ;;
  all) train && run_k 7 && run_k 15 ;;
  *) echo "mini-h200.sh: phase $phase: expected all, train, run7 or run15" >&2; exit 64 ;;
esac
