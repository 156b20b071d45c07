#!/usr/bin/env bash
# checkpoint_async.sh MPIEXEC PCMCTL PROGRAM — run under with_pcmd.sh. PCM_Checkpoint's background
# writing (tests/mpi/mpi_checkpoint_async.c): on 2 processes, versions 10-40, each changed in
# memory right after its call; version 20's shard on rank 1 made to fail (PCM_TEST_SHARD_FAIL):
# in the background the next wait reports it on every rank, with PCM_CHECKPOINT_ASYNC=0 the call
# itself does. pcmd then lists no version 20 and a valid 40 (committed by PCM_Finalize), and a
# restart on another process count finds the data of iteration 40, element for element.
set -uo pipefail
mpiexec=$1 pcmctl=$2 prog=$3
fail() { echo "checkpoint_async: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }

for mode in background sync; do
  job=async-$mode-$$
  out=$PCM_TEST_DIR/$mode.out
  env=(PCM_JOB=$job PCM_TEST_SHARD_FAIL=20:1)
  [ "$mode" = sync ] && env+=(PCM_CHECKPOINT_ASYNC=0)
  env "${env[@]}" timeout 120 "$mpiexec" -n 2 "$prog" write >"$out" 2>&1 </dev/null ||
    fail "$mode: the run exited with $?: $(show "$out")"
  grep -q '^async: ok' "$out" || fail "$mode: $(show "$out")"
  if [ "$mode" = background ]; then
    grep -q '^async: version 20 failed as asked: .*PCM_TEST_SHARD_FAIL' "$out" ||
      fail "$mode: the failure was not reported: $(show "$out")"
  fi
  "$pcmctl" checkpoints "$job" --json >"$PCM_TEST_DIR/$mode.json" || fail "$mode: pcmctl checkpoints"
  python3 - "$PCM_TEST_DIR/$mode.json" <<'PY' || fail "$mode: versions: $(cat "$PCM_TEST_DIR/$mode.json")"
import json, sys
vs = {v["iteration"]: v["valid"] for v in json.load(open(sys.argv[1]))}
assert 20 not in vs and vs.get(40) is True and max(vs) == 40, vs
PY
  np=3
  [ "$mode" = sync ] && np=1
  r=$PCM_TEST_DIR/$mode.restart.out
  PCM_JOB=$job PCM_RESTART=1 timeout 120 "$mpiexec" -n $np "$prog" check >"$r" 2>&1 </dev/null ||
    fail "$mode: the restart on $np exited with $?: $(show "$r")"
  grep -q '^async: ok' "$r" || fail "$mode: restart: $(show "$r")"
  echo "checkpoint_async: $mode: version 20 failed as asked, restart on $np from 40 element for element"
done
# Killed while version 40 is written in the background: the restart takes 40 if pcmd committed it
# before the kill, else 30, never a part of 40; every element as at that iteration.
job=async-kill-$$
out=$PCM_TEST_DIR/kill.out
PCM_JOB=$job timeout 120 "$mpiexec" -n 2 "$prog" kill 65536 >"$out" 2>&1 </dev/null &&
  fail "kill: the run did not die: $(show "$out")"
"$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not notice that the job died"
r=$PCM_TEST_DIR/kill.restart.out
PCM_JOB=$job PCM_RESTART=1 timeout 120 "$mpiexec" -n 3 "$prog" check 65536 30 >"$r" 2>&1 </dev/null ||
  fail "kill: the restart exited with $?: $(show "$r")"
grep -q '^async: ok' "$r" || fail "kill: restart: $(show "$r")"
echo "checkpoint_async: killed during version 40: $(grep -o 'restarted from version [0-9]*' "$r")"
echo "checkpoint_async: ok"
