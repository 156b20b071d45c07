#!/usr/bin/env bash
# checkpoint_levels.sh MPIEXEC PCMCTL HEAT2D_PCM HEAT2D_PLAIN — run under with_pcmd.sh. Checkpoint
# levels on one host (no root needed; tests/multihost/levels.py loses a whole host): heat2d_pcm on
# 2 processes with PCM_CHECKPOINT_LOCAL_DIR, a version every 10 iterations, flush every 3rd, so
# versions 10 and 30 are also on the shared level and 20 and 40 on the local one only. Rank 0
# holds its report of version 50 (PCM_TEST_SHARD_HOLD), so 40 stays the newest; the job is killed
# (kill_tree.sh: every process at once). Restarted on 3 processes it reads version 40 from the local level; killed
# again the same way and restarted with the local directory away, version 40 is refused as out
# of reach (its shards are on no level left) and it goes on from 30, the last shared one; with
# the directory back (a host that returns) the next restart reads version 40 again. With it gone
# for good the job finishes from 30. Every finished run has the plain run's checksum; a restart
# without PCM_CHECKPOINT_LOCAL_DIR is refused, naming it.
set -uo pipefail
# shellcheck source=tests/integration/small_heat2d.sh
source "$(dirname "$0")/small_heat2d.sh" "$@"
local_dir=$PCM_TEST_DIR/local
mkdir -p "$local_dir"
export PCM_CHECKPOINT_LOCAL_DIR=$local_dir PCM_CHECKPOINT_FLUSH_EVERY=3 PCM_LOG_LEVEL=info

# Runs job on NP processes (PCM_RESTART=RESTART) with rank 0's report of version HELD held (so
# that version is never made) until `CHECK...` succeeds, then kills it (kill_tree.sh)
# and waits until pcmd has seen it end. WHAT names the moment in a failure.
held_run() {
  local job=$1 out=$2 held=$3 np=$4 restart=$5 what=$6 hold=$PCM_TEST_DIR/hold.$1
  shift 6
  touch "$hold"
  PCM_JOB=$job PCM_RESTART=$restart PCM_TEST_SHARD_HOLD=$hold:$held:0 setsid "$mpiexec" -n "$np" \
    "$heat" "${args[@]}" >"$out" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 600); do
    "$@" && break
    kill -0 "$pid" 2>/dev/null || fail "$job ended before $what: $(show "$out")"
    sleep 0.1
  done
  "$PCM_KILL_TREE" "$pid"
  wait "$pid" 2>/dev/null
  rm -f "$hold"
  "$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not see $job end"
}

has_version() {  # has_version JOB IT: pcmd lists version IT of JOB as valid
  "$pcmctl" checkpoints "$1" --json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if int(sys.argv[1]) in [v["iteration"] for v in json.load(sys.stdin) if v["valid"]]
         else 1)' "$2" 2>/dev/null
}

# Runs the job until version 40 is its newest (50 held), then kills it.
run_until_40() {
  held_run "$1" "$2" 50 2 0 "version 40" has_version "$1" 40
  "$pcmctl" checkpoints "$1" --json | python3 -c '
import json, sys
vs = sorted(v["iteration"] for v in json.load(sys.stdin) if v["valid"])
assert vs and vs[-1] == 40, vs' || fail "$1: version 40 is not the newest"
}

# Restarts job on 3 processes; the run must end with the plain checksum, from version $2.
restart() {
  local job=$1 from=$2 out=$PCM_TEST_DIR/$1.restart.out
  PCM_JOB=$job PCM_RESTART=1 timeout 120 "$mpiexec" -n 3 "$heat" "${args[@]}" >"$out" 2>&1 \
    </dev/null || fail "$job: the restart exited with $?: $(show "$out")"
  grep -q "^heat2d: restarted from iteration $from " "$out" ||
    fail "$job: not restarted from $from: $(show "$out")"
  [ "$(sed -n 's/^checksum //p' "$out")" = "$want" ] || fail "$job: checksum differs: $(show "$out")"
  grep -o "restart from version $from: shards read from [^(]*" "$out" | head -1
}

job=lvl-local-$$
run_until_40 $job "$PCM_TEST_DIR/a.out"
ls "$local_dir/$job/v00000000000000000040/r0.h5" "$local_dir/$job/v00000000000000000040/r1.h5" \
  >/dev/null || fail "no local copies of version 40"
[ -e "$PCM_TEST_DIR/data/checkpoints/$job/v00000000000000000040/r0.h5" ] &&
  fail "version 40 is on the shared level, it should not be"
r=$PCM_TEST_DIR/noenv.out
PCM_CHECKPOINT_LOCAL_DIR= PCM_JOB=$job PCM_RESTART=1 timeout 120 "$mpiexec" -n 2 "$heat" "${args[@]}" \
  >"$r" 2>&1 </dev/null && fail "a restart without the local directory went on: $(show "$r")"
grep -q "restart with PCM_CHECKPOINT_LOCAL_DIR set" "$r" || fail "no word of the setting: $(show "$r")"
line=$(restart $job 40) || exit 1
echo "checkpoint_levels: local: $line"
grep -q "r0: local on .*, r1: local on " <<<"$line" || fail "not read from the local level: $line"

job=lvl-lost-$$
run_until_40 $job "$PCM_TEST_DIR/b.out"
mv "${local_dir:?}/$job" "$local_dir/$job.away"
# Restarted while the local level is away: version 40 is out of reach, the run goes on from 30.
# Its own version 40 is held (rank 0's report) and the run killed, so the old 40 stays newest.
out=$PCM_TEST_DIR/away.out
held_run $job "$out" 40 3 1 "its restart" grep -q "^heat2d: restarted from iteration" "$out"
grep -q "^heat2d: restarted from iteration 30 " "$out" || fail "not restarted from 30: $(show "$out")"
grep -q "version 40 is out of reach.*on no level" "$out" ||
  fail "version 40 was not refused for its missing shards: $(show "$out")"
# The local level is back (a host that returns): the next restart looks at version 40 again.
rm -rf "${local_dir:?}/$job"
mv "$local_dir/$job.away" "$local_dir/$job"
line=$(restart $job 40) || exit 1
echo "checkpoint_levels: local level away, then back: $line"
grep -q "r0: local on .*, r1: local on " <<<"$line" || fail "not read from the local level: $line"
# Gone for good: 40 is refused again and the job finishes from 30.
job=lvl-gone-$$
run_until_40 $job "$PCM_TEST_DIR/c.out"
rm -rf "${local_dir:?}/$job"
line=$(restart $job 30) || exit 1
echo "checkpoint_levels: local level lost: $line"
grep -q "version 40 is out of reach.*on no level" "$PCM_TEST_DIR/$job.restart.out" ||
  fail "version 40 was not refused for its missing shards: $(show "$PCM_TEST_DIR/$job.restart.out")"
echo "checkpoint_levels: ok"
