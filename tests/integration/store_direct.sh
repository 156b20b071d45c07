#!/usr/bin/env bash
# store_direct.sh BUILD PART — run under with_pcmd.sh. PCM_Store + PCM_Commit of keys the ranks
# write themselves into pcmd's direct-store directory (tests/mpi/mpi_store_direct.c):
#   basic: another process loads an uncommitted key; commits link the direct files into format-2
#          versions (no copy: the version's file is the direct one); a failed store keeps the old
#          data and makes the commit refuse; restarts on 1 and 3 processes get every bit back,
#          reading the shards themselves, and on 2 reading through pcmd.
#   mixed: rank 1 stores through pcmd (PCM_CHECKPOINT_DIRECT=0), rank 0 itself: one version.
#   async: PCM_STORE_ASYNC=1 (tests/mpi/mpi_store_direct.c's async): versions made behind the
#          job, a background write's failure reported by the next commit, restarts bit for bit;
#          kill -9 of back-to-back stores and commits behind the job: only whole versions.
#   kill:  kill -9 of the job mid-store/commit, then a pcmd that dies between the manifest and
#          the rename: only whole versions, and a restart reads the newest bit for bit.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1 part=$2
pcmctl=$build/pcmctl
prog=$build/tests/mpi_store_direct
job=sd-$part-$$
fail() { echo "store_direct ($part): FAIL: $*" >&2; exit 1; }
ckdir=$PCM_TEST_DIR/data/checkpoints/$job
n=262144  # 2 MiB of doubles a rank

restart_check() {  # restart_check NP ITERATION OLD_NP
  PCM_RESTART=1 PCM_JOB=$job timeout 120 "$MPIEXEC" -n "$1" "$prog" restart \
    >"$PCM_TEST_DIR/r$1.out" 2>&1 </dev/null || fail "restart on $1: $(cat "$PCM_TEST_DIR/r$1.out")"
  grep -q "^store_direct: restarted from iteration $2 ($3 -> $1 processes), 0 wrong" \
    "$PCM_TEST_DIR/r$1.out" || fail "restart on $1: $(cat "$PCM_TEST_DIR/r$1.out")"
  echo "restart on $1 processes from iteration $2: every bit back"
}

# kill_midway: the job's back-to-back stores and commits (16 MiB a rank) killed (-9, the whole
# job) at a random moment after its third iteration; every version left must be whole. Sets
# newest to the newest valid one.
kill_midway() {
  PCM_JOB=$job setsid "$MPIEXEC" -n 2 "$prog" loop 2097152 >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null &
  local mpi=$! versions
  "$pcmctl" wait "$job" --iteration 3 --timeout 120 >/dev/null || fail "job did not start"
  python3 -c "import random, time; time.sleep(random.random() * 0.5)"
  "$PCM_KILL_TREE" "$mpi" 2>/dev/null
  wait "$mpi" 2>/dev/null
  "$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not notice the job died"
  versions=$("$pcmctl" checkpoints "$job" --json) || fail "cannot list versions"
  echo "$versions" | python3 -c "import json,sys; v=json.load(sys.stdin); bad=[x for x in v if not x['valid']]; sys.exit(1 if bad else 0)" ||
    fail "a version is not whole: $versions"
  newest=$(newest_valid)
}

newest_valid() {
  "$pcmctl" checkpoints "$job" --json | python3 -c "import json,sys; v=[x['iteration'] for x in json.load(sys.stdin) if x['valid']]; print(max(v) if v else -1)"
}

case $part in
basic | mixed)
  if [ "$part" = basic ]; then
    PCM_JOB=$job timeout 120 "$MPIEXEC" -n 2 "$prog" basic $n >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null
  else
    PCM_JOB=$job timeout 120 "$MPIEXEC" -n 1 "$prog" basic $n : \
      -n 1 -env PCM_CHECKPOINT_DIRECT 0 "$prog" basic $n >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null
  fi
  [ $? -eq 0 ] || fail "the job failed: $(cat "$PCM_TEST_DIR/job.out")"
  cat "$PCM_TEST_DIR/job.out"
  for line in "rank 1 loaded rank 0's uncommitted x" "a failed store" "commit after a failed store was refused" "basic ok"; do
    grep -q "$line" "$PCM_TEST_DIR/job.out" || fail "no '$line': $(cat "$PCM_TEST_DIR/job.out")"
  done
  "$pcmctl" checkpoints "$job" || fail "cannot list versions"
  [ "$(newest_valid)" = 30 ] || fail "the newest valid version is not 30"
  v30=$ckdir/v00000000000000000030
  grep -q '"pcm-checkpoint-2"' "$v30/manifest.json" || fail "version 30 is not made of shards"
  # Rank 0's x: one file, the direct one, linked (not copied) into the version.
  direct=$(ls "$PCM_TEST_DIR"/data/jobs/"$job"/stage/s0.x.*.h5)
  [ "$(echo "$direct" | wc -l)" = 1 ] || fail "rank 0's x has $(echo "$direct" | wc -l) direct files"
  [ "$(stat -c %i "$direct")" = "$(stat -c %i "$v30/$(basename "$direct")")" ] ||
    fail "version 30 holds a copy of $direct, not the file"
  if [ "$part" = basic ]; then
    ls "$v30"/s1.x.*.h5 >/dev/null || fail "rank 1's x is not its direct file"
  else
    ls "$v30"/s1.x.*.h5 >/dev/null 2>&1 && fail "rank 1 stored through pcmd, yet a direct file"
    [ -e "$v30/r1.h5" ] || fail "no shard r1.h5 for rank 1's keys through pcmd"
  fi
  ls "$PCM_TEST_DIR"/data/jobs/"$job"/stage/
  restart_check 3 30 2
  restart_check 1 30 2
  # Processes that read through pcmd (as where the directory is not seen) get the same bits.
  PCM_CHECKPOINT_DIRECT=0 restart_check 2 30 2
  ;;
kill)
  # kill -9 of the whole job at a moment of its back-to-back stores and commits (16 MiB a rank).
  kill_midway
  [ "$newest" -ge 2 ] || fail "no valid version (newest $newest)"
  restart_check 3 "$newest" 2

  # pcmd dies between writing a version's manifest and its rename (kill -9 at the worst moment).
  kill "$(cat "$PCM_TEST_DIR/pcmd.pid")"
  for _ in $(seq 200); do [ -e "$PCM_TEST_DIR/pcmd.pid" ] || break; sleep 0.05; done  # removed at its end
  PCMD_TEST_CRASH_BEFORE_RENAME=1 "$build/pcmd" --detach --pidfile "$PCM_TEST_DIR/pcmd.pid" \
    --data-dir "$PCM_TEST_DIR/data" --config "$PCM_CONFIG" 2>>"$PCM_TEST_DIR/pcmd.log" ||
    fail "pcmd did not start"
  PCM_JOB=$job PCM_RECONNECT_MS=0 timeout 120 "$MPIEXEC" -n 2 "$prog" loop 131072 1000 \
    >"$PCM_TEST_DIR/crash.out" 2>&1 </dev/null && fail "the job survived pcmd's crash"
  # pcmd exits by itself (86) at that moment: gone, or a zombie not yet reaped.
  pid=$(cat "$PCM_TEST_DIR/pcmd.pid")
  for _ in $(seq 50); do
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
    [ "$state" = gone ] || [ "$state" = Z ] && break
    sleep 0.1
  done
  [ "$state" = gone ] || [ "$state" = Z ] ||
    fail "pcmd did not die before the rename: $(cat "$PCM_TEST_DIR/crash.out")"
  grep -q "went away" "$PCM_TEST_DIR/crash.out" || fail "the job ended otherwise: $(cat "$PCM_TEST_DIR/crash.out")"
  "$build/pcmd" --detach --pidfile "$PCM_TEST_DIR/pcmd.pid" --data-dir "$PCM_TEST_DIR/data" \
    --config "$PCM_CONFIG" 2>>"$PCM_TEST_DIR/pcmd.log" || fail "pcmd did not restart"
  "$pcmctl" checkpoints "$job"
  [ "$(newest_valid)" = "$newest" ] || fail "a version appeared although pcmd died before its rename"
  restart_check 2 "$newest" 2
  ;;
async)
  # PCM_STORE_ASYNC=1: the stores kept, the commits made behind the application.
  export PCM_STORE_ASYNC=1
  PCM_JOB=$job timeout 120 "$MPIEXEC" -n 2 "$prog" async $n >"$PCM_TEST_DIR/job.out" 2>&1 </dev/null ||
    fail "the job failed: $(cat "$PCM_TEST_DIR/job.out")"
  cat "$PCM_TEST_DIR/job.out"
  for line in "a failed background write failed the next commit: .*iteration 30" "async ok"; do
    grep -q "$line" "$PCM_TEST_DIR/job.out" || fail "no '$line': $(cat "$PCM_TEST_DIR/job.out")"
  done
  "$pcmctl" checkpoints "$job" || fail "cannot list versions"
  # 30 was never made; 60, committed behind the job, was settled before it ended.
  [ "$(newest_valid)" = 60 ] || fail "the newest valid version is not 60"
  [ -d "$ckdir/v00000000000000000030" ] && fail "version 30 exists although its write failed"
  restart_check 3 60 2
  restart_check 1 60 2
  # Back-to-back stores and commits behind the job, kill -9 at a random moment: only whole
  # versions, the newest read bit for bit.
  job=$job-kill ckdir=$PCM_TEST_DIR/data/checkpoints/$job
  kill_midway
  [ "$newest" -ge 1 ] || fail "no valid version (newest $newest)"
  restart_check 2 "$newest" 2
  ;;
*) fail "unknown part" ;;
esac
echo "store_direct ($part): ok"
