#!/usr/bin/env bash
# reshape_failures.sh BUILD — run under with_pcmd.sh. Reconfigurations that cannot work:
#  1. a split to a host outside the inventory and 2. a split after the program was deleted are
#     refused by pcmd before anything happens, and the job runs on to a correct result;
#  3. a split whose new process is killed before it joins ends the job with an error within a
#     bounded time (no hang), pcmctl says what happened, and what was stored is still there;
#  4. a spawn the library refuses (no such program) keeps the world and data, also (4b) when
#     PCM_Split names it after another program was spawned in the background (PCM_OVERLAP=1);
#     4c. PCM_Split names another program that exists: the split goes on with it, and the
#     processes spawned in the background end cleanly (the job, under a plain mpiexec, lives).
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
fail() { echo "reshape_failures: FAIL: $*" >&2; exit 1; }

# The program runs from a copy, so that case 2 can delete it.
prog=$PCM_TEST_DIR/reshape_copy
cp "$build/tests/mpi_reshape" "$prog"

job=fail-$$
PCM_JOB=$job timeout 300 "$MPIEXEC" -n 2 "$prog" 40 4 block 3000 1500 >"$PCM_TEST_DIR/a.out" 2>&1 &
mpi=$!
"$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start"
err=$("$pcmctl" split "$job" 0 --into 2 --host no-such-host 2>&1) && fail "split to an unknown host accepted"
grep -q inventory <<<"$err" || fail "unexpected message: $err"
echo "refused as expected: $err"
"$pcmctl" split "$job" 1 --into 2 || fail "a valid split was refused"
"$pcmctl" wait "$job" --reconfigurations 1 --timeout 120 || fail "the valid split did not complete"
rm -f "$prog"
err=$("$pcmctl" resize "$job" --to 4 2>&1) && fail "a split with the program deleted was accepted"
grep -q "no longer executable" <<<"$err" || fail "unexpected message: $err"
echo "refused as expected: $err"
wait $mpi || fail "the job failed after refused commands: $(cat "$PCM_TEST_DIR/a.out")"
grep -q '^reshape: ok: 1 reconfigurations, 3 processes, 0 wrong' "$PCM_TEST_DIR/a.out" ||
  fail "wrong result: $(cat "$PCM_TEST_DIR/a.out")"
# pcmd keeps the layout the split produced, where a restart will look for it.
h5dump -a /pcm_layout/command "$PCM_TEST_DIR"/data/jobs/"$job"/store.h5 | grep -q '"1"' ||
  fail "pcmd did not record the layout of the split"
"$pcmctl" status "$job" --json | grep -q '"layout_command": 1' || fail "status shows no layout"
echo "cases 1 and 2: refused, and the job ended correctly; the new layout is recorded"

# 4. A spawn the library itself refuses (the program it is told to spawn does not exist): every
#    process gets PCM_ERR_SPAWN and keeps its world and data; pcmctl shows the failure.
# 4b. The same with the spawn in the background (PCM_OVERLAP=1): PCM_Status spawned this program
#     before PCM_Split named another; those processes are withdrawn (they end with MPI_Finalize:
#     hydra, without -disable-auto-cleanup, killed the job in about 1 run of 3 under load when they
#     just exited) and the named program is spawned then, and refused.
# 4c. As 4b, with the named program another file that exists (a copy): the split is made with it.
cp "$build/tests/mpi_reshape" "$PCM_TEST_DIR/reshape_other"
for mode in 0-refused 1-refused 1-other; do
  overlap=${mode%%-*}
  job=rollback-$mode-$$
  out=$PCM_TEST_DIR/c$mode.out
  spawn=$PCM_TEST_DIR/no-such-program
  [ "$mode" = 1-other ] && spawn=$PCM_TEST_DIR/reshape_other
  PCM_OVERLAP=$overlap PCM_LOG_LEVEL=info PCM_JOB=$job \
    RESHAPE_SPAWN_COMMAND=$spawn timeout 300 "$MPIEXEC" -n 2 \
    "$build/tests/mpi_reshape" 40 4 cyclic 600 1500 >"$out" 2>&1 &
  mpi=$!
  "$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start"
  "$pcmctl" split "$job" 1 --into 2 || fail "split refused by pcmd"
  wait $mpi || fail "$mode: the job failed: $(tail -n 30 "$out")"
  if [ $overlap = 1 ]; then
    grep -q 'names another program than the one spawned in the background' "$out" ||
      fail "$mode: the background spawn was not given up: $(tail -n 30 "$out")"
    grep -q 'the old world withdrew the split' "$out" ||
      fail "$mode: the processes spawned in the background were not told: $(tail -n 30 "$out")"
  fi
  if [ "$mode" = 1-other ]; then
    grep -q '^reshape: ok: 1 reconfigurations, 3 processes, 0 wrong' "$out" ||
      fail "$mode: wrong result after the split: $(tail -n 30 "$out")"
    continue
  fi
  grep -q '^reshape: split refused at iter .*not executable' "$out" ||
    fail "$mode: no PCM_ERR_SPAWN: $(tail -n 30 "$out")"
  grep -q '^reshape: ok: 0 reconfigurations, 2 processes, 0 wrong' "$out" ||
    fail "$mode: wrong result after the rollback: $(tail -n 30 "$out")"
  "$pcmctl" status "$job" --json | grep -q 'split of rank 1 into 2 failed' ||
    fail "$mode: pcmctl does not show the failed split"
done
echo "cases 4, 4b and 4c: the spawn was refused inside the job, which kept its world and data," \
  "also when another program had been spawned in the background; another program that exists" \
  "was spawned, and the job split"

job=kill-$$
start=$SECONDS
PCM_JOB=$job RESHAPE_DIE_IF_SPLITTED=1 timeout 300 "$MPIEXEC" -n 2 "$build/tests/mpi_reshape" 40 4 block 100000 1500 \
  >"$PCM_TEST_DIR/b.out" 2>&1 &
mpi=$!
"$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start"
"$pcmctl" split "$job" 0 --into 2 || fail "split refused"
wait $mpi
rc=$?
elapsed=$((SECONDS - start))
[ $rc -ne 124 ] || fail "the job hung until timeout killed it"
# The failure must be seen. mpiexec's own exit code is not reliable here: when a spawned process
# is killed, hydra (MPICH 4.0.2) usually exits 255, but it exited 0 in 3 of 58 runs (an assertion
# fails in its proxy while it cleans up) and crashed in 4 more. So exit 0 is accepted only when
# both old ranks reported the failed split themselves, or when hydra said it ended the job for the
# killed process (its "BAD TERMINATION" banner: then it killed the old ranks too, before they could
# say anything; seen once in a CI run).
if [ $rc -eq 0 ] && ! grep -q "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" "$PCM_TEST_DIR/b.out"; then
  for r in 0 1; do
    grep -q "^reshape: rank $r: PCM_Split" "$PCM_TEST_DIR/b.out" ||
      fail "the job exited 0 and rank $r did not report the failed split: $(cat "$PCM_TEST_DIR/b.out")"
  done
fi
echo "case 3: the job ended with exit $rc after ${elapsed}s"
end=$((SECONDS + 10))
until "$pcmctl" status "$job" --json | grep -q '"state": "failed"'; do
  [ $SECONDS -lt $end ] || fail "pcmd does not show the job failed: $("$pcmctl" status "$job")"
  sleep 0.2
done
"$pcmctl" status "$job"
"$pcmctl" status "$job" --json | grep -q 'split of rank 0 into 2 (command [0-9]*) did not complete' ||
  fail "pcmctl does not say which reconfiguration failed"
# What rank 0 stored before the split is intact in pcmd's store.
h5dump -d /rank_0/reconfigs "$PCM_TEST_DIR"/data/jobs/"$job"/store.h5 | grep -q '(0): 1' ||
  fail "the data stored before the failure is gone"
echo "reshape_failures: ok"
