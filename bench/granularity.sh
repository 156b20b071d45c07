#!/usr/bin/env bash
# Benchmark after the PCM paper's Figure 1 (granularity): plain heat2d's throughput on 1 to 8
# processes of this machine for several mesh sizes. Past the machine's cores the processes are
# oversubscribed; MPICH's ranks busy-poll, so that is where a job should shrink.
# Runs on up to the machine's core count are sized for about a second; oversubscribed runs do
# BENCH_OVER_ITERS iterations (their time per iteration is milliseconds at any size).
# Prints Mcell-updates/s per mesh and process count (median of BENCH_REPS) and the speed-up over
# 1 process; BENCH_CSV=FILE writes the CSV, BENCH_PNG=FILE the plot.
# Environment: BENCH_SIZES ("256 1024 2048"), BENCH_PROCS ("1 2 3 4 5 6 7 8"), BENCH_REPS (2),
# BENCH_OVER_ITERS (100), BENCH_CSV, BENCH_PNG.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-256 1024 2048} procs=${BENCH_PROCS:-1 2 3 4 5 6 7 8}
reps=${BENCH_REPS:-2} over=${BENCH_OVER_ITERS:-100}
cores=$(nproc)
echo "mesh,procs,iterations,rep,ms_per_iter,mcells_per_s" >"$tmp/all.csv"
for n in $sizes; do
  for np in $procs; do
    if [ "$np" -le "$cores" ]; then
      iters=$((3200000000 / (n * n) / np))
      [ "$iters" -gt 200000 ] && iters=200000
      [ "$iters" -lt 50 ] && iters=50
    else
      iters=$over
    fi
    echo "mesh ${n}x$n on $np processes, $iters iterations, $reps repetitions ..." >&2
    for r in $(seq "$reps"); do
      ms=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" --nx "$n" --ny "$n" --iters "$iters" |
           awk '/^heat2d: done/ {print $(NF-1)}')
      echo "$n,$np,$iters,$r,$ms,$(bench_py rate $((n * n)) "$ms")" >>"$tmp/all.csv"
    done
  done
done
bench_table granularity "$tmp/all.csv" "$tmp/plot.csv" "$cores"
bench_keep_csv "$tmp/all.csv"
bench_plot granularity "$tmp/plot.csv" "$cores"
