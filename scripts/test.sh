#!/usr/bin/env bash
# The README's test command: set up (packages, MPI, build) and run the whole test suite, then the
# tests of the second MPI (scripts/test_openmpi.sh: Debian's Open MPI, ctest -L second-mpi), those
# of the third (scripts/test_stock_mpich.sh: Debian's own MPICH, which cannot spawn, ctest -L
# stock-mpich), the sanitizer build's tests (scripts/sanitize.sh) and 60 s of fuzzing
# (scripts/fuzz.sh --time 60).
# The builds those need (the Open MPI, stock MPICH and instrumented builds) run in the background
# at the lowest CPU priority while the main suite runs, so that they take the time its tests leave
# idle; their logs go to <build>/background-*.log. At the end a table gives each part's time.
# Extra arguments go to ctest (for example -L unit, or -R heat2d), and then only ctest runs;
# without them the label soak is left out (ctest -L soak in the build directory runs it).
# The main suite and the sanitizer build's tests run two tests at a time (CTEST_PARALLEL_LEVEL,
# default 2: most tests wait on pcmd, MPI or the namespace hosts more than they compute); the
# tests of several hosts take turns and the policy's tests run alone (tests/CMakeLists.txt). The
# Open MPI subset runs one at a time (below).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
t_start=$(date +%s)
bash "$ROOT/scripts/setup.sh"
# shellcheck source=/dev/null
source "$ROOT/scripts/.env"
if [ $# -eq 0 ]; then
  # The other MPIs' packages now, one installation after the other (their builds run side by side).
  PCM_MPI=openmpi bash "$ROOT/scripts/setup.sh" --packages-only
  PCM_MPI=stock-mpich bash "$ROOT/scripts/setup.sh" --packages-only
fi
if [ $# -gt 0 ]; then
  cd "$PCM_BUILD_DIR"
  exec ctest --output-on-failure --timeout 900 "$@"
fi

export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-2}
times=()
t_last=$t_start
# took PART: records the seconds since the previous part ended.
took() {
  local now
  now=$(date +%s)
  times+=("$1|$((now - t_last))")
  t_last=$now
}
took "set-up and main build"

# The other builds, in the background at the lowest priority: each a process group of its own,
# ended by its pid if this script stops first.
bg_pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
stop_background() {
  local pid
  for pid in "${bg_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
# A session of its own is also an autogroup of its own where the kernel groups sessions
# (sched_autogroup_enabled): the scheduler then shares the CPUs between the groups first, and a
# process's nice counts only within its group, so three builds at nice 19 took three quarters of
# the CPUs from the tests (the suite's early tests ran twice as long). The group's own nice
# (/proc/self/autogroup) puts the builds behind the tests again; without autogroups nice does.
bg_build() {
  local log=$PCM_BUILD_DIR/background-$1.log
  shift
  setsid nice -n 19 bash -c "{ echo 19 >/proc/self/autogroup; } 2>/dev/null; $*" >"$log" 2>&1 \
    </dev/null &
  bg_pids+=($!)
}
bg_build openmpi "bash '$ROOT/scripts/test_openmpi.sh' --build-only"
bg_build stock-mpich "bash '$ROOT/scripts/test_stock_mpich.sh' --build-only"
bg_build instrumented \
  "bash '$ROOT/scripts/sanitize.sh' --build-only && bash '$ROOT/scripts/fuzz.sh' --build-only"
# wait_background NAME PID: the build's exit status, with its log's end when it failed.
wait_background() {
  local rc=0
  wait "$2" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "test: the $1 build failed (exit $rc); the end of $PCM_BUILD_DIR/background-$1.log:" >&2
    tail -40 "$PCM_BUILD_DIR/background-$1.log" >&2
    exit $rc
  fi
}

rc=0
# The policy's tests read the machine's load as their hosts' (the namespace hosts share its CPUs):
# beside the background builds a host looked 100 % busy and was not grown onto. They run once the
# builds have ended.
quiet='^(multihost|slurm)\.policy$'
(cd "$PCM_BUILD_DIR" && ctest --output-on-failure --timeout 900 -LE soak -E "$quiet") || rc=$?
took "main suite"
wait_background openmpi "${bg_pids[0]}"
wait_background stock-mpich "${bg_pids[1]}"
wait_background instrumented "${bg_pids[2]}"
bg_pids=()
took "the other builds, after the suite"
(cd "$PCM_BUILD_DIR" && ctest --output-on-failure --timeout 900 -R "$quiet") || rc=$?
took "the policy's tests, alone"
if [ $rc -eq 0 ]; then
  # One test at a time: Open MPI's TCP transport takes every interface of the machine, and a
  # namespace test beside it adds and removes its bridge's address mid-run (a migration hung on
  # "bind on local address (10.77.44.254:0) failed: Cannot assign requested address").
  CTEST_PARALLEL_LEVEL=1 bash "$ROOT/scripts/test_openmpi.sh" || rc=$?
  took "Open MPI subset"
fi
if [ $rc -eq 0 ]; then
  bash "$ROOT/scripts/test_stock_mpich.sh" || rc=$?
  took "stock MPICH subset"
fi
if [ $rc -eq 0 ]; then
  bash "$ROOT/scripts/sanitize.sh" || rc=$?
  took "sanitizer build's tests"
fi
if [ $rc -eq 0 ]; then
  bash "$ROOT/scripts/fuzz.sh" --time "${PCM_FUZZ_SECONDS:-60}" || rc=$?
  took "fuzzing"
fi
echo
echo "test: time per part (seconds)"
for t in "${times[@]}"; do printf '  %-36s %6d\n' "${t%%|*}" "${t##*|}"; done
printf '  %-36s %6d\n' "whole run" $(($(date +%s) - t_start))
exit $rc
