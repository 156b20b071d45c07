# shellcheck shell=bash
# bench/lib.sh — sourced by the shell benchmark drivers (bench/*.sh; bench/run.sh for the Python
# ones): set-up as the README commands do, a scratch directory, a private pcmd on a free loopback
# port, stopped by its PID on exit, and the helpers every driver uses for its figures.
# After sourcing: ROOT, B (the build directory), tmp (scratch, removed on exit), PCM_CONFIG.
# Call bench_start_pcmd [PCMD OPTIONS...]; set bench_mpi to a background job's PID to have it
# killed on exit too. Figures: bench_median, bench_py (bench/benchlib.py's subcommands),
# bench_table NAME ARG... (the driver's table, bench/tables.py), bench_heat2d_ms (heat2d's ms per
# iteration from its output), bench_keep_csv and bench_plot (BENCH_CSV and BENCH_PNG).
# PCM_BENCH_BUILD_DIR=DIR skips the set-up and uses that build (mpiexec must be on PATH): ctest
# runs the benchmarks' quick variants that way, from inside the build.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${PCM_BENCH_BUILD_DIR:-}" ]; then
  B=$PCM_BENCH_BUILD_DIR
else
  bash "$ROOT/scripts/setup.sh" >/dev/null
  # shellcheck source=/dev/null
  source "$ROOT/scripts/.env"
  B=$PCM_BUILD_DIR
fi
mkdir -p "${BENCH_DIR:-${TMPDIR:-/tmp}}"
tmp=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/pcm-bench.XXXXXX")
export PCM_CONFIG=$tmp/pcmd.conf
bench_mpi=
# bench_kill [PID]: ends PID if one is given. Clean-up runs under set -e, where a kill of a
# process that has already ended must not stop it early (that left pcmd running).
bench_kill() { if [ -n "${1:-}" ]; then kill "$1" 2>/dev/null || true; fi; }
bench_cleanup() {
  bench_kill "$bench_mpi"
  if [ -f "$tmp/pcmd.pid" ]; then bench_kill "$(cat "$tmp/pcmd.pid")"; fi
  rm -rf "$tmp"
}
trap bench_cleanup EXIT
# bench_trap_failures NAME: on a failed exit, NAME and the last 30 lines of the file $log (the
# driver sets log to each step's output as it goes) go to stderr before the clean-up.
bench_trap_failures() {
  bench_failed_name=$1
  log=
  trap bench_on_exit EXIT
}
# progress TEXT: a time-stamped progress line on stderr, for long drivers.
progress() { echo "[$(date -u +%T)] $*" >&2; }
bench_on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$log" ] && [ -f "$log" ]; then
    echo "$bench_failed_name: FAILED (exit $rc); the last step printed:" >&2
    tail -n 30 "$log" >&2
  fi
  bench_cleanup
  exit "$rc"
}
# BENCH_PCMD_ARGS: more pcmd options for every benchmark (e.g. --curve, to measure encryption).
bench_start_pcmd() {
  # shellcheck disable=SC2086
  "$B/pcmd" --detach --pidfile "$tmp/pcmd.pid" --data-dir "$tmp/data" --config "$PCM_CONFIG" \
    "$@" ${BENCH_PCMD_ARGS:-} 2>"$tmp/pcmd.log"
}
# bench_build_rev REV TARGET...: builds those targets of an earlier revision once, exported with
# git archive into $PCM_CACHE_DIR/compare-SHA (with this checkout's MPI); sets sha and base (the
# revision's short hash and that directory; its build is $base/build).
bench_build_rev() {
  local rev=$1 cache=${PCM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pcm} t missing=0
  shift
  sha=$(git -C "$ROOT" rev-parse --short "$rev^{commit}")
  base=$cache/compare-$sha
  for t in "$@"; do [ -n "$(find "$base/build" -name "$t" -type f -perm -u+x 2>/dev/null | head -n 1)" ] || missing=1; done
  [ "$missing" -eq 0 ] && return 0
  echo "building $* of $sha in $base (once) ..." >&2
  if [ ! -f "$base/build/CMakeCache.txt" ]; then
    rm -rf "$base"
    mkdir -p "$base/src"
    git -C "$ROOT" archive "$sha" | tar -x -C "$base/src"
    local mpicc
    mpicc=$(command -v mpicc)
    cmake -S "$base/src" -B "$base/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCM_BUILD_TESTS=OFF \
      -DMPI_C_COMPILER="$mpicc" -DMPI_CXX_COMPILER="$(dirname "$mpicc")/mpicxx" >/dev/null
  fi
  cmake --build "$base/build" -j"$(nproc)" --target "$@" >/dev/null
}

# bench_py SUBCOMMAND ARG...: bench/benchlib.py (median, ratio, diff, rate, json-field, table,
# plot).
bench_py() { python3 "$ROOT/bench/benchlib.py" "$@"; }
# bench_median [--digits N] VALUE...: the median (4 digits after the point unless told).
bench_median() { bench_py median "$@"; }
# bench_table NAME ARG...: the table of driver NAME from its runs (bench/tables.py).
bench_table() { python3 "$ROOT/bench/tables.py" "$@"; }
# bench_heat2d_ms: heat2d's time per iteration (ms) from its output on stdin.
bench_heat2d_ms() { awk '/^heat2d: done/ {print $(NF-1)}'; }
# bench_keep_csv FILE: a copy of the driver's CSV at BENCH_CSV, when that is set.
bench_keep_csv() {
  if [ -n "${BENCH_CSV:-}" ]; then cp "$1" "$BENCH_CSV" && echo "CSV: $BENCH_CSV"; fi
}
# bench_plot NAME ARG...: bench/plots/NAME.gp drawn into BENCH_PNG, when that is set; ARG... are
# the script's arguments after its input and the PNG (bench_plot NAME CSV ARG... runs
# gnuplot -c NAME.gp CSV $BENCH_PNG ARG...).
bench_plot() {
  [ -n "${BENCH_PNG:-}" ] || return 0
  local name=$1 csv=$2
  shift 2
  bench_py plot "$name" "$BENCH_PNG" "$csv" "$BENCH_PNG" "$@"
}
