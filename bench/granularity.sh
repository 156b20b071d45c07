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
      echo "$n,$np,$iters,$r,$ms,$(python3 -c "print(f'{$n * $n / ($ms * 1e3):.2f}')")" >>"$tmp/all.csv"
    done
  done
done
python3 - "$tmp/all.csv" "$tmp/plot.csv" "$cores" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sizes = list(dict.fromkeys(r["mesh"] for r in rows))
procs = list(dict.fromkeys(int(r["procs"]) for r in rows))
med = {(s, p): statistics.median(float(r["mcells_per_s"]) for r in rows
                                 if r["mesh"] == s and int(r["procs"]) == p) for s in sizes for p in procs}
print(f"heat2d throughput, Mcell-updates/s (median); speed-up over 1 process in brackets; {sys.argv[3]} cores")
print(f"{'procs':>5} " + " ".join(f"{s + 'x' + s:>20}" for s in sizes))
for p in procs:
    cells = []
    for s in sizes:
        base = med.get((s, procs[0]))
        cells.append(f"{med[s, p]:>10.1f} ({med[s, p] / base:>5.2f}x)")
    print(f"{p:>5} " + " ".join(f"{c:>20}" for c in cells))
for s in sizes:
    best = max(procs, key=lambda p: med[s, p])
    print(f"mesh {s}x{s}: best on {best} processes ({med[s, best]:.1f} Mcell/s)")
with open(sys.argv[2], "w") as f:
    w = csv.writer(f)
    w.writerow(["procs"] + [f"{s}x{s}" for s in sizes])
    for p in procs:
        w.writerow([p] + [f"{med[s, p]:.3f}" for s in sizes])
PY
if [ -n "${BENCH_CSV:-}" ]; then cp "$tmp/all.csv" "$BENCH_CSV"; echo "CSV: $BENCH_CSV"; fi
if [ -n "${BENCH_PNG:-}" ]; then
  gnuplot -c "$ROOT/bench/plots/granularity.gp" "$tmp/plot.csv" "$BENCH_PNG" "$cores"
  echo "plot: $BENCH_PNG"
fi
