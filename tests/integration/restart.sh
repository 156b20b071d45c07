#!/usr/bin/env bash
# restart.sh BUILD — run under with_pcmd.sh. A job commits a version every 10 iterations and is
# killed with SIGKILL (kill_tree.sh: mpiexec, its proxy and every rank at once) mid-run; restarted
# with PCM_RESTART=1 on 1, 2, 3 and 4 processes, it resumes from the newest committed version with
# every element of its distributed array in place. With the newest version corrupted, a restart
# falls back to the one before; with no valid version, it fails cleanly.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
prog=$build/tests/mpi_reshape
job=restart-$$
fail() { echo "restart: FAIL: $*" >&2; exit 1; }
args=(41 6 cyclic)

RESHAPE_COMMIT_EVERY=10 PCM_JOB=$job setsid "$MPIEXEC" -n 3 "$prog" "${args[@]}" 1000000 2000 \
  >"$PCM_TEST_DIR/run.out" 2>&1 </dev/null &
mpi=$!
"$pcmctl" wait "$job" --iteration 35 --timeout 120 || fail "the job did not reach iteration 35"
"$PCM_KILL_TREE" "$mpi"
wait "$mpi" 2>/dev/null
"$pcmctl" wait "$job" --ended --timeout 30 || fail "pcmd did not notice that the job died"
"$pcmctl" status "$job"
"$pcmctl" checkpoints "$job" || fail "cannot list versions"
newest=$("$pcmctl" checkpoints "$job" --json | python3 -c "import json,sys; v=[x['iteration'] for x in json.load(sys.stdin) if x['valid']]; print(max(v))")
[ "$newest" -ge 30 ] || fail "the newest valid version is $newest"

for np in 1 2 3 4; do  # M = 1, M < N, M = N and M > N
  PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n $np "$prog" "${args[@]}" $((newest + 15)) 1000 \
    >"$PCM_TEST_DIR/r$np.out" 2>&1 </dev/null || fail "restart on $np: $(cat "$PCM_TEST_DIR/r$np.out")"
  grep -q "^reshape: restarted from iteration $newest (3 -> $np processes), 0 wrong" "$PCM_TEST_DIR/r$np.out" ||
    fail "restart on $np: $(cat "$PCM_TEST_DIR/r$np.out")"
  grep -q "^reshape: ok: 0 reconfigurations, $np processes, 0 wrong" "$PCM_TEST_DIR/r$np.out" ||
    fail "restart on $np did not finish: $(cat "$PCM_TEST_DIR/r$np.out")"
  echo "restart on $np processes from iteration $newest: ok"
done

# The newest version corrupted: one flipped byte in the middle of its data file.
file=$(ls "$PCM_TEST_DIR"/data/checkpoints/"$job"/v*"$newest".h5)
python3 - "$file" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(os.path.getsize(sys.argv[1]) // 2); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x10]))
PY
"$pcmctl" verify "$job" && fail "verify did not notice the corruption"
PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 2 "$prog" "${args[@]}" $((newest + 5)) 1000 \
  >"$PCM_TEST_DIR/f.out" 2>&1 </dev/null || fail "restart after corruption: $(cat "$PCM_TEST_DIR/f.out")"
older=$((newest - 10))
grep -q "^reshape: restarted from iteration $older (3 -> 2 processes), 0 wrong" "$PCM_TEST_DIR/f.out" ||
  fail "no fallback to $older: $(cat "$PCM_TEST_DIR/f.out")"
echo "fallback to iteration $older after corrupting $newest: ok"

# No version at all: a clean error on every rank, no hang.
PCM_RESTART=1 PCM_JOB=never-committed timeout 120 "$MPIEXEC" -n 2 "$prog" "${args[@]}" 10 1000 \
  >"$PCM_TEST_DIR/n.out" 2>&1 </dev/null && fail "a restart without any version succeeded"
grep -q "no checkpoint version" "$PCM_TEST_DIR/n.out" || fail "unclear error: $(cat "$PCM_TEST_DIR/n.out")"
echo "restart: ok"
