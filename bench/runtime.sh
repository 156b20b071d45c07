#!/usr/bin/env bash
# Benchmarks of the runtime core, side by side in one run (set up like the README commands):
#  1. PCM_Status per call against the bare MPI_Bcast it uses and an empty loop, with its
#     agreement window off (a broadcast at every call) and at its default;
#  2. heat2d plain against heat2d with PCM (no reconfiguration): time per iteration, overhead;
#  3. the time of a migration (several in one heat2d run).
# Environment: BENCH_NP (2), BENCH_REPS (5), BENCH_NX/BENCH_NY (512), BENCH_ITERS (10000),
# BENCH_MIGRATIONS (5), BENCH_PARTS ("1 2 3": which of the three to run).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
np=${BENCH_NP:-2} reps=${BENCH_REPS:-5} iters=${BENCH_ITERS:-10000}
mesh=(--nx "${BENCH_NX:-512}" --ny "${BENCH_NY:-512}")
bench_start_pcmd

parts=" ${BENCH_PARTS:-1 2 3} "
if [[ $parts == *" 1 "* ]]; then
echo "== 1. PCM_Status per call ($np processes, $reps repetitions of 200000 calls): agreeing at every call (PCM_STATUS_WINDOW_US=0, as before the windows) and with the default window"
for w in 0 default; do
  if [ "$w" = 0 ]; then export PCM_STATUS_WINDOW_US=0; else unset PCM_STATUS_WINDOW_US; fi
  mpiexec -n "$np" "$B/bench/status_cost" 200000 "$reps" >"$tmp/status-$w.txt"
  for what in "empty loop" "MPI_Bcast 16 B" "PCM_Status"; do
    printf 'window %-8s %-15s median %s us/call\n' "$w" "$what" \
      "$(bench_median $(grep -F "$what" "$tmp/status-$w.txt" | awk '{print $(NF-1)}'))"
  done
done
unset PCM_STATUS_WINDOW_US
fi

if [[ $parts == *" 2 "* ]]; then
echo "== 2. heat2d plain vs PCM (no reconfiguration), ${mesh[*]} --iters $iters, $np processes, $reps alternating pairs"
ratios=() plains=() pcms=()
for r in $(seq "$reps"); do
  p=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" "${mesh[@]}" --iters "$iters" | awk '/done/ {print $(NF-1)}')
  q=$(PCM_JOB=bench-$r mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${mesh[@]}" --iters "$iters" | awk '/done/ {print $(NF-1)}')
  ratio=$(bench_py ratio "$q" "$p")
  echo "pair $r: plain $p ms/iter, pcm $q ms/iter, pcm/plain $ratio"
  ratios+=("$ratio") plains+=("$p") pcms+=("$q")
done
echo "median: plain $(bench_median "${plains[@]}") ms/iter, pcm $(bench_median "${pcms[@]}") ms/iter, pcm/plain $(bench_median "${ratios[@]}")"
fi

[[ $parts == *" 3 "* ]] || exit 0
nm=${BENCH_MIGRATIONS:-5}
echo "== 3. $nm migrations in one heat2d run ($np processes, ${mesh[*]})"
job=bench-migrate
PCM_JOB=$job mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${mesh[@]}" --iters 1000000 \
  --throttle-us 200 >"$tmp/mig.out" 2>&1 &
mpi=$!
for k in $(seq "$nm"); do
  "$B/pcmctl" wait "$job" --iteration $((k * 200)) --timeout 120
  "$B/pcmctl" migrate "$job" $(((k - 1) % np)) >/dev/null
  "$B/pcmctl" wait "$job" --reconfigurations "$k" --timeout 120
done
# A little further, so that the last migration's line has been printed before the kill.
"$B/pcmctl" wait "$job" --iteration $(((nm + 1) * 200)) --timeout 120
bench_kill "$mpi"
wait "$mpi" 2>/dev/null || true
grep '^heat2d: migration' "$tmp/mig.out"
times=$(grep '^heat2d: migration' "$tmp/mig.out" | sed -E 's/.* ([0-9.]+) s.*/\1/')
echo "migration time: median $(bench_median $times) s over $(echo "$times" | wc -l) migrations"
