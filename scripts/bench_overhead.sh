#!/usr/bin/env bash
# Benchmark after the PCM paper's Figure 8: heat2d instrumented with PCM (no reconfiguration)
# against plain heat2d, over several granularities (mesh sizes), in alternating pairs in one run.
# Prints per-size medians and the overhead in percent; with BENCH_CSV=FILE also writes CSV.
# Environment: BENCH_NP (2), BENCH_REPS (3), BENCH_SIZES ("128 256 512 1024"), BENCH_CSV.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh"
np=${BENCH_NP:-2} reps=${BENCH_REPS:-3} sizes=${BENCH_SIZES:-128 256 512 1024}
bench_start_pcmd
ms() { awk '/^heat2d: done/ {print $(NF-1)}'; }
echo "size,iterations,pair,plain_ms_per_iter,pcm_ms_per_iter,ratio" >"$tmp/all.csv"
for n in $sizes; do
  iters=$((3200000000 / (n * n)))  # about the same work (1-2 s) per run at every size
  [ "$iters" -gt 400000 ] && iters=400000
  for r in $(seq "$reps"); do
    p=$(mpiexec -n "$np" "$B/examples/heat2d/heat2d_plain" --nx "$n" --ny "$n" --iters "$iters" | ms)
    q=$(PCM_JOB=ovh-$n-$r mpiexec -n "$np" "$B/examples/heat2d/heat2d_pcm" --nx "$n" --ny "$n" --iters "$iters" | ms)
    echo "$n,$iters,$r,$p,$q,$(python3 -c "print(f'{$q / $p:.4f}')")" >>"$tmp/all.csv"
  done
done
python3 - "$tmp/all.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{'mesh':>6} {'iters':>7} {'plain ms/it':>12} {'pcm ms/it':>10} {'pcm/plain':>10} {'overhead':>9}  (median of pairs; range of ratios)")
for n in dict.fromkeys(r["size"] for r in rows):
    rs = [r for r in rows if r["size"] == n]
    ratio = [float(r["ratio"]) for r in rs]
    med = statistics.median
    print(f"{n:>6} {rs[0]['iterations']:>7} {med(float(r['plain_ms_per_iter']) for r in rs):>12.4f} "
          f"{med(float(r['pcm_ms_per_iter']) for r in rs):>10.4f} {med(ratio):>10.4f} "
          f"{(med(ratio) - 1) * 100:>+8.2f}%  ({min(ratio):.3f}-{max(ratio):.3f})")
PY
if [ -n "${BENCH_CSV:-}" ]; then cp "$tmp/all.csv" "$BENCH_CSV"; echo "CSV: $BENCH_CSV"; fi
