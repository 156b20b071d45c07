#!/usr/bin/env bash
# young_daly.sh — what checkpoints at Daly's interval cost a whole heat2d_pcm run, side by
# side in one run: no checkpoints; PCM_CHECKPOINT_MTBF=M (PCM_Adapt writes versions by itself at
# Daly's interval for the measured cost); and a fixed interval (--commit-every K, the application
# choosing its own moments, K small: the frequent checkpointing FTI reports 8 % overhead for).
# Each variant runs REPEATS times, interleaved, under a private pcmd; prints per run the time, the
# versions written and their mean spacing, then the medians, each variant's overhead against no
# checkpoints, and the expected work lost per failure (half the spacing) beside it.
# Environment: BENCH_N (grid side, 2048), BENCH_ITERS (3000), BENCH_MTBF (60 s), BENCH_EVERY (100),
# BENCH_REPEATS (3), BENCH_NP (2); BENCH_QUICK=1: 512, 300 iterations, 1 repeat.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
  n=${BENCH_N:-512} iters=${BENCH_ITERS:-300} repeats=${BENCH_REPEATS:-1}
else
  n=${BENCH_N:-2048} iters=${BENCH_ITERS:-3000} repeats=${BENCH_REPEATS:-3}
fi
mtbf=${BENCH_MTBF:-60} every=${BENCH_EVERY:-100} np=${BENCH_NP:-2}
bench_start_pcmd
heat=$B/examples/heat2d/heat2d_pcm
args=(--nx "$n" --ny "$n" --iters "$iters")
plain=$("${MPIEXEC:-mpiexec}" -n "$np" "$B/examples/heat2d/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')

# run VARIANT K: one run, its checksum checked against the plain run's; prints "VARIANT seconds".
run() {
  local variant=$1 k=$2 job="yd-$1-$2" out="$tmp/$1-$2.out" extra=() envs=()
  case $variant in
    mtbf) envs=(PCM_CHECKPOINT_MTBF="$mtbf") ;;
    fixed) extra=(--commit-every "$every") ;;
  esac
  local t0 t1
  t0=$(date +%s.%N)
  env "${envs[@]}" PCM_JOB="$job" PCM_LOG_LEVEL=info "${MPIEXEC:-mpiexec}" -n "$np" "$heat" \
    "${args[@]}" "${extra[@]}" >"$out" 2>&1
  t1=$(date +%s.%N)
  local sum
  sum=$(awk '/^checksum/ {print $2}' "$out")
  [ "$sum" = "$plain" ] || { echo "bench_young_daly: $job: checksum $sum, plain $plain" >&2; exit 1; }
  echo "$variant $(bench_py diff --digits 3 "$t1" "$t0")"
}

echo "heat2d_pcm ${n}x${n}, $iters iterations on $np processes; MTBF $mtbf s; fixed: every $every iterations"
results=$tmp/results.txt
: >"$results"
for ((k = 1; k <= repeats; k++)); do
  for variant in none mtbf fixed; do
    line=$(run "$variant" "$k")
    echo "run $k: $line s"
    echo "$line" >>"$results"
  done
done
# Versions written: pcmd keeps only the newest few, so the count comes from the logs.
bench_table young_daly "$results" "$tmp" "$iters" "$every"
