#!/usr/bin/env bash
# checkpoint_async.sh MPIEXEC PCMCTL PROGRAM — run under with_pcmd.sh. PCM_Checkpoint's background
# writing (tests/mpi/mpi_checkpoint_async.c): on 2 processes, versions 10-40, each changed in
# memory right after its call; version 20's shard on rank 1 made to fail (PCM_TEST_SHARD_FAIL):
# in the background the next wait reports it on every rank, with PCM_CHECKPOINT_ASYNC=0 the call
# itself does. pcmd then lists no version 20 and a valid 40 (committed by PCM_Finalize), and a
# restart on another process count finds the data of iteration 40, element for element.
set -uo pipefail
mpiexec=$1 pcmctl=$2 prog=$3 PCMD=$(dirname "$2")/pcmd
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
# pcmd killed (-9) and started again while version 30 is in flight: rank 0 has reported its shard
# to the old pcmd, rank 1 reports to the new one (PCM_TEST_SHARD_HOLD keeps it until then); the
# new pcmd commits the version from what the old one kept beside the shards, and the job goes on.
job=async-pcmd-$$
out=$PCM_TEST_DIR/pcmd.out hold=$PCM_TEST_DIR/hold
touch "$hold"
PCM_JOB=$job PCM_TEST_SHARD_HOLD=$hold:30:1 timeout 120 "$mpiexec" -n 2 "$prog" write >"$out" 2>&1 </dev/null &
run=$!
# pcmd keeps the reports of a version in the making in one log beside its shards (records.log).
kept=$PCM_TEST_DIR/data/checkpoints/$job/v00000000000000000030.tmp/records.log
for _ in $(seq 600); do [ -s "$kept" ] && break; sleep 0.1; done
[ -s "$kept" ] || fail "pcmd: rank 0's report of version 30 was never kept: $(show "$out")"
pid=$(cat "$PCM_TEST_DIR/pcmd.pid")
kill -9 "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
"$PCMD" --detach --pidfile "$PCM_TEST_DIR/pcmd.pid" --data-dir "$PCM_TEST_DIR/data" \
  --config "$PCM_CONFIG" 2>>"$PCM_TEST_DIR/pcmd.log" || fail "pcmd did not start again"
rm -f "$hold"
wait "$run" || fail "pcmd: the run exited with $?: $(show "$out")"
grep -q '^async: ok' "$out" || fail "pcmd: $(show "$out")"
"$pcmctl" checkpoints "$job" --json | python3 -c '
import json, sys
vs = {v["iteration"]: v["valid"] for v in json.load(sys.stdin)}
assert vs.get(40) is True, vs' || fail "pcmd: no valid version 40 after the restart"
grep -q "version 30: 1 of 2 shards reported before pcmd restarted" "$PCM_TEST_DIR/pcmd.log" ||
  fail "pcmd: the new pcmd did not take up version 30: $(tail -5 "$PCM_TEST_DIR/pcmd.log")"
echo "checkpoint_async: pcmd restarted during version 30: committed by the new pcmd"

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
