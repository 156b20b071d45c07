#!/usr/bin/env bash
# Benchmark after the PCM paper's Figures 9 and 10 (expansion and gradual adaptation): heat2d
# with PCM (heat2d_pcm --trace) under a private pcmd while the cores of this machine come and go.
# A competing CPU load (a busy loop started by this script and ended by its PID) takes one core;
# the job follows, through pcmctl:
#   1. 1 process, competing load on the other core;
#   2. the load ends (a core frees up): resize to 2 processes;
#   3. the load starts again: 3 busy processes on 2 cores, the job slows down (MPICH's ranks
#      busy-poll), and after BENCH_PHASE_S seconds (at most) it is merged back to 1 process;
#   4. 1 process beside the load, which then ends: resize to 2 again;
#   5. 2 processes to the end.
# Phases are sequenced with `pcmctl wait --iteration` on iteration marks sized from a short
# calibration run (heat2d_plain on 1 process beside the load), so that each lasts about
# BENCH_PHASE_S seconds. Prints a table per phase (processes, competing load, median throughput
# over the progress intervals that lie wholly inside it) and checks that the final checksum equals
# that of plain heat2d on 2 processes.
# Writes to BENCH_OUT: trace.csv (heat2d's trace), events.csv (time_s,label: the load's starts and
# ends), timeline.png (bench/plots/timeline.gp); BENCH_CSV and BENCH_PNG, when set, get copies
# of the trace and the plot.
# Environment: BENCH_NX/BENCH_NY (512; quick 256), BENCH_PHASE_S (4; quick 1.5), BENCH_QUICK=1
# (a small fast variant), BENCH_OUT (default $PCM_BUILD_DIR/bench-timeline), BENCH_CSV, BENCH_PNG.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
  nx=${BENCH_NX:-256} ny=${BENCH_NY:-256} phase_s=${BENCH_PHASE_S:-1.5}
else
  nx=${BENCH_NX:-512} ny=${BENCH_NY:-512} phase_s=${BENCH_PHASE_S:-4}
fi
out=${BENCH_OUT:-$B/bench-timeline}
mkdir -p "$out"
trace=$out/trace.csv events=$out/events.csv png=$out/timeline.png
rm -f "$trace" "$events" "$png"
echo "time_s,label" >"$events"
bench_start_pcmd --hosts localhost:16

# The competing load: one busy process, ended by its PID (also on exit).
load=
now() { date +%s.%6N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'; } # seconds since $1
load_start() {
  (while :; do :; done) &
  load=$!
  echo "$(now),competing load starts" >>"$events"
}
load_stop() {
  kill "$load"
  wait "$load" 2>/dev/null || true
  load=
  echo "$(now),competing load ends" >>"$events"
}
trap 'bench_kill "$load"; bench_cleanup' EXIT

grid=(--nx "$nx" --ny "$ny")
job=bench-timeline-$$
pcmctl() { "$B/pcmctl" "$@"; }
iteration() { pcmctl status "$job" --json | bench_py json-field jobs 0 iteration; }
reached() { pcmctl wait "$job" --iteration "$1" --timeout 600 >/dev/null; }
reconfigured() { pcmctl wait "$job" --reconfigurations "$1" --timeout 600 >/dev/null; }

# Calibration: ms/iteration on 1 process beside the load (phase 1's conditions); the load then
# carries on into phase 1.
load_start
cal=$((200000000 / (nx * ny) + 20))
ms1=$(mpiexec -n 1 "$B/examples/heat2d/heat2d_plain" "${grid[@]}" --iters "$cal" |
      awk '/^heat2d: done/ {print $(NF-1)}')
# A phase on 1 process: L iterations (24 progress intervals); on 2, twice as many (they are
# about twice as fast when each has its core).
report=$(awk -v s="$phase_s" -v m="$ms1" 'BEGIN { r = int(s * 1000 / m / 24 + 0.5); print (r < 1 ? 1 : r) }')
L=$((report * 24))
iters=$((7 * L))
echo "heat2d ${nx}x$ny: calibration $ms1 ms/iteration on 1 process beside the load;"
echo "phases of about $phase_s s: $L iterations on 1 process, $((2 * L)) on 2; $iters in all;" \
  "a trace row every $report iterations"

PCM_JOB=$job mpiexec -n 1 "$B/examples/heat2d/heat2d_pcm" "${grid[@]}" --iters "$iters" \
  --report "$report" --trace "$trace" >"$tmp/job.out" 2>&1 </dev/null &
bench_mpi=$!

say() { printf '  %6.2f s  %s\n' "$(since "$t_start")" "$*"; }
t_start=$(now)
say "phase 1: 1 process, competing load"
reached "$L"
load_stop
pcmctl resize "$job" --to 2 >/dev/null
reconfigured 1
say "phase 2: load ended, resized to 2 processes"
reached $((3 * L))
load_start
say "phase 3: load started again beside 2 processes"
# Oversubscribed: one interval at a time until phase_s seconds have passed (at least 2 intervals,
# at most L iterations, so that the iteration budget holds).
p3=$(now) mark=$((3 * L))
while [ "$mark" -lt $((4 * L)) ]; do
  mark=$((mark + report))
  reached "$mark"
  if [ "$mark" -ge $((3 * L + 2 * report)) ] &&
     awk -v s="$(since "$p3")" -v p="$phase_s" 'BEGIN {exit !(s >= p)}'; then
    break
  fi
done
pcmctl merge "$job" 0 1 >/dev/null
reconfigured 2
say "phase 4: merged back to 1 process, beside the load"
reached $(($(iteration) + L))
load_stop
pcmctl resize "$job" --to 2 >/dev/null
reconfigured 3
say "phase 5: load ended, resized to 2 processes, to the end"
wait "$bench_mpi" || { cat "$tmp/job.out"; echo "bench_timeline: heat2d_pcm failed" >&2; exit 1; }
bench_mpi=
say "done"

bench_table timeline "$trace" "$events" "$nx" "$ny"

plain=$(mpiexec -n 2 "$B/examples/heat2d/heat2d_plain" "${grid[@]}" --iters "$iters" |
        awk '/^checksum/ {print $2}')
got=$(awk '/^checksum/ {print $2}' "$tmp/job.out")
if [ -z "$got" ] || [ "$got" != "$plain" ]; then
  echo "checksum: MISMATCH: PCM run '$got', plain run on 2 processes '$plain'" >&2
  exit 1
fi
echo "checksum: PCM run $got = plain run on 2 processes: match ($(awk '/^reconfigurations/ {print $2}' "$tmp/job.out") reconfigurations)"
bench_py plot timeline "$png" "$trace" "$events" "$png" \
  "heat2d ${nx}x$ny with PCM on a 2-core machine as a competing load comes and goes" >/dev/null
bench_keep_csv "$trace"
if [ -n "${BENCH_PNG:-}" ]; then cp "$png" "$BENCH_PNG"; echo "plot: $BENCH_PNG"; fi
echo "files: $trace $events $png"
