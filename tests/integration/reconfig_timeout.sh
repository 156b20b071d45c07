#!/usr/bin/env bash
# reconfig_timeout.sh BUILD — run under with_pcmd.sh. PCM_RECONFIG_TIMEOUT_S bounds a split whose
# spawned program never calls MPI_Init (a script that sleeps; as a spawn that hangs in PMIx_Init):
#  A. with mpiexec alone, the old world's watchdog ends the job within the bound: a non-zero exit
#     well before the test's own timeout, its line on stderr and in the job's events, the job
#     failed in pcmd, and the sleeping script gone with the job;
#  B. under `pcmctl run --max-restarts 1` with versions committed, the timeout ends the first run,
#     pcmctl run relaunches it from the newest version and the job ends correctly (exit 0).
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
prog=$build/tests/mpi_reshape
fail() { echo "reconfig_timeout: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
line='(stuck in MPI_Comm_spawn) did not finish within 5 s (PCM_RECONFIG_TIMEOUT_S); ending this process'

# stuck_script NAME: an executable script whose every process (one per new rank) adds its pid to
# NAME.pids and sleeps 120 s (exec: the pid is the sleep's), never reaching MPI_Init.
stuck_script() {
  printf '#!/bin/sh\necho $$ >>"%s.pids"\nexec sleep 120\n' "$1" >"$1"
  chmod +x "$1"
}

# reaped NAME: the script's processes must be gone (given 10 s to be torn down); those that are
# not are killed by their pids, and the test FAILs.
reaped() {
  [ -s "$1.pids" ] || fail "the spawned script never ran (no $1.pids)"
  local pid left="" end=$((SECONDS + 10))
  for pid in $(cat "$1.pids"); do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null
      left="$left $pid"
    fi
  done
  [ -z "$left" ] || fail "the spawned script's processes$left outlived the job"
  echo "reconfig_timeout: the spawned script's processes ($(tr '\n' ' ' <"$1.pids")) are gone"
}

# ---- A. mpiexec alone ------------------------------------------------------------------------
stuck=$PCM_TEST_DIR/stuck-a
stuck_script "$stuck"
job=wd-$$
start=$SECONDS
PCM_JOB=$job PCM_RECONFIG_TIMEOUT_S=5 RESHAPE_SPAWN_COMMAND=$stuck timeout 300 "$MPIEXEC" -n 2 \
  "$prog" 40 4 block 100000 1500 >"$PCM_TEST_DIR/a.out" 2>"$PCM_TEST_DIR/a.err" &
mpi=$!
"$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start: $(show "$PCM_TEST_DIR/a.err")"
"$pcmctl" split "$job" 1 --into 2 || fail "split refused"
wait $mpi
rc=$?
elapsed=$((SECONDS - start))
[ $rc -ne 124 ] || fail "the job hung until timeout killed it: $(show "$PCM_TEST_DIR/a.err")"
[ $rc -ne 0 ] || fail "the job exited 0: $(show "$PCM_TEST_DIR/a.out")"
[ $elapsed -lt 60 ] || fail "the job took ${elapsed}s to end"
grep -q "^pcm: rank [01] of job $job: the split of rank 1 into 2 (command [0-9]*) $line" \
  "$PCM_TEST_DIR/a.err" || fail "no watchdog line on stderr: $(show "$PCM_TEST_DIR/a.err")"
echo "case A: the job ended with exit $rc after ${elapsed}s"
end=$((SECONDS + 10))
until "$pcmctl" status "$job" --json | grep -q '"state": "failed"'; do
  [ $SECONDS -lt $end ] || fail "pcmd does not show the job failed: $("$pcmctl" status "$job")"
  sleep 0.2
done
ev=$("$pcmctl" events "$job")
grep -q "pcm: rank 0 of job $job: the split of rank 1 into 2 .*$line" <<<"$ev" ||
  fail "the job's events do not show the timeout: $ev"
reaped "$stuck"

# ---- B. pcmctl run relaunches from the newest version -----------------------------------------
stuck=$PCM_TEST_DIR/stuck-b
stuck_script "$stuck"
job=wdrun-$$
out=$PCM_TEST_DIR/run.out
PCM_RECONFIG_TIMEOUT_S=5 RESHAPE_SPAWN_COMMAND=$stuck RESHAPE_COMMIT_EVERY=20 timeout 300 \
  "$pcmctl" run -n 2 --job "$job" --max-restarts 1 -- "$prog" 40 4 block 400 20000 \
  >"$out" 2>&1 </dev/null &
run=$!
"$pcmctl" wait "$job" --iteration 50 --timeout 120 || fail "job B did not start: $(show "$out")"
"$pcmctl" split "$job" 1 --into 2 || fail "split refused (B)"
wait $run
rc=$?
[ $rc -eq 0 ] || fail "pcmctl run exited with $rc: $(show "$out")"
grep -q "$line" "$out" || fail "the first run did not end by the watchdog: $(show "$out")"
grep -Eq '^reshape: restarted from iteration [0-9]+ \(2 -> 2 processes\), 0 wrong$' "$out" ||
  fail "the relaunch did not restart from a version: $(show "$out")"
k=$(sed -n 's/^reshape: restarted from iteration \([0-9]*\) .*/\1/p' "$out")
[ "$k" -ge 40 ] || fail "restarted from iteration $k, expected >= 40"
grep -q '^reshape: ok: 0 reconfigurations, 2 processes, 0 wrong' "$out" ||
  fail "wrong result: $(show "$out")"
"$pcmctl" events "$job" | grep -q "recovery 1 of 1: the run was lost" ||
  fail "no recovery event: $("$pcmctl" events "$job")"
reaped "$stuck"
echo "case B: relaunched from iteration $k and finished correctly"
echo "reconfig_timeout: ok"
