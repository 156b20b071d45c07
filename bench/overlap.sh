#!/usr/bin/env bash
# Benchmark of the application-visible cost of splits and merges whose slow parts overlap the
# loop (PCM_OVERLAP=1, libpcm/overlap.h: the spawn, and the new buffers faulted in) against the
# blocking ones, side by side in one run: a job of bench/overlap_cost (BENCH_MB MiB of doubles
# registered, PCM_Adapt every iteration, each iteration sleeping BENCH_WORK_US and agreeing with
# one MPI_Allreduce) grows 1 -> 2 -> 4 and shrinks 4 -> 2 -> 1 (pcmctl resize), once with
# PCM_OVERLAP=0 and once with PCM_OVERLAP=1, BENCH_REPS times alternating. The cost of each
# reconfiguration is the extra wall time of the iterations around it:
# from BENCH_WINDOW iterations before the switch to BENCH_WINDOW after, less what those
# iterations take in steady state (the median iteration before and after, measured in the same
# job); also shown: the time inside PCM_Adapt over the same iterations, less its steady median
# (the old world's calls; the new world's first call returns at once).
# Then what MPI_THREAD_MULTIPLE (which PCM_OVERLAP=1 asks for) costs when nothing is pending,
# PCM_OVERLAP=0 and 1 alternating: PCM_Adapt and a bare MPI_Bcast per call (bench/status_cost),
# and heat2d's time per iteration (halo exchanges) on 2 processes at two mesh sizes.
# Environment: BENCH_MB (64), BENCH_REPS (3), BENCH_WORK_US (2000), BENCH_WINDOW (400 iterations),
# BENCH_SIZES ("64 256": heat2d meshes), BENCH_SKIP_SPLITS=1 (only the second part), BENCH_RAW=0
# (no raw-file restarts: by default each repetition also moves the same bytes 1->2, 2->4, 4->2
# and 2->1 by stopping and restarting through raw files, as malleability.sh does),
# BENCH_PNG=FILE (a plot of the splits and merges: bench/plots/overlap.gp).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mb=${BENCH_MB:-64} reps=${BENCH_REPS:-3} work=${BENCH_WORK_US:-2000} win=${BENCH_WINDOW:-400}
bench_start_pcmd --hosts localhost:16
gap=$((win * 3))  # iterations between the commands: the window on both sides, and steady ones
run() {  # run MODE REP: one job, two splits; its output in $tmp/MODE-REP.out
  local mode=$1 rep=$2 job=bench-overlap-$1-$2 out=$tmp/$1-$2.out it
  rm -f "$tmp/stop"
  PCM_JOB=$job PCM_OVERLAP=$mode PCM_LOG_LEVEL=info mpiexec -n 1 "$B/bench/overlap_cost" "$mb" \
    100000000 "$work" "$tmp/stop" >"$out" 2>&1 &
  bench_mpi=$!
  "$B/pcmctl" wait "$job" --iteration "$gap" --timeout 300 >/dev/null
  "$B/pcmctl" resize "$job" --to 2 >/dev/null
  "$B/pcmctl" wait "$job" --reconfigurations 1 --timeout 300 >/dev/null
  it=$(awk '/^overlap_cost: it/ {n = $3} END {print n + 0}' "$out")
  "$B/pcmctl" wait "$job" --iteration $((it + gap)) --timeout 300 >/dev/null
  local n=1 to
  for to in 4 2 1; do
    n=$((n + 1))
    "$B/pcmctl" resize "$job" --to "$to" >/dev/null
    "$B/pcmctl" wait "$job" --reconfigurations "$n" --timeout 300 >/dev/null
    it=$(awk '/^overlap_cost: it/ {n = $3} END {print n + 0}' "$out")
    "$B/pcmctl" wait "$job" --iteration $((it + gap)) --timeout 300 >/dev/null
  done
  touch "$tmp/stop"
  wait "$bench_mpi" || { echo "the job of $mode/$rep failed:"; tail -20 "$out"; exit 1; }
  bench_mpi=
  grep -q '^overlap_cost: ok: 1 processes, 0 wrong' "$out" || { echo "wrong data:"; tail "$out"; exit 1; }
}
[ "${BENCH_SKIP_SPLITS:-0}" = 1 ] || echo "== split 1 -> 2 and 2 -> 4, merge 4 -> 2 and 2 -> 1 of" \
  "$mb MiB, blocking (PCM_OVERLAP=0) and overlapped (=1: spawn, new buffers faulted in), $reps" \
  "times each; iterations of $work us, window +-$win iterations"
# raw FROM TO REP — the same bytes moved by stopping and restarting (bench/resize_cost raw, as
# bench/malleability.sh does: each rank writes its block with write + fsync, exits, and a
# job at TO processes preads what it needs; from the start of the writes to the new world holding
# its data). Appends "FROM TO SECONDS" to $tmp/raw.txt.
raw() {
  local dir=$tmp/raw-$1-$2-$3 job=bench-raw-$1-$2-$3
  mkdir -p "$dir"
  PCM_JOB=$job mpiexec -n "$1" "$B/bench/resize_cost" "$mb" raw "$dir" >"$dir/before" 2>&1 </dev/null
  PCM_JOB=$job PCM_RESTART=1 mpiexec -n "$2" "$B/bench/resize_cost" "$mb" raw "$dir" >"$dir/after" 2>&1 </dev/null
  awk -v from="$1" -v to="$2" '$1 == "resize_cost:" && $2 == "start" { t = $3 }
       $1 == "resize_cost:" && $2 == "ready" { if ($9 != 0) bad = 1; else printf "%d %d %.6f\n", from, to, $3 - t; n++ }
       END { exit bad || n != 1 }' "$dir/before" "$dir/after" >>"$tmp/raw.txt" ||
    { echo "the raw restart $1 -> $2 failed:"; tail "$dir/before" "$dir/after"; exit 1; }
  rm -rf "$dir"
}
: >"$tmp/raw.txt"
[ "${BENCH_SKIP_SPLITS:-0}" = 1 ] || for r in $(seq "$reps"); do
  run 0 "$r"
  run 1 "$r"
  if [ "${BENCH_RAW:-1}" = 1 ]; then
    raw 1 2 "$r"
    raw 2 4 "$r"
    raw 4 2 "$r"
    raw 2 1 "$r"
  fi
done
[ "${BENCH_SKIP_SPLITS:-0}" = 1 ] || bench_table overlap "$tmp" "$reps" "$win"

if [ "${BENCH_SKIP_SPLITS:-0}" != 1 ]; then
  bench_plot overlap "$tmp/plot.csv" "$mb" "$reps"
fi
echo "== nothing pending: PCM_OVERLAP=0 (MPI_Init) against 1 (MPI_THREAD_MULTIPLE), 2 processes," \
  "$reps alternating runs each"
: >"$tmp/st0.txt"
: >"$tmp/st1.txt"
for r in $(seq "$reps"); do
  for mode in 0 1; do
    PCM_JOB=st-$mode-$r PCM_OVERLAP=$mode mpiexec -n 2 "$B/bench/status_cost" 200000 1 >>"$tmp/st$mode.txt"
  done
done
col() { grep -F "$2" "$1" | awk '{print $(NF-1)}'; }
for what in "PCM_Adapt" "MPI_Bcast 16 B" "MPI_Waitall(0)"; do
  printf '%-15s PCM_OVERLAP=0: median %s us/call   PCM_OVERLAP=1: median %s us/call\n' "$what" \
    "$(bench_median $(col "$tmp/st0.txt" "$what"))" "$(bench_median $(col "$tmp/st1.txt" "$what"))"
done
for n in ${BENCH_SIZES:-64 256}; do
  iters=$((800000000 / (n * n)))
  a=() b=()
  for r in $(seq "$reps"); do
    a+=("$(PCM_JOB=h0-$n-$r PCM_OVERLAP=0 mpiexec -n 2 "$B/examples/heat2d/heat2d_pcm" --nx "$n" --ny "$n" --iters "$iters" | bench_heat2d_ms)")
    b+=("$(PCM_JOB=h1-$n-$r PCM_OVERLAP=1 mpiexec -n 2 "$B/examples/heat2d/heat2d_pcm" --nx "$n" --ny "$n" --iters "$iters" | bench_heat2d_ms)")
  done
  echo "heat2d ${n}x$n, $iters iterations: PCM_OVERLAP=0 ${a[*]} (median $(bench_median "${a[@]}")) ms/iter;" \
    "PCM_OVERLAP=1 ${b[*]} (median $(bench_median "${b[@]}")) ms/iter"
done
