#!/usr/bin/env bash
# epoch_fence.sh MPIEXEC PCMCTL HEAT2D_PCM HEAT2D_PLAIN — run under with_pcmd.sh. A process that
# outlives its run cannot write the job's data (pcmd's fence, ops::Fence): every request of a
# job's process carries its run (register's incarnation), and pcmd refuses one from a run that has
# ended or been replaced.
# heat2d_pcm on 2 processes writes a version every 10 iterations at once (PCM_CHECKPOINT_ASYNC=0);
# rank 0 holds its report of version 50 (PCM_TEST_SHARD_HOLD), so its main thread waits there,
# outside MPI, while rank 1 has reported. The launcher (mpiexec and its proxy) is killed first, so
# that rank 0 outlives it as ranks do when a launcher dies (both stopped, then killed: a proxy
# that sees mpiexec go kills its ranks), then rank 1: pcmd fails the run.
#  A. The hold is lifted while the run is failed: rank 0's report of 50 is refused ("run N has
#     failed"), 50 is not made (before the fence pcmd committed it), and a restart on 3 processes
#     resumes from 40 with the plain run's checksum.
#  B. The same, but a new run of the job (a restart, held at its own version 50) is registered
#     before the hold is lifted: the old rank 0's report is refused ("run N+1 is the job's now")
#     and the new run's versions are its own; it finishes with the plain checksum.
set -uo pipefail
# shellcheck source=tests/integration/small_heat2d.sh
source "$(dirname "$0")/small_heat2d.sh" "$@"
# The output is read whole (split_rollback.sh says why).
version=$("$mpiexec" --version 2>&1 || true)
if [[ $version != *HYDRA* ]]; then
  echo "SKIPPED: $mpiexec is not MPICH's hydra (the test finds ranks by hydra's PMI_RANK)"
  exit 77
fi
export PCM_CHECKPOINT_ASYNC=0 PCM_LOG_LEVEL=info
log=$PCM_TEST_DIR/pcmd.log

# until WHAT PID CHECK...: waits (60 s at most) until CHECK succeeds while process PID runs.
until_ok() {
  local what=$1 pid=$2
  shift 2
  for _ in $(seq 600); do
    "$@" && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      # One more look: PID may have ended just after the last one (refused, then gone).
      "$@" && return 0
      fail "the job ended before $what: $(show "$cur_out")"
    fi
    sleep 0.1
  done
  fail "no $what within 60 s"
}
# held_then_failed JOB OUT: the first run, held at 50 on rank 0, its launcher gone, failed by rank
# 1's loss. Sets $r0 (the surviving rank 0).
held_then_failed() {
  local job=$1 out=$2 hold=$PCM_TEST_DIR/hold.$1 mpi r1 proxy
  cur_out=$out
  touch "$hold"
  PCM_JOB=$job PCM_TEST_SHARD_HOLD=$hold:50:0 "$mpiexec" -n 2 "$heat" "${args[@]}" >"$out" 2>&1 \
    </dev/null &
  mpi=$!
  until_ok "rank 0 held its report of version 50" $mpi test -e "$hold.held"
  [ "$(newest "$job")" = 40 ] || fail "$job: before the loss, the newest version is not 40"
  r0=$(rank_pid "$job" 0)
  r1=$(rank_pid "$job" 1)
  [ -n "$r0" ] && [ -n "$r1" ] || fail "$job: the processes of ranks 0 and 1 not found"
  # Both are stopped before either is killed: a proxy that outlives mpiexec by a moment (under
  # load) sees its upstream close and kills its ranks with SIGKILL, rank 0 with them.
  proxy=$(ps -o ppid= -p "$r0" | tr -d ' ')
  kill -STOP $mpi "$proxy"
  kill -KILL $mpi "$proxy"
  wait $mpi 2>/dev/null
  kill -KILL "$r1"
  "$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not see $job fail"
  "$pcmctl" status "$job" | grep -q "failed" || fail "$job is not failed: $("$pcmctl" status "$job")"
  kill -0 "$r0" 2>/dev/null || fail "$job: rank 0 did not outlive its launcher: $(show "$out")"
}
refused() {  # refused PATTERN: pcmd's log has a fence refusal matching it
  grep -q "refused: job .*$1" "$log"
}

# A.
job=fence-a-$$
held_then_failed $job "$PCM_TEST_DIR/a.out"
rm -f "$PCM_TEST_DIR/hold.$job"
until_ok "pcmd's refusal of the failed run's report" "$r0" \
  refused "'$job': run [0-9]* has failed; its processes may no longer write the job's data ('shard_done')"
"$PCM_KILL_TREE" "$r0"
[ "$(newest $job)" = 40 ] || fail "$job: a version after 40 was made by the failed run: $("$pcmctl" checkpoints $job)"
out=$PCM_TEST_DIR/a.restart.out
PCM_JOB=$job PCM_RESTART=1 PCM_CHECKPOINT_ASYNC=1 timeout 120 "$mpiexec" -n 3 "$heat" "${args[@]}" \
  >"$out" 2>&1 </dev/null || fail "$job: the restart exited with $?: $(show "$out")"
grep -q "^heat2d: restarted from iteration 40 " "$out" || fail "$job: not restarted from 40: $(show "$out")"
[ "$(sed -n 's/^checksum //p' "$out")" = "$want" ] || fail "$job: checksum differs: $(show "$out")"
echo "epoch_fence: A: the failed run's report of version 50 refused; restart from 40, checksum $want"

# B.
job=fence-b-$$
held_then_failed $job "$PCM_TEST_DIR/b.out"
old=$r0
hold=$PCM_TEST_DIR/hold.$job.new
touch "$hold"
out=$PCM_TEST_DIR/b.restart.out
PCM_JOB=$job PCM_RESTART=1 PCM_TEST_SHARD_HOLD=$hold:50:0 timeout 120 "$mpiexec" -n 2 "$heat" \
  "${args[@]}" >"$out" 2>&1 </dev/null &
new=$!
cur_out=$out
until_ok "the new run held its own report of version 50" $new test -e "$hold.held"
rm -f "$PCM_TEST_DIR/hold.$job"
cur_out=$PCM_TEST_DIR/b.out
until_ok "pcmd's refusal of the old run's report" "$old" \
  refused "'$job': 'shard_done' comes from a process of run [0-9]* of the job, and run [0-9]* is the job's now"
"$PCM_KILL_TREE" "$old"
rm -f "$hold"
wait $new || fail "$job: the new run exited with $?: $(show "$out")"
grep -q "^heat2d: restarted from iteration 40 " "$out" || fail "$job: not restarted from 40: $(show "$out")"
[ "$(sed -n 's/^checksum //p' "$out")" = "$want" ] || fail "$job: checksum differs: $(show "$out")"
[ "$(newest $job)" = 80 ] || fail "$job: the newest version is not the new run's 80: $("$pcmctl" checkpoints $job)"
echo "epoch_fence: B: the replaced run's report refused while the new run made its own version 50; checksum $want"
echo "epoch_fence: ok"
