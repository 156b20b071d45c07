#!/usr/bin/env bash
# Benchmark of this checkout against an earlier revision, side by side in one run: PCM_Status
# per call (and PCM_Adapt where the revision has it), and heat2d with PCM against plain heat2d
# at each mesh size, the two builds' runs alternating.
#   bash bench/compare.sh [REV]     (REV: default f0c2e65, the last commit before the
#                                             register-once layer and the libpcm split)
# The revision is exported with git archive and built once into $PCM_CACHE_DIR/compare-REV (with
# this checkout's MPI). Environment: BENCH_NP (2), BENCH_REPS (5), BENCH_SIZES ("64 128 256 512
# 1024"), BENCH_CALLS (200000).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rev=${1:-f0c2e65}
np=${BENCH_NP:-2} reps=${BENCH_REPS:-5} sizes=${BENCH_SIZES:-64 128 256 512 1024}
calls=${BENCH_CALLS:-200000}
bench_build_rev "$rev" status_cost heat2d_pcm heat2d_plain
bench_start_pcmd

echo "== PCM_Status per call, $np processes, $reps alternating runs of $calls calls: $sha against this checkout"
: >"$tmp/old.txt"
: >"$tmp/new.txt"
for r in $(seq "$reps"); do
  PCM_JOB=old-$r mpiexec -n "$np" "$base/build/bench/status_cost" "$calls" 1 >>"$tmp/old.txt"
  PCM_JOB=new-$r mpiexec -n "$np" "$B/bench/status_cost" "$calls" 1 >>"$tmp/new.txt"
done
col() { grep -F "$2" "$1" | awk '{print $(NF-1)}'; }
for what in "empty loop" "MPI_Bcast 16 B" "PCM_Status"; do
  printf '%-15s %s: median %s us/call   this checkout: median %s us/call\n' "$what" "$sha" \
    "$(bench_median $(col "$tmp/old.txt" "$what"))" "$(bench_median $(col "$tmp/new.txt" "$what"))"
done
old_adapt=$(col "$tmp/old.txt" "PCM_Adapt")  # revisions before the register-once layer have none
old_adapt=${old_adapt:+median $(bench_median $old_adapt) us/call}
printf '%-15s %s: %-19s this checkout: median %s us/call\n' "PCM_Adapt" "$sha" "${old_adapt:--}" \
  "$(bench_median $(col "$tmp/new.txt" "PCM_Adapt"))"

echo "== heat2d PCM/plain, $np processes, $reps alternating pairs per build and mesh (no reconfiguration)"
echo "size,rep,old_plain,old_pcm,new_plain,new_pcm" >"$tmp/h.csv"
for n in $sizes; do
  iters=$((3200000000 / (n * n)))
  [ "$iters" -gt 400000 ] && iters=400000
  a=(--nx "$n" --ny "$n" --iters "$iters")
  for r in $(seq "$reps"); do
    op=$(mpiexec -n "$np" "$base/build/examples/heat2d/heat2d_plain" "${a[@]}" | bench_heat2d_ms)
    oq=$(PCM_JOB=oh-$n-$r mpiexec -n "$np" "$base/build/examples/heat2d/heat2d_pcm" "${a[@]}" | bench_heat2d_ms)
    np_=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" "${a[@]}" | bench_heat2d_ms)
    nq=$(PCM_JOB=nh-$n-$r mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" "${a[@]}" | bench_heat2d_ms)
    echo "$n,$r,$op,$oq,$np_,$nq" >>"$tmp/h.csv"
  done
done
bench_table compare "$tmp/h.csv" "$sha"
