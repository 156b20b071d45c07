#!/usr/bin/env bash
# The whole performance report (issue: "Benchmarks, the paper's experiments, and pictures"):
# every benchmark script in turn, on this machine, each printing its figures, with their CSVs and
# PNG plots collected in one directory together with report.txt (everything printed) and
# machine.txt (what it ran on). Takes about 15-20 minutes on a 2-core machine.
# Environment: BENCH_OUT (default <build>/bench-report); the scripts' own BENCH_* settings pass
# through (BENCH_REPS applies to all of them).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
out=${BENCH_OUT:-$PCM_BUILD_DIR/bench-report}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee "$out/report.txt") 2>&1

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
  echo "kernel: $(uname -sr)"
  echo "filesystem of ${TMPDIR:-/tmp}: $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}')"
  echo "mpi: $(mpichversion 2>/dev/null | awk -F':' '/Version|Device/ {gsub(/^[ \t]+/, "", $2); printf "%s ", $2}')"
  echo "compiler: $(cc --version | head -1)"
} | tee "$out/machine.txt"

step() { printf '\n######## %s\n' "$*"; }
t0=$(date +%s)
step "1. runtime: PCM_Status per call, heat2d overhead at 512x512, migrations"
bash "$ROOT/bench/runtime.sh"
step "2. overhead against granularity (paper Figure 8)"
BENCH_CSV=$out/overhead.csv BENCH_PNG=$out/overhead.png bash "$ROOT/bench/overhead.sh"
step "3. live split/merge against stop-and-restart, 16 MiB to 1 GiB"
BENCH_CSV=$out/malleability.csv BENCH_PNG=$out/malleability.png bash "$ROOT/bench/malleability.sh"
step "4. granularity: heat2d on 1 to 8 processes (paper Figure 1)"
BENCH_CSV=$out/granularity.csv BENCH_PNG=$out/granularity.png bash "$ROOT/bench/granularity.sh"
step "5. expansion and gradual adaptation timeline (paper Figures 9 and 10)"
BENCH_OUT=$out/timeline bash "$ROOT/bench/timeline.sh"
step "6. redistribution against memcpy (split/merge of 64 MiB) and heat2d after a split"
bash "$ROOT/bench/reshape.sh"
step "7. checkpoint write and restart read against write()+fsync, read() and dd"
bash "$ROOT/bench/checkpoint.sh"
printf '\nbench_report: done in %d s; report, CSVs and plots in %s:\n' $(($(date +%s) - t0)) "$out"
find "$out" -maxdepth 2 -name '*.png' -o -maxdepth 2 -name '*.csv' | sort | sed 's/^/  /'
