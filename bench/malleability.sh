#!/usr/bin/env bash
# Benchmark of the PCM paper's claim that live malleability beats stop-and-restart: the same data
# (MiB of doubles, block layout) moves from 1 process to 2 and from 2 to 1 in these ways, each
# timed end to end by wall-clock epochs that the processes print (bench/resize_cost.c):
#   live  `pcmctl resize` of a running job: the paper's PCM_Split / PCM_Merge. From the moment
#         PCM_Status returns the command (old rank 0) to every rank of the new world holding its
#         data.
#   live_bg  the same with PCM_OVERLAP=1: the split's spawn and the new processes' buffers, or
#         the merge's new buffers, are made in the background from the command's adoption
#         (PCM_Status reports the command once they are ready), for the map the last split or
#         merge left (the first split of a job has none: its buffers are made at the split).
#   adapt, adapt_bg  the same moves with the register-once calls (the array registered,
#         PCM_Adapt), PCM_OVERLAP=0 and 1: from entering the PCM_Adapt call that carries the
#         command out to the new world holding its data.
#   ckpt  PCM's checkpoints: the job stores its data, commits and exits, and is relaunched with
#         PCM_RESTART=1 at the new size, which loads with PCM_Load_redistribute. From the start of
#         the store to every rank of the new world holding its data: commit, exit, mpiexec, MPI
#         and PCM set-up and load included.
#   raw   the cheapest stop-and-restart: no PCM, no HDF5; each rank writes its block to a file
#         (write + fsync), exits, and the relaunched world preads what it needs. Timed the same.
# Every move is followed by a check of every element (not timed); any wrong element fails the run.
# Restarts read files just written, so from the page cache (a restart on the same host).
# Prints the medians per size and direction and the ratios restart / live.
# Environment: BENCH_SIZES (MiB: "16 64 256 1024"), BENCH_REPS (3), BENCH_CSV=FILE (every
# measurement: size_mib,direction,method,rep,seconds), BENCH_PNG=FILE (the plot).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-16 64 256 1024} reps=${BENCH_REPS:-3}
prog=$B/bench/resize_cost
limit=600 # seconds any one run may take
bench_start_pcmd --hosts localhost:16
echo "size_mib,direction,method,rep,seconds" >"$tmp/all.csv"
bench_trap_failures bench_malleability  # on failure, what the failing run printed

# moves FILE... — "PROCS SECONDS" for each move in the programs' output: from its start line to
# its ready line (matched by iteration). Fails unless every move verified all its elements.
# A ready line written by a new process can reach the output before the start line of the old
# one (each process's output is forwarded on its own), so the moves are matched at the end.
moves() {
  awk '$1 == "resize_cost:" && $2 == "start" { t[$5] = $3 }
       $1 == "resize_cost:" && $2 == "ready" { n++; it[n] = $5; at[n] = $3; p[n] = $7; w[n] = $9 }
       END {
         for (k = 1; k <= n; k++)
           if (w[k] != 0 || !(it[k] in t)) bad = 1
           else printf "%d %.6f\n", p[k], at[k] - t[it[k]]
         exit bad || n == 0 }' "$@"
}
# record SIZE METHOD [REP] < "PROCS SECONDS [REP]" lines — appends them to the CSV; the
# direction follows from the new size.
record() {
  local procs seconds r dir
  while read -r procs seconds r; do
    dir=$([ "$procs" = 2 ] && echo "1->2" || echo "2->1")
    echo "$1,$dir,$2,${r:-$3},$seconds" >>"$tmp/all.csv"
    progress "$1 MiB $2 $dir (rep ${r:-$3}): $seconds s"
  done
}

# live SIZE METHOD — one job at 1 process, resized to 2 and back to 1, BENCH_REPS times.
live() {
  local mb=$1 method=$2 job=bench-$2-$1 dir=$tmp/$2-$1 n=0 r to overlap=0
  case $method in *_bg) overlap=1 ;; esac
  mkdir -p "$dir"
  log=$dir/out
  PCM_OVERLAP=$overlap PCM_JOB=$job timeout "$limit" mpiexec -n 1 "$prog" "$mb" "${method%_bg}" \
    "$dir" >"$log" 2>&1 </dev/null &
  bench_mpi=$!
  for r in $(seq "$reps"); do
    for to in 2 1; do
      "$B/pcmctl" wait "$job" --iteration $(((n + 1) * 20)) --timeout "$limit" >/dev/null
      "$B/pcmctl" resize "$job" --to "$to" >/dev/null
      n=$((n + 1))
      "$B/pcmctl" wait "$job" --reconfigurations "$n" --timeout "$limit" >/dev/null
    done
  done
  touch "$dir/stop"
  wait "$bench_mpi"
  bench_mpi=
  # The k-th split and the k-th merge are repetition k.
  moves "$log" | awk '{ print $1, $2, ++k[$1] }' | record "$mb" "$method"
  rm -rf "$dir"
}

# restart SIZE METHOD FROM TO REP — a job at FROM processes saves and exits; one at TO loads.
restart() {
  local mb=$1 method=$2 from=$3 to=$4 rep=$5
  local job=bench-$2-$1-$3-$4-$5 dir=$tmp/$2-$1-$3-$4-$5
  mkdir -p "$dir"
  log=$dir/before
  PCM_JOB=$job timeout "$limit" mpiexec -n "$from" "$prog" "$mb" "$method" "$dir" >"$log" 2>&1 </dev/null
  log=$dir/after
  PCM_JOB=$job PCM_RESTART=1 timeout "$limit" mpiexec -n "$to" "$prog" "$mb" "$method" "$dir" >"$log" 2>&1 </dev/null
  moves "$dir/before" "$dir/after" | record "$mb" "$method" "$rep"
  rm -rf "$dir" "$tmp/data/jobs/$job" "$tmp/data/checkpoints/$job"
}

for mb in $sizes; do
  for method in live live_bg adapt adapt_bg; do
    progress "$mb MiB: $method split 1->2 and merge 2->1, $reps times"
    live "$mb" "$method"
  done
  for r in $(seq "$reps"); do
    for method in ckpt raw; do
      restart "$mb" "$method" 1 2 "$r"
      restart "$mb" "$method" 2 1 "$r"
    done
  done
done
log=

bench_table malleability "$tmp/all.csv" "$tmp/plot.csv" "$reps"
bench_keep_csv "$tmp/all.csv"
bench_plot malleability "$tmp/plot.csv" "$reps"
