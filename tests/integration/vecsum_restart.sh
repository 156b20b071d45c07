#!/usr/bin/env bash
# vecsum_restart.sh BUILD — run under with_pcmd.sh. vecsum (the pcm.hpp example) checkpoints every
# 50 iterations and is killed with SIGKILL (kill_tree.sh: mpiexec, its proxy and every rank at once)
# mid-run; restarted with PCM_RESTART=1 on 1 and 3 processes, it resumes from the newest version and
# verifies exactly.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
vecsum=$build/examples/vecsum/vecsum
job=vecsum-restart-$$
fail() { echo "vecsum_restart: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
n=997
iters=1000

PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$vecsum" $n $iters cyclic 3000 50 >"$PCM_TEST_DIR/run.out" \
  2>&1 </dev/null &
mpi=$!
"$pcmctl" wait "$job" --iteration 300 --timeout 120 ||
  fail "the job did not reach iteration 300: $(show "$PCM_TEST_DIR/run.out")"
"$PCM_KILL_TREE" "$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 || fail "pcmd did not notice that the job died"
grep -q '^vecsum: ok' "$PCM_TEST_DIR/run.out" && fail "the job finished before it was killed"
"$pcmctl" checkpoints "$job" || fail "cannot list the job's versions"

first=
for np in 1 3; do
  out=$PCM_TEST_DIR/r$np.out
  # The last restart checkpoints again as it runs (and must not trip over the version it came from).
  every=0
  [ $np -eq 3 ] && every=50
  PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n $np "$vecsum" $n $iters cyclic 0 $every \
    >"$out" 2>&1 </dev/null || fail "restart on $np exited with $?:
$(show "$out")"
  k=$(sed -n 's/^vecsum: restarted from iteration \([0-9]*\) on '"$np"' processes$/\1/p' "$out")
  [ -n "$k" ] || fail "restart on $np printed no 'restarted from iteration K on $np processes':
$(show "$out")"
  # The kill came at iteration 300 or later; the version of 300 may not have been committed yet.
  [ "$k" -ge 250 ] || fail "restart on $np resumed from iteration $k, expected >= 250"
  [ -z "$first" ] || [ "$k" = "$first" ] ||
    fail "restart on $np resumed from iteration $k, the first one from $first"
  first=$k
  grep -qE "^vecsum: ok: [0-9]+ reconfigurations, $np processes, 0 wrong$" "$out" ||
    fail "restart on $np did not verify:
$(show "$out")"
  echo "vecsum_restart: restart on $np processes from iteration $k: ok"
done
"$pcmctl" checkpoints "$job" | grep -qE '(^|[^0-9])950([^0-9]|$)' ||
  fail "the restart with checkpoints left no version of iteration 950: $("$pcmctl" checkpoints "$job")"
echo "vecsum_restart: ok: resumed from iteration $first on 1 and 3 processes"
