#!/usr/bin/env bash
# Benchmark of the two MPIs side by side in one run (MPICH, the default, and Open MPI): the same
# reconfigurations on each, the MPIs alternating round by round:
#  - split 1 -> 2 of BENCH_MB MiB (bench/reshape.sh): its spawn phase (one spawn + merge
#    of the new process) and its data phase; the merge back 2 -> 1;
#  - heat2d ms/iteration after a split 1 -> 2 against heat2d launched on 2 (reshape.sh);
#  - migrations in one heat2d run (bench/runtime.sh, part 3).
# Sets up both builds first (scripts/setup.sh, and with PCM_MPI=openmpi). Prints each round's
# figures and the medians per MPI. Environment: BENCH_ROUNDS (3), BENCH_MB (64),
# BENCH_MIGRATIONS (3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${BENCH_ROUNDS:-3}
bash "$ROOT/scripts/setup.sh" >/dev/null
PCM_MPI=openmpi bash "$ROOT/scripts/setup.sh" >/dev/null
out=$(mktemp -d "${TMPDIR:-/tmp}/pcm-bench-mpis.XXXXXX")
trap 'rm -rf "$out"' EXIT
# run MPI ROUND: both benchmarks against that MPI's build, in a subshell with its environment.
run() {
  local env=$ROOT/scripts/.env
  [ "$1" = openmpi ] && env=$ROOT/scripts/.env.openmpi
  (
    # shellcheck source=/dev/null
    source "$env"
    export PCM_BENCH_BUILD_DIR=$PCM_BUILD_DIR
    BENCH_REPS=1 bash "$ROOT/bench/reshape.sh"
    BENCH_PARTS=3 BENCH_MIGRATIONS=${BENCH_MIGRATIONS:-3} bash "$ROOT/bench/runtime.sh"
  ) >"$out/$1-$2.txt" 2>&1 || { echo "$1, round $2 failed:"; tail -20 "$out/$1-$2.txt"; exit 1; }
}
for r in $(seq "$rounds"); do
  for mpi in mpich openmpi; do
    echo "round $r: $mpi ..." >&2
    run "$mpi" "$r"
  done
done
bench_table mpis "$out" "$rounds"
