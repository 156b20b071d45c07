#!/usr/bin/env bash
# What the application waits for per checkpoint, side by side in one run (set up like the README
# commands), at each size of BENCH_SIZES MiB (256 1024) on BENCH_NP (2) processes:
#  - PCM_Checkpoint written at once (PCM_CHECKPOINT_ASYNC=0: the call returns once the version is
#    committed) against in the background (the default: the call returns once the data is
#    staged), BENCH_VERSIONS (5) versions each with BENCH_GAP (3) s of computing between them
#    (passes over the array), median of the calls' times; then `dd conv=fsync` of the same bytes;
#  - heat2d_pcm (BENCH_HEAT: --nx 4096 --ny 4096 --iters 300, a 128 MiB grid) without
#    checkpoints, with one every BENCH_EVERY (50) iterations written at once, and in the
#    background: whole-run times, BENCH_REPEAT (3) runs each, interleaved.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-256 1024} np=${BENCH_NP:-2} versions=${BENCH_VERSIONS:-5} gap=${BENCH_GAP:-3}
every=${BENCH_EVERY:-50} repeat=${BENCH_REPEAT:-3}
read -r -a heat <<<"${BENCH_HEAT:---nx 4096 --ny 4096 --iters 300}"
bench_start_pcmd --keep 2
echo "== checkpoint waits on $np processes, $versions versions per size, ${gap} s apart"
for mb in $sizes; do
  for mode in 0 1; do
    PCM_CHECKPOINT_ASYNC=$mode PCM_JOB=bench-wait-$mb-$mode mpiexec -n "$np" \
      "$B/bench/ckpt_cost" "$mb" wait "$versions" "$gap" | tee -a "$tmp/w$mb.txt"
  done
  for _ in 1 2 3; do
    dd if=/dev/zero of="$tmp/dd" bs=1M count="$mb" conv=fsync 2>&1 | tail -1 | tee -a "$tmp/dd$mb.txt"
  done
  rm -f "$tmp/dd"
done
echo "== heat2d ${heat[*]} on $np processes: none, a version every $every iterations at once, in the background"
for r in $(seq "$repeat"); do
  for mode in none sync async; do
    extra=() env=(PCM_JOB=bench-heat-$mode-$r)
    [ "$mode" != none ] && extra=(--commit-every "$every")
    [ "$mode" = sync ] && env+=(PCM_CHECKPOINT_ASYNC=0)
    t0=$(date +%s%N)
    env "${env[@]}" mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${heat[@]}" "${extra[@]}" \
      >"$tmp/heat-$mode-$r.out"
    echo "$mode $((($(date +%s%N) - t0) / 1000000))" | tee -a "$tmp/heat.txt"
  done
done
bench_table checkpoint_wait "$tmp" "$sizes"
