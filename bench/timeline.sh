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
iteration() { pcmctl status "$job" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["iteration"])'; }
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
report=$(python3 -c "print(max(1, round($phase_s * 1000 / $ms1 / 24)))")
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

python3 - "$trace" "$events" "$nx" "$ny" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
events = [(float(r["time_s"]), r["label"]) for r in csv.DictReader(open(sys.argv[2]))]
cells = int(sys.argv[3]) * int(sys.argv[4])
t0 = float(rows[0]["time_s"])
# Progress intervals: (start, end, procs, it/s); an interval starts at the previous row.
intervals, prev = [], None
for r in rows:
    if r["ms_per_iter"] and prev is not None:
        n, ms = int(r["iteration"]) - int(prev["iteration"]), float(r["ms_per_iter"])
        end = float(r["time_s"])
        intervals.append((end - n * ms / 1000, end, int(r["procs"]), 1000 / ms))
    prev = r
reconf = [(float(r["time_s"]), r["event"]) for r in rows if r["event"] and not r["event"].startswith("start")]
bounds = sorted({t0, float(rows[-1]["time_s"])} | {t for t, _ in events if t > t0} | {t for t, _ in reconf})
print("reconfigurations: " + "; ".join(f"{e} at {t - t0:.2f} s" for t, e in reconf))
print(f"{'phase':>5} {'from s':>7} {'to s':>7} {'procs':>5} {'load':>5} {'intervals':>9} "
      f"{'median it/s':>11} {'Mcell/s':>8} {'vs phase 1':>10}")
base, k = None, 0
for a, b in zip(bounds, bounds[1:]):
    inside = [iv for iv in intervals if iv[0] >= a - 1e-3 and iv[1] <= b + 1e-3]
    if not inside:
        continue  # a transition: the reaction to an outside event, or a reconfiguration
    k += 1
    before = [l for t, l in events if t <= a + 1e-6]
    load = "yes" if before and before[-1].endswith("starts") else "no"
    procs = statistics.mode(iv[2] for iv in inside)
    med = statistics.median(iv[3] for iv in inside)
    base = base or med
    print(f"{k:>5} {a - t0:>7.2f} {b - t0:>7.2f} {procs:>5} {load:>5} {len(inside):>9} "
          f"{med:>11.1f} {med * cells / 1e6:>8.1f} {med / base:>9.2f}x")
PY

plain=$(mpiexec -n 2 "$B/examples/heat2d/heat2d_plain" "${grid[@]}" --iters "$iters" |
        awk '/^checksum/ {print $2}')
got=$(awk '/^checksum/ {print $2}' "$tmp/job.out")
if [ -z "$got" ] || [ "$got" != "$plain" ]; then
  echo "checksum: MISMATCH: PCM run '$got', plain run on 2 processes '$plain'" >&2
  exit 1
fi
echo "checksum: PCM run $got = plain run on 2 processes: match ($(awk '/^reconfigurations/ {print $2}' "$tmp/job.out") reconfigurations)"
gnuplot -c "$ROOT/bench/plots/timeline.gp" "$trace" "$events" "$png" \
  "heat2d ${nx}x$ny with PCM on a 2-core machine as a competing load comes and goes"
if [ -n "${BENCH_CSV:-}" ]; then cp "$trace" "$BENCH_CSV"; echo "CSV: $BENCH_CSV"; fi
if [ -n "${BENCH_PNG:-}" ]; then cp "$png" "$BENCH_PNG"; echo "plot: $BENCH_PNG"; fi
echo "files: $trace $events $png"
