#!/usr/bin/env bash
# One model set of the miniature on one lent GPU (issue 54): train it in the background, wait for
# it, then run it and pack the results, each stage one command inside a 10-minute call; only /tmp
# survives between calls, and a process started with setsid keeps running between them.
#
#   scripts/mini-gpu.sh train [OPTIONS]   start `j0 mini train` in the background (setsid); returns
#                                         at once; the log: WORK/train.log, the exit status:
#                                         WORK/train.rc once it ends
#   scripts/mini-gpu.sh wait  [OPTIONS]   print the training's progress every 20 s until it ends
#                                         (its exit status) or --timeout passes (exit 75)
#   scripts/mini-gpu.sh run   [OPTIONS]   `j0 mini run` of the trained set: the acceptance part
#                                         (baseline, n-gram, mask J0 off, J0-trained J0 off and
#                                         on, --tokens draft tokens, all at once on the GPU),
#                                         then the speed part (`j0 mini speed`: one server
#                                         measured at a time, CUDA graphs, repeats interleaved),
#                                         then pack
#   scripts/mini-gpu.sh pack  [OPTIONS]   pack what WORK holds into OUTDIR (at most 8 files)
#
# Options (every stage takes them all; each has a default):
#   --seed N            the training seed, and the set's name: seedN (default 0)
#   --work DIR          where the set lives (default /tmp/mini-gpu/seedN)
#   --site DIR          vLLM 0.33's files (scripts/gpu-engine/install's SITE; default /tmp/site):
#                       first on PYTHONPATH (dflash comes from there too)
#   --out DIR           where pack writes (default $OUT where set, else WORK/out)
#   --target-budget S   the target's seconds (default 200)
#   --gen-budget S      at most this many seconds for the generated rows (default 90)
#   --budget S          seconds per drafter (default 110)
#   --rows N            generated rows asked (default 49152)
#   --train-args "..."  more flags for `j0 mini train` (e.g. "--smoke --device cpu")
#   --timeout S         wait: give up after S seconds (default 560)
#   --contexts LIST     the run's contexts (default 512,2048,4096)
#   --requests N        prompts per context (default 48)
#   --long-requests N   prompts at the longest context (default 200)
#   --tokens K          draft tokens (default 7)
#   --servers N         acceptance settings served at once (default 5: all of them)
#   --speed-prompts N   prompts of the speed part (default 24, from the run's own)
#   --speed-repeats N   rounds of the speed part, the settings interleaved in each (default 3)
#   --speed-time S      leave the speed part out where less than S seconds of the call are left
#                       after the acceptance part (default 0: always run it)
#   --run-args "..."    more flags for `j0 mini run` (e.g. "--crosscheck-requests 6")
#   --speed-args "..."  more flags for `j0 mini speed`
#
# Run from the checkout. Before `train`, vLLM's files must be in SITE:
#   eval "$(scripts/gpu-engine/install DIR /tmp/site)"
# Exit status: train 0 once started (64: bad options or WORK in use); wait the training's own
# (75: still running); run `j0 mini run`'s (then the speed part's where that one failed); pack 0.
set -euo pipefail

usage() {
  sed -n '2,45p' "$0" >&2
  exit 64
}

stage=${1:-}
[[ $stage =~ ^(train|wait|run|pack)$ ]] || usage
shift
seed=0 work="" site=/tmp/site outdir=${OUT:-} target_budget=200 gen_budget=90 budget=110
rows=49152 train_args="" timeout=560 contexts=512,2048,4096 requests=48 long_requests=200
tokens=7 servers=5 speed_prompts=24 speed_repeats=3 speed_time=0 run_args="" speed_args=""
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "mini-gpu.sh: $1 needs a value" >&2; exit 64; }
  case $1 in
    --seed) seed=$2 ;;
    --work) work=$2 ;;
    --site) site=$2 ;;
    --out) outdir=$2 ;;
    --target-budget) target_budget=$2 ;;
    --gen-budget) gen_budget=$2 ;;
    --budget) budget=$2 ;;
    --rows) rows=$2 ;;
    --train-args) train_args=$2 ;;
    --timeout) timeout=$2 ;;
    --contexts) contexts=$2 ;;
    --requests) requests=$2 ;;
    --long-requests) long_requests=$2 ;;
    --tokens) tokens=$2 ;;
    --servers) servers=$2 ;;
    --speed-prompts) speed_prompts=$2 ;;
    --speed-repeats) speed_repeats=$2 ;;
    --speed-time) speed_time=$2 ;;
    --run-args) run_args=$2 ;;
    --speed-args) speed_args=$2 ;;
    *) echo "mini-gpu.sh: unknown option $1" >&2; usage ;;
  esac
  shift 2
done
for value in "$seed" "$rows" "$timeout" "$requests" "$long_requests" "$tokens" "$servers" \
  "$speed_prompts" "$speed_repeats" "$speed_time"; do
  [[ $value =~ ^[0-9]+$ ]] || { echo "mini-gpu.sh: '$value': expected a whole number" >&2; exit 64; }
done
for value in "$target_budget" "$gen_budget" "$budget"; do
  [[ $value =~ ^[0-9]+([.][0-9]+)?$ ]] || {
    echo "mini-gpu.sh: budget '$value': expected seconds" >&2
    exit 64
  }
done
work=${work:-/tmp/mini-gpu/seed$seed}
outdir=${outdir:-$work/out}
models=$work/models
export PYTHONPATH="$site:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1

train() {
  local extra
  if [[ -e $models || -e $work/train.pid ]]; then
    echo "mini-gpu.sh: $work already holds a training (models or train.pid); use another" \
      "--work or --seed (nothing is overwritten)" >&2
    exit 64
  fi
  mkdir -p "$work"
  read -r -a extra <<< "$train_args"
  # setsid: the training outlives this command; its exit status goes to train.rc (the inner
  # shell expands $0 and $@, the work folder and the training's arguments)
  # shellcheck disable=SC2016
  setsid nohup bash -c 'python3 -m j0 mini train "$@" > "$0/train.log" 2>&1; echo $? > "$0/train.rc"' \
    "$work" "$models" --seed "$seed" --target-budget "$target_budget" --gen-budget "$gen_budget" \
    --budget "$budget" --rows "$rows" --no-progress "${extra[@]}" \
    < /dev/null > /dev/null 2>&1 &
  echo $! > "$work/train.pid"
  echo "==> mini-gpu.sh: training seed $seed in the background (pid $(cat "$work/train.pid"));" \
    "log $work/train.log; then: scripts/mini-gpu.sh wait --seed $seed"
}

wait_training() {
  local waited=0
  [[ -f $work/train.pid ]] || { echo "mini-gpu.sh: no training in $work (train first)" >&2; exit 64; }
  while [[ ! -f $work/train.rc ]]; do
    if ((waited >= timeout)); then
      echo "==> mini-gpu.sh: still training after ${waited} s; wait again" >&2
      exit 75
    fi
    sleep 20
    waited=$((waited + 20))
    echo "--- ${waited} s: $(grep -E '^(==>|    )' "$work/train.log" 2>/dev/null | tail -n 1)"
  done
  cat "$work/train.log"
  return "$(cat "$work/train.rc")"
}

run_set() {
  local status=0 extra speed_extra started left
  [[ -f $models/mini.json ]] || { echo "mini-gpu.sh: $models has no mini.json (train, wait)" >&2; exit 64; }
  read -r -a extra <<< "$run_args"
  read -r -a speed_extra <<< "$speed_args"
  started=$SECONDS
  python3 -m j0 mini run "$models" --here --run-dir "$work/run" --tokens "$tokens" \
    --contexts "$contexts" --requests "$requests" --long-requests "$long_requests" \
    --parts baseline,ngram,mask-off,j0-off,j0-on --j0-seeds 20261031 --servers "$servers" \
    "${extra[@]}" 2>&1 | tee "$work/run.log" || status=$?
  left=$((600 - (SECONDS - started)))
  if ((speed_time == 0 || left >= speed_time)); then
    python3 -m j0 mini speed "$models" --run-dir "$work/run" --tokens "$tokens" \
      --prompts "$speed_prompts" --repeats "$speed_repeats" "${speed_extra[@]}" 2>&1 \
      | tee "$work/speed.log" || { ((status != 0)) || status=$?; }
  else
    echo "==> mini-gpu.sh: speed part left out (${left} s left, --speed-time $speed_time)" \
      | tee "$work/speed.log"
  fi
  pack
  return "$status"
}

pack() {
  local name=mini-gpu-seed$seed
  mkdir -p "$outdir"
  # the whole set but the weights and the dumps (dumps-sha256.txt and dumps-check.json stay)
  tar -C "$work" --exclude='*.safetensors' --exclude='*/dumps' --exclude='out' \
    -cJf "$outdir/$name.tar.xz" .
  for file in models/mini.json run/mini-run.json run/mini-run.md run/speed.json run/speed.md; do
    if [[ -f $work/$file ]]; then cp "$work/$file" "$outdir/$name-${file##*/}"; fi
  done
  echo "==> mini-gpu.sh: packed into $outdir:"
  find "$outdir" -maxdepth 1 -type f -printf '    %f (%s bytes)\n'

}

case $stage in
  train) train ;;
  wait) wait_training ;;
  run) run_set ;;
  pack) pack ;;
esac
