#!/usr/bin/env bash
# Benchmark after the PCM paper's Figure 8: heat2d instrumented with PCM (no reconfiguration)
# against plain heat2d, over several granularities (mesh sizes), in alternating runs in one go.
# PCM runs twice per repetition: with its default PCM_Status agreement window, and with
# PCM_STATUS_WINDOW_US=0 (a broadcast at every call, as before the windows); and a third time
# with PCM_PROFILE_MS=0, which turns the application's profile off (the MPI wrappers then do one
# test and the PMPI call): pcm/unprofiled is what profiling costs.
# Prints per-size medians and the overhead in percent; with BENCH_CSV=FILE also writes CSV and
# with BENCH_PNG=FILE a plot of overhead against mesh size.
# Environment: BENCH_NP (2), BENCH_REPS (5), BENCH_SIZES ("64 128 256 512 1024"), BENCH_CSV,
# BENCH_PNG.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
np=${BENCH_NP:-2} reps=${BENCH_REPS:-5} sizes=${BENCH_SIZES:-64 128 256 512 1024}
bench_start_pcmd
ms() { awk '/^heat2d: done/ {print $(NF-1)}'; }
echo "size,iterations,rep,plain_ms_per_iter,pcm_ms_per_iter,pcm_w0_ms_per_iter,pcm_noprof_ms_per_iter" >"$tmp/all.csv"
for n in $sizes; do
  iters=$((3200000000 / (n * n)))  # about the same work (1-2 s) per run at every size
  [ "$iters" -gt 400000 ] && iters=400000
  echo "mesh ${n}x$n, $iters iterations, $reps repetitions ..." >&2
  for r in $(seq "$reps"); do
    h=("$B/examples/heat2d/heat2d_pcm" --nx "$n" --ny "$n" --iters "$iters")
    p=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" --nx "$n" --ny "$n" --iters "$iters" | ms)
    q=$(PCM_JOB=ovh-$n-$r mpiexec -n "$np" "${h[@]}" | ms)
    z=$(PCM_STATUS_WINDOW_US=0 PCM_JOB=ovh0-$n-$r mpiexec -n "$np" "${h[@]}" | ms)
    u=$(PCM_PROFILE_MS=0 PCM_JOB=ovhu-$n-$r mpiexec -n "$np" "${h[@]}" | ms)
    echo "$n,$iters,$r,$p,$q,$z,$u" >>"$tmp/all.csv"
  done
done
python3 - "$tmp/all.csv" "$tmp/plot.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = statistics.median
print(f"{'mesh':>6} {'iters':>7} {'plain ms/it':>12} {'pcm/plain':>10} {'overhead':>9} {'(range)':>13}"
      f" {'window 0':>9} {'overhead':>9} {'profiling':>10} {'(range)':>13}   (medians of per-repetition ratios;"
      f" profiling: pcm against pcm with PCM_PROFILE_MS=0)")
out = csv.writer(open(sys.argv[2], "w"))
out.writerow(["mesh", "overhead_pct", "low_pct", "high_pct", "overhead_w0_pct", "low_w0_pct", "high_w0_pct"])
for n in dict.fromkeys(r["size"] for r in rows):
    rs = [r for r in rows if r["size"] == n]
    plain = [float(r["plain_ms_per_iter"]) for r in rs]
    q = [float(r["pcm_ms_per_iter"]) / p for r, p in zip(rs, plain)]
    z = [float(r["pcm_w0_ms_per_iter"]) / p for r, p in zip(rs, plain)]
    u = [float(r["pcm_ms_per_iter"]) / float(r["pcm_noprof_ms_per_iter"]) for r in rs]
    print(f"{n:>6} {rs[0]['iterations']:>7} {med(plain):>12.4f} {med(q):>10.4f} {(med(q) - 1) * 100:>+8.2f}%"
          f" {f'({min(q):.3f}-{max(q):.3f})':>13} {med(z):>9.4f} {(med(z) - 1) * 100:>+8.2f}%"
          f" {(med(u) - 1) * 100:>+9.2f}% {f'({min(u):.3f}-{max(u):.3f})':>13}")
    pct = lambda v: f"{(v - 1) * 100:.3f}"
    out.writerow([n, pct(med(q)), pct(min(q)), pct(max(q)), pct(med(z)), pct(min(z)), pct(max(z))])
PY
if [ -n "${BENCH_CSV:-}" ]; then cp "$tmp/all.csv" "$BENCH_CSV"; echo "CSV: $BENCH_CSV"; fi
if [ -n "${BENCH_PNG:-}" ]; then
  gnuplot -c "$ROOT/bench/plots/overhead.gp" "$tmp/plot.csv" "$BENCH_PNG"
  echo "plot: $BENCH_PNG"
fi
