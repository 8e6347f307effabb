#!/usr/bin/env bash
# One model set of the miniature on one lent GPU (issue 54): train it in the background, wait for
# it, then run it and pack the results, each stage one command inside a 10-minute call; only /tmp
# survives between calls, and a process started with setsid keeps running between them.
#
#   scripts/mini-gpu.sh train [OPTIONS]     start `j0 mini train` in the background (setsid);
#                                           returns at once; log WORK/train.log, exit status
#                                           WORK/train.rc once it ends
#   scripts/mini-gpu.sh wait  [OPTIONS]     print the training's progress every 20 s until it
#                                           ends (its exit status) or --timeout passes (exit 75)
#   scripts/mini-gpu.sh run   [OPTIONS]     start the run in the background (setsid): `accept`,
#                                           then `speed` (unless --speed no), then `scenarios`
#                                           (where --scenarios names a folder), then `pack` (log
#                                           WORK/run.log, exit status WORK/run.rc); returns at once
#   scripts/mini-gpu.sh wait-run [OPTIONS]  wait for it as `wait` does; once it has ended, copy
#                                           the packed results into OUTDIR and print them
#   scripts/mini-gpu.sh accept [OPTIONS]    (in the foreground) `j0 mini run` of the trained set:
#                                           baseline, n-gram, mask J0 off, J0-trained J0 off and
#                                           on, --tokens draft tokens, all at once on the GPU
#   scripts/mini-gpu.sh speed  [OPTIONS]    (in the foreground) `j0 mini speed`: baseline,
#                                           n-gram and the best DFlash setting, CUDA graphs, one
#                                           server sent requests at a time, repeats interleaved
#   scripts/mini-gpu.sh scenarios [OPTIONS] (in the foreground) the serving scenarios with this
#                                           set's target and J0-trained drafter (issue 54, item
#                                           7): scripts/engine-scenarios-h200.sh --scenarios DIR
#                                           with ROOMY=1 (its seven servers and the one whose KV
#                                           cache holds four requests), SITE --site
#   scripts/mini-gpu.sh pack   [OPTIONS]    pack the set (no weights, no dumps; the scenarios'
#                                           folder as mini-gpu-seedN-scenarios.tar.xz where there
#                                           is one) into WORK/out and copy that into OUTDIR (at
#                                           most 7 files)
#   scripts/mini-gpu.sh bring  [OPTIONS]    the trained set WITH its weights (models/, train.log,
#                                           train.rc), cut once into WORK/bring as
#                                           mini-gpu-seedN-set.tar.partNN of --part-mib MiB and
#                                           its .sha256 (the whole's sum and each part's); copies
#                                           the .sha256 and the parts --parts names into OUTDIR
#                                           and prints the command for the rest: a set trained
#                                           in one stretch of the machine, run in a later one
#   scripts/mini-gpu.sh land   [OPTIONS]    all those parts (in --from) checked by sha256 and
#                                           unpacked into WORK, which must hold no models yet;
#                                           then `run`
#
# Options (every stage takes them all; each has a default):
#   --seed N            the training seed, and the set's name: seedN (default 0)
#   --work DIR          where the set lives (default /tmp/mini-gpu/seedN)
#   --site DIR          vLLM 0.33's files (scripts/gpu-engine/install's SITE; default /tmp/site):
#                       first on PYTHONPATH (dflash comes from there too)
#   --out DIR           OUTDIR: where wait-run and pack copy the results (default $OUT where
#                       set, else WORK/out)
#   --target-budget S   the target's seconds (default 180)
#   --gen-budget S      at most this many seconds for the generated rows (default 80)
#   --budget S          seconds per drafter (default 100)
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
#   --run-args "..."    more flags for `j0 mini run` (e.g. "--crosscheck-requests 6")
#   --speed-args "..."  more flags for `j0 mini speed`
#   --speed yes|no      run: the speed part or not (default yes; one clean speed measurement is
#                       enough for the miniature, and a stretch without it has room for the
#                       scenarios)
#   --scenarios DIR     run and scenarios: the serving scenarios' RESULTS folder (default none:
#                       run leaves them out; scenarios needs it), a folder that must not exist
#                       or be empty
#   --scenario-args ".." more words for scripts/engine-scenarios-h200.sh after DIR (--dry-run)
#   --part-mib N        bring: MiB a part (default 15, or the size WORK/bring was cut in). A call
#                       of a lent machine gives back at most 8 files, each at most 16 MiB, and
#                       64 MiB together: a set of 73 MiB takes two calls
#   --parts SPEC        bring: the parts to copy into OUTDIR: FIRST-LAST, N, all, or FIRST- (from
#                       FIRST, as many as stay at most 60 MiB and 7 parts with the .sha256: what
#                       one call gives back; the default 0-)
#   --from DIR          land: where the parts are (default OUTDIR)
#
# Run from the checkout. Before `train`, vLLM's files must be in SITE:
#   eval "$(scripts/gpu-engine/install DIR /tmp/site)"
# Exit status: train and run 0 once started (64: bad options, WORK in use, nothing trained);
# wait and wait-run the job's own (75: still running); accept `j0 mini run`'s, speed `j0 mini
# speed`'s, pack and bring 0 (64: nothing trained; bring: a part in OUTDIR already, --parts
# beyond the set, --part-mib not the one WORK/bring was cut in); land 0 (64: no parts, WORK
# holds models; 2: a part missing, named where the .sha256 lists them, or the parts' sha256 not
# the recorded one); scenarios the script's own. A background run's status is accept's, else
# speed's, else the scenarios' where the parts before passed.
set -euo pipefail

usage() {  # the header: line 2 up to `set -euo pipefail`
  awk 'NR > 1 && /^set -euo pipefail$/ {exit} NR > 1' "$0" >&2
  exit 64
}

stage=${1:-}
[[ $stage =~ ^(train|wait|run|wait-run|accept|speed|scenarios|pack|bring|land|run-here)$ ]] || usage
shift
options=("$@")
seed=0 work="" site=/tmp/site outdir=${OUT:-} target_budget=180 gen_budget=80 budget=100
rows=49152 train_args="" timeout=560 contexts=512,2048,4096 requests=48 long_requests=200
tokens=7 servers=5 speed_prompts=24 speed_repeats=3 run_args="" speed_args="" part_mib="" from=""
parts_spec=0- out_given="" speed_part=yes scenarios="" scenario_args=""
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "mini-gpu.sh: $1 needs a value" >&2; exit 64; }
  case $1 in
    --seed) seed=$2 ;;
    --work) work=$2 ;;
    --site) site=$2 ;;
    --out) outdir=$2 out_given=1 ;;
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
    --run-args) run_args=$2 ;;
    --speed-args) speed_args=$2 ;;
    --part-mib) part_mib=$2 ;;
    --parts) parts_spec=$2 ;;
    --from) from=$2 ;;
    --speed) speed_part=$2 ;;
    --scenarios) scenarios=$2 ;;
    --scenario-args) scenario_args=$2 ;;
    *) echo "mini-gpu.sh: unknown option $1" >&2; usage ;;
  esac
  shift 2
done
for value in "$seed" "$rows" "$timeout" "$requests" "$long_requests" "$tokens" "$servers" \
  "$speed_prompts" "$speed_repeats" "${part_mib:-15}"; do
  [[ $value =~ ^[0-9]+$ ]] || { echo "mini-gpu.sh: '$value': expected a whole number" >&2; exit 64; }
done
[[ $speed_part =~ ^(yes|no)$ ]] || {
  echo "mini-gpu.sh: --speed '$speed_part': expected yes or no" >&2
  exit 64
}
[[ $parts_spec =~ ^(all|[0-9]+(-[0-9]*)?)$ ]] || {
  echo "mini-gpu.sh: --parts '$parts_spec': expected FIRST-LAST, N, all or FIRST-" >&2
  exit 64
}
for value in "$target_budget" "$gen_budget" "$budget"; do
  [[ $value =~ ^[0-9]+([.][0-9]+)?$ ]] || {
    echo "mini-gpu.sh: budget '$value': expected seconds" >&2
    exit 64
  }
done
work=${work:-/tmp/mini-gpu/seed$seed}
outdir=${outdir:-$work/out}
from=${from:-$outdir}
models=$work/models
export PYTHONPATH="$site:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
export VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1

background() {  # background JOB COMMAND...: COMMAND in its own session, WORK/JOB.log, .rc
  local job=$1
  shift
  # setsid: the job outlives this command; the inner shell expands $0 (the work folder), $1 (the
  # job's name) and the command after them
  # shellcheck disable=SC2016
  setsid nohup bash -c 'job=$1; shift; "$@" > "$0/$job.log" 2>&1; echo $? > "$0/$job.rc"' \
    "$work" "$job" "$@" < /dev/null > /dev/null 2>&1 &
  echo $! > "$work/$job.pid"
}

train() {
  local extra
  if [[ -e $models || -e $work/train.pid ]]; then
    echo "mini-gpu.sh: $work already holds a training (models or train.pid); use another" \
      "--work or --seed (nothing is overwritten)" >&2
    exit 64
  fi
  mkdir -p "$work"
  read -r -a extra <<< "$train_args"
  background train python3 -m j0 mini train "$models" --seed "$seed" \
    --target-budget "$target_budget" --gen-budget "$gen_budget" --budget "$budget" \
    --rows "$rows" --no-progress "${extra[@]}"
  echo "==> mini-gpu.sh: training seed $seed in the background (pid $(cat "$work/train.pid"));" \
    "log $work/train.log; then: scripts/mini-gpu.sh wait --seed $seed"
}

wait_job() {  # wait_job JOB: progress every 20 s until WORK/JOB.rc; its status (75: not yet)
  local job=$1 waited=0
  [[ -f $work/$job.pid ]] || { echo "mini-gpu.sh: no $job job in $work" >&2; exit 64; }
  while [[ ! -f $work/$job.rc ]]; do
    if ((waited >= timeout)); then
      echo "==> mini-gpu.sh: $job still running after ${waited} s; wait again" >&2
      exit 75
    fi
    sleep 20
    waited=$((waited + 20))
    echo "--- ${waited} s: $(grep -E '^(==>|    )' "$work/$job.log" 2>/dev/null | tail -n 1)"
  done
  cat "$work/$job.log"
  return "$(cat "$work/$job.rc")"
}

trained() {
  [[ -f $models/mini.json ]] || {
    echo "mini-gpu.sh: $models has no mini.json (train, then wait)" >&2
    exit 64
  }
}

run() {
  trained
  if [[ -e $work/run.pid || -e $work/run ]]; then
    echo "mini-gpu.sh: $work already holds a run (run.pid or run/); nothing is overwritten" >&2
    exit 64
  fi
  background run bash "$0" run-here "${options[@]}"
  echo "==> mini-gpu.sh: run of seed $seed in the background (pid $(cat "$work/run.pid"));" \
    "log $work/run.log; then: scripts/mini-gpu.sh wait-run --seed $seed"
}

accept() {
  local extra
  trained
  read -r -a extra <<< "$run_args"
  python3 -m j0 mini run "$models" --here --run-dir "$work/run" --tokens "$tokens" \
    --contexts "$contexts" --requests "$requests" --long-requests "$long_requests" \
    --parts baseline,ngram,mask-off,j0-off,j0-on --j0-seeds 20261031 --servers "$servers" \
    "${extra[@]}"
}

speed() {
  local extra
  trained
  read -r -a extra <<< "$speed_args"
  python3 -m j0 mini speed "$models" --run-dir "$work/run" --tokens "$tokens" \
    --prompts "$speed_prompts" --repeats "$speed_repeats" "${extra[@]}"
}

scenarios_here() {  # the serving scenarios with this set's target and J0-trained drafter
  local extra
  trained
  [[ -n $scenarios ]] || {
    echo "mini-gpu.sh: scenarios needs --scenarios DIR (the results folder)" >&2
    exit 64
  }
  read -r -a extra <<< "$scenario_args"
  ROOMY=1 SITE="$site" TARGET="$models/target" DRAFT="$models/drafter-j0" \
    WORK="$work/scenarios-work" "$(dirname "$0")/engine-scenarios-h200.sh" "$scenarios" "${extra[@]}"
}
run_here() {  # the background run: accept, speed, scenarios, pack
  local status=0
  echo "==> mini-gpu.sh: accept ($(date -u +%H:%M:%S))"
  accept || status=$?
  if [[ $speed_part == yes ]]; then
    echo "==> mini-gpu.sh: speed ($(date -u +%H:%M:%S))"
    speed || { ((status != 0)) || status=$?; }
  fi
  if [[ -n $scenarios ]]; then
    echo "==> mini-gpu.sh: scenarios into $scenarios ($(date -u +%H:%M:%S))"
    scenarios_here || { ((status != 0)) || status=$?; }
  fi
  pack_here
  echo "==> mini-gpu.sh: done ($(date -u +%H:%M:%S)), exit $status"
  return "$status"
}

pack_here() {  # the set without weights or dumps into WORK/out
  local name=mini-gpu-seed$seed
  rm -rf "$work/out" && mkdir -p "$work/out"
  # dumps-sha256.txt and dumps-check.json stay beside the dumps they describe
  tar -C "$work" --exclude='*.safetensors' --exclude='*/dumps' --exclude='./out' \
    --exclude='./bring' --exclude='./bring.new' --exclude='./scenarios-work' \
    -cJf "$work/out/$name.tar.xz" .
  for file in models/mini.json run/mini-run.json run/mini-run.md run/speed.json run/speed.md; do
    if [[ -f $work/$file ]]; then cp "$work/$file" "$work/out/$name-${file##*/}"; fi
  done
  if [[ -n $scenarios && -d $scenarios ]]; then  # the audit's records and logs, no weights
    tar -C "$(dirname "$scenarios")" --exclude='*.safetensors' --exclude='*.pt' \
      -cJf "$work/out/$name-scenarios.tar.xz" "$(basename "$scenarios")"
  fi
}

copy_out() {  # WORK/out into OUTDIR (the same folder where OUTDIR is WORK/out)
  mkdir -p "$outdir"
  if [[ "$(cd "$outdir" && pwd)" != "$(cd "$work/out" && pwd)" ]]; then
    cp "$work/out"/* "$outdir/"
  fi
  echo "==> mini-gpu.sh: the results in $outdir:"
  find "$outdir" -maxdepth 1 -type f -printf '    %f (%s bytes)\n'
}

wait_run() {
  local status=0
  wait_job run || status=$?
  ((status == 75)) && exit 75
  [[ -d $work/out ]] && copy_out
  return "$status"
}

set_name=mini-gpu-seed$seed-set
mib=1048576
# what one call of a lent machine gives back: 8 files, each at most 16 MiB, 64 MiB together;
# bring's FIRST- fills a call up to 60 MiB, its .sha256 included
call_files=8 call_file_mib=16 call_mib=64 fill_mib=60

cut_set() {  # the set cut into WORK/bring, once: every later bring copies the same bytes
  local cut=$work/bring kept=(models) file parts
  if [[ -f $cut/$set_name.sha256 ]]; then
    file=$(cat "$cut/part-mib")
    if [[ -n $part_mib && $part_mib != "$file" ]]; then
      echo "mini-gpu.sh: $cut holds the set cut in parts of $file MiB (an earlier bring);" \
        "bring with --part-mib $file, or remove $cut to cut it again" >&2
      exit 64
    fi
    part_mib=$file
    return
  fi
  part_mib=${part_mib:-15}
  ((part_mib > 0)) || { echo "mini-gpu.sh: --part-mib 0: expected at least 1" >&2; exit 64; }
  for file in train.log train.rc; do [[ -f $work/$file ]] && kept+=("$file"); done
  rm -rf "$cut.new" && mkdir -p "$cut.new"
  tar -C "$work" -cf - "${kept[@]}" | split -b "${part_mib}M" -d -a 2 - "$cut.new/$set_name.tar.part"
  parts=("$cut.new/$set_name".tar.part*)
  {  # sha256sum's format: the whole tar's sum first (land checks it), then each part's
    echo "$(cat "${parts[@]}" | sha256sum | cut -d' ' -f1)  $set_name.tar"
    (cd "$cut.new" && sha256sum "$set_name".tar.part*)
  } > "$cut.new/$set_name.sha256"
  echo "$part_mib" > "$cut.new/part-mib"
  mv "$cut.new" "$cut"
}

choose_parts() {  # first and last (globals) of --parts among the N parts in WORK/bring
  local n=$1 used size
  if [[ $parts_spec == all ]]; then
    first=0 last=$((n - 1))
    return
  fi
  [[ $parts_spec =~ ^([0-9]+)(-([0-9]*))?$ ]]
  first=$((10#${BASH_REMATCH[1]})) last=$first
  if [[ -n ${BASH_REMATCH[3]} ]]; then last=$((10#${BASH_REMATCH[3]})); fi
  if ((first > last || last >= n)); then
    echo "mini-gpu.sh: --parts $parts_spec: seed $seed's set has $n parts," \
      "00-$(printf %02d $((n - 1))) (of $part_mib MiB)" >&2
    exit 64
  fi
  [[ $parts_spec == *- ]] || return 0
  used=$(($(stat -c %s "$work/bring/$set_name.sha256") + $(part_size "$first")))
  while ((last + 1 < n && last + 2 - first < call_files)); do  # parts and .sha256: 8 files
    size=$(part_size $((last + 1)))
    ((used + size <= fill_mib * mib)) || break
    last=$((last + 1)) used=$((used + size))
  done
}

part_name() { printf '%s.tar.part%02d' "$set_name" "$1"; }  # part N's file name
part_size() { stat -c %s "$work/bring/$(part_name "$1")"; }

call_limits() {  # warn where OUTDIR holds more than a call of a lent machine gives back
  local files bytes big
  files=$(find "$outdir" -type f | wc -l)
  bytes=$(find "$outdir" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  big=$(find "$outdir" -type f -size +$((call_file_mib * mib))c -printf ' %f')
  if ((files > call_files || bytes > call_mib * mib)) || [[ -n $big ]]; then
    [[ -z $big ]] || big="; over $call_file_mib MiB:$big"
    echo "mini-gpu.sh: warning: $outdir holds $files files, $((bytes / mib)) MiB$big: a call" \
      "of a lent machine gives back at most $call_files files, each at most $call_file_mib MiB," \
      "$call_mib MiB together" >&2
  fi
}

bring() {  # the trained set with its weights, cut into parts; some of them and the sha256
  local cut=$work/bring parts n first last i name next shown
  trained
  cut_set
  parts=("$cut/$set_name".tar.part*)
  n=${#parts[@]}
  choose_parts "$n"
  for ((i = first; i <= last; i++)); do
    name=$(part_name "$i")
    if [[ -e $outdir/$name ]]; then
      echo "mini-gpu.sh: $outdir already holds $name; nothing is overwritten" >&2
      exit 64
    fi
  done
  if [[ -e $outdir/$set_name.sha256 ]] && ! cmp -s "$cut/$set_name.sha256" "$outdir/$set_name.sha256"
  then
    echo "mini-gpu.sh: $outdir already holds another cut's $set_name.sha256; nothing is" \
      "overwritten" >&2
    exit 64
  fi
  mkdir -p "$outdir"
  for ((i = first; i <= last; i++)); do
    cp "$cut/$(part_name "$i")" "$outdir/"
  done
  cp "$cut/$set_name.sha256" "$outdir/"
  echo "==> mini-gpu.sh: seed $seed's set: parts $(printf '%02d-%02d' "$first" "$last") of $n" \
    "(00-$(printf %02d $((n - 1))), at most $part_mib MiB each; cut in $cut) and" \
    "$set_name.sha256 in $outdir"
  if ((last + 1 < n)); then
    next=(scripts/mini-gpu.sh bring --seed "$seed")
    [[ $work == "/tmp/mini-gpu/seed$seed" ]] || next+=(--work "$work")
    [[ -z $out_given ]] || next+=(--out "$outdir")
    printf -v shown '%q ' "${next[@]}" --parts "$((last + 1))-"
    echo "    the rest, in the next call: ${shown% }"
  else
    echo "    once all $n parts are in one folder, on the next machine:" \
      "scripts/mini-gpu.sh land --seed $seed --from DIR"
  fi
  call_limits
}

part_sums() {  # the parts' names and sums the .sha256 lists (none in a whole-only one)
  sed -n "s/^\([0-9a-f]\{64\}\)  \($set_name\.tar\.part[0-9][0-9]*\)\$/\2 \1/p" "$1"
}

land() {  # the parts of bring, checked and unpacked into WORK
  local parts expected actual listed name sum missing="" damaged="" unlisted=""
  if ! compgen -G "$from/$set_name.tar.part*" > /dev/null || [[ ! -f $from/$set_name.sha256 ]]; then
    echo "mini-gpu.sh: $from holds no $set_name.tar.partNN and $set_name.sha256 (bring makes" \
      "them)" >&2
    exit 64
  fi
  if [[ -e $models ]]; then
    echo "mini-gpu.sh: $work already holds models; use another --work (nothing is overwritten)" >&2
    exit 64
  fi
  listed=$(part_sums "$from/$set_name.sha256")
  while read -r name sum; do
    [[ -z $name || -f $from/$name ]] || missing+=" ${name##*.tar.}"
  done <<< "$listed"  # (one empty line where the .sha256 lists no parts: an older bring's)
  if [[ -n $missing ]]; then
    echo "mini-gpu.sh: $from lacks$missing of the $(wc -l <<< "$listed") parts its" \
      "$set_name.sha256 lists (bring --parts N gives part N where the set is); nothing" \
      "unpacked" >&2
    exit 2
  fi
  parts=("$from/$set_name".tar.part*)
  expected=$(head -n 1 "$from/$set_name.sha256" | cut -d' ' -f1)
  actual=$(cat "${parts[@]}" | sha256sum | cut -d' ' -f1)
  if [[ $actual != "$expected" ]]; then
    if [[ -n $listed ]]; then  # which part, by the parts' own sums
      while read -r name sum; do
        [[ $(sha256sum < "$from/$name" | cut -d' ' -f1) == "$sum" ]] || damaged+=" ${name##*.tar.}"
      done <<< "$listed"
      for name in "${parts[@]}"; do
        grep -q "^${name##*/} " <<< "$listed" || unlisted+=" ${name##*.tar.}"
      done
      [[ -z $damaged ]] || damaged="; damaged (its own sum differs):$damaged"
      [[ -z $unlisted ]] || unlisted="; not in the .sha256:$unlisted"
    fi
    echo "mini-gpu.sh: the ${#parts[@]} parts $from/$set_name.tar.part* give sha256 $actual;" \
      "expected $expected ($from/$set_name.sha256): a part is missing or damaged$damaged$unlisted" >&2
    exit 2
  fi
  mkdir -p "$work"
  cat "${parts[@]}" | tar -C "$work" --no-same-owner -xf -
  trained
  echo "==> mini-gpu.sh: seed $seed's set from ${#parts[@]} parts in $work (sha256 $actual);" \
    "then: scripts/mini-gpu.sh run --seed $seed"
}

case $stage in
  train) train ;;
  bring) bring ;;
  land) land ;;
  wait) wait_job train ;;
  run) run ;;
  wait-run) wait_run ;;
  accept) accept ;;
  speed) speed ;;
  scenarios) scenarios_here ;;
  pack) pack_here && copy_out ;;
  run-here) run_here ;;
esac
