#!/usr/bin/env bash
# pcmd_kill.sh BUILD TRIALS SEED — run under with_pcmd.sh. A job commits a version every
# iteration while pcmd is killed with SIGKILL at a seeded random moment; a new pcmd on the same
# data directory must find only whole versions, and a job restarted from the newest one must
# get every element back. TRIALS times.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1 trials=$2 seed=$3
pcmctl=$build/pcmctl
fail() { echo "pcmd_kill: FAIL (seed $seed, trial $t): $*" >&2; exit 1; }
RANDOM=$seed
start_pcmd() {
  "$build/pcmd" --detach --pidfile "$PCM_TEST_DIR/pcmd.pid" --data-dir "$PCM_TEST_DIR/data" \
    --config "$PCM_CONFIG" 2>>"$PCM_TEST_DIR/pcmd.log" || fail "pcmd did not restart"
}
for t in $(seq "$trials"); do
  job=kill-$seed-$t
  RESHAPE_COMMIT_EVERY=1 PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$build/tests/mpi_reshape" 33 512 block \
    1000000 0 >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null &
  mpi=$!
  "$pcmctl" wait "$job" --iteration 3 --timeout 120 >/dev/null || fail "job did not start"
  # A random moment within the next ~0.3 s of back-to-back commits.
  python3 -c "import time; time.sleep($((RANDOM % 300)) / 1000)"
  kill -9 "$(cat "$PCM_TEST_DIR/pcmd.pid")"
  # The job loses pcmd (its next commit fails); end it, whatever it is doing.
  "$PCM_KILL_TREE" "$mpi" 2>/dev/null
  wait "$mpi" 2>/dev/null
  start_pcmd
  versions=$("$pcmctl" checkpoints "$job" --json) || fail "cannot list versions"
  newest=$(echo "$versions" | python3 -c "import json,sys; v=[x['iteration'] for x in json.load(sys.stdin) if x['valid']]; print(max(v) if v else -1)")
  [ "$newest" -ge 1 ] || fail "no valid version: $versions"
  PCM_RESTART=1 PCM_JOB=$job timeout 120 "$MPIEXEC" -n 2 "$build/tests/mpi_reshape" 33 512 block \
    $((newest + 2)) 0 >"$PCM_TEST_DIR/r.out" 2>&1 </dev/null || fail "restart failed: $(cat "$PCM_TEST_DIR/r.out")"
  grep -q "^reshape: restarted from iteration $newest (2 -> 2 processes), 0 wrong" "$PCM_TEST_DIR/r.out" ||
    fail "restart did not get version $newest back: $(cat "$PCM_TEST_DIR/r.out")"
  echo "trial $t: pcmd killed after $(echo "$versions" | python3 -c "import json,sys; print(len(json.load(sys.stdin)))") versions listed; newest valid $newest restored exactly"
done
echo "pcmd_kill: ok ($trials trials, seed $seed)"
