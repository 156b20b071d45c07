#!/usr/bin/env bash
# cluster.sh [--quick] [--ci] [--trace FILE] [--sim PATH] — pcmd's policy on a simulated 128-node machine replaying the NASA iPSC/860 log (issue 40)
#
# Replays the Parallel Workloads Archive's cleaned log of the NASA Ames iPSC/860 (Oct-Dec 1993,
# 18,239 jobs; PCM_SIM_TRACE or --trace, default ../shared/data/NASA-iPSC-1993-3.1-cln.swf.gz
# beside the checkout) on bench/sim's simulator (pcm_cluster_sim): rigid EASY against 0, 20, 50
# and 100 % of the jobs malleable (chosen at random, then largest first), reconfiguration cost as
# measured here and x10; the log as it is and with its arrivals compressed 2x, malleable jobs
# submitted at their size or as Slurm's -N min-max (BENCH_VARIANTS, default "x1 x2 x1-moldable
# x2-moldable"; the whole log: x1 x2 x2-moldable, at random only, BENCH_PICKS), two runs at a
# time. Then
# checks the simulator against the real Slurm run of bench/slurm.py (bench/cluster_slurm.py).
#   --quick  a 2-week window (days 0-14) instead of the whole log
#   --ci     the CI test (ctest -R sim): 2 weeks, 0 and 50 % malleable, cost x1, every step's node
#            book verified; no plot, no check against Slurm
# Prints the tables (markdown, ratios to rigid EASY in brackets); writes to BENCH_OUT (default a
# new scratch directory): summary.csv (every run), cluster.png (bench/plots/cluster.gp) and
# decisions-*.log (every decision of the 50 % runs, with the policy's reason).
# Exits 77 (SKIPPED) with the reason when the trace is absent.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0 ci=0 sim=
trace=${PCM_SIM_TRACE:-$ROOT/../shared/data/NASA-iPSC-1993-3.1-cln.swf.gz}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --ci) ci=1 quick=1 ;;
    --trace) trace=$2; shift ;;
    --sim) sim=$2; shift ;;
    *) echo "usage: bash bench/cluster.sh [--quick] [--ci] [--trace FILE] [--sim PATH]" >&2; exit 2 ;;
  esac
  shift
done
if [ ! -f "$trace" ]; then
  echo "SKIPPED: no trace at $trace (the Parallel Workloads Archive's NASA-iPSC-1993-3.1-cln.swf.gz;" \
    "set PCM_SIM_TRACE or --trace)"
  exit 77
fi
if [ -z "$sim" ]; then
  if [ -n "${PCM_BENCH_BUILD_DIR:-}" ]; then
    B=$PCM_BENCH_BUILD_DIR
  else
    PCM_BUILD_TARGETS=pcm_cluster_sim bash "$ROOT/scripts/setup.sh" >/dev/null
    # shellcheck source=/dev/null
    source "$ROOT/scripts/.env"
    B=$PCM_BUILD_DIR
  fi
  cmake --build "$B" --target pcm_cluster_sim >/dev/null
  sim=$B/bench/pcm_cluster_sim
fi
out=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/pcm-cluster.XXXXXX")}
mkdir -p "$out"
window=()
[ $quick = 1 ] && window=(--days 14)
echo "trace: $trace; simulator: $sim; output: $out"

if [ $ci = 1 ]; then
  "$sim" --trace "$trace" "${window[@]}" --shares 0,50 --costs 1 --check --label ci \
    --csv "$out/summary.csv" | tee "$out/ci.txt"
  grep -q '^|  50 % |' "$out/ci.txt" || { echo "FAILED: no 50 % row" >&2; exit 1; }
  # The 50 % run made decisions, all carried out or refused with a reason, and every job ended
  # (pcm_cluster_sim fails otherwise).
  awk -F, 'NR > 1 && $4 == 50 && ($16 + $17 + $18) > 0 { ok = 1 } END { exit !ok }' \
    "$out/summary.csv" || { echo "FAILED: the 50 % run made no decision" >&2; exit 1; }
  echo "PASSED: every node booked once at every step, every job ended, decisions made"
  exit 0
fi

# One workload (label, extra options): its tables, both choices of jobs, both costs.
run() {
  local label=$1
  shift
  "$sim" --trace "$trace" "${window[@]}" --label "$label" --shares 0,20,50,100 \
    --pick "$picks" --costs 1,10 --csv "$out/summary-$label.csv" \
    --log "$out/decisions-$label.log" "$@"
}
# The log as it is (load x1) and with arrivals twice as dense (x2), each with malleable jobs
# submitted at a fixed size or as Slurm's -N min-max (moldable): two runs at a time.
variants=${BENCH_VARIANTS:-x1 x2 x1-moldable x2-moldable}
picks=${BENCH_PICKS:-random,largest}
if [ $quick = 0 ]; then  # the whole log: 3 variants, jobs chosen at random (about 10 CPU-minutes)
  variants=${BENCH_VARIANTS:-x1 x2 x2-moldable}
  picks=${BENCH_PICKS:-random}
fi
for v in $variants; do
  load=${v%%-*}
  extra=(--arrival-scale "${load#x}")
  case $v in *-moldable) extra+=(--moldable) ;; esac
  run "$v" "${extra[@]}" >"$out/tables-$v.txt" &
  [ "$(jobs -r | wc -l)" -lt 2 ] || wait -n
done
wait
for v in $variants; do
  echo
  echo "## $v"
  cat "$out/tables-$v.txt"
done
awk 'FNR > 1 || NR == 1' "$out"/summary-*.csv >"$out/summary.csv"
echo "CSV: $out/summary.csv"
# Ratios to rigid EASY (the row with pick "none" of each workload), for the plot.
awk -F, 'NR == 1 { print "workload,pick,cost_factor,share,turnaround,wait"; next }
  $2 == "none" { t[$1] = $7; w[$1] = $9; next }
  { printf "%s,%s,%s,%s,%.4f,%.4f\n", $1, $2, $3, $4, $7 / t[$1], (w[$1] > 0 ? $9 / w[$1] : 1) }' \
  "$out/summary.csv" | sort -t, -k1,1 -k2,2 -k3,3n -k4,4n >"$out/ratios.csv"
if command -v gnuplot >/dev/null; then
  gnuplot -c "$ROOT/bench/plots/cluster.gp" "$out/ratios.csv" "$out/cluster.png" &&
    echo "plot: $out/cluster.png"
fi
echo
python3 "$ROOT/bench/cluster_slurm.py" "$sim" "$out" ||
  echo "(the simulator is not within 15 % of the real Slurm run on every figure: see above)"
