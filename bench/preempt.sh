#!/usr/bin/env bash
# Benchmark of a preemption (issue 37), side by side in one run (set up like the README commands):
# heat2d_pcm with a grid of each of BENCH_SIZES MiB (64 256 1024; 8192 columns) on 2 processes,
# writing its own version every BENCH_EVERY (20) iterations, is sent SIGTERM, at once to mpiexec
# and to every rank as Slurm's preemption sends it, BENCH_REPS (2) times each way, alternating:
#   stop  PCM's stop (docs/user/preemption.md): the ranks agree, write a last version, exit 75;
#         timed from the signal to the version committed (pcmd's event) and to mpiexec's exit;
#   kill  the same run with PCM_STOP_SIGNALS=none, as without PCM's stop: the signal ends it, and
#         a restart goes back to the job's last own version.
# Each way's iterations lost: the iterations done by the last PCM_Status call pcmd heard of (rank
# 0's polls, every 50 ms), less the version a restart would read. Prints the medians per size.
# Environment: BENCH_SIZES, BENCH_REPS, BENCH_EVERY.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sizes=${BENCH_SIZES:-64 256 1024} reps=${BENCH_REPS:-2} every=${BENCH_EVERY:-20}
bench_start_pcmd --hosts localhost:8
heat=$B/examples/heat2d/heat2d_pcm
ctl=$B/pcmctl
nx=8192
csv=$tmp/preempt.csv
echo "size_mib,way,version_s,exit_s,lost,interval" >"$csv"

now() { date +%s.%N; }
grid() { echo --nx $nx --ny $(($1 * 1024 * 1024 / 8 / nx)) --iters 100000000 --commit-every "$every"; }
json_of() { "$ctl" status "$1" --json; }
# The iteration pcmd last heard of; the newest valid version; the time of the stop's event.
iteration() { json_of "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["iteration"])'; }
newest() {
  "$ctl" checkpoints "$1" --json | python3 -c '
import json, sys
print(max([v["iteration"] for v in json.load(sys.stdin) if v["valid"]], default=0))'
}
stop_time() {
  json_of "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
print([t for e, t in zip(j["events"], j["event_times"]) if e.startswith("stopped at iteration")][-1])'
}
rank_pids() {  # the job's processes
  local f p
  for f in $(grep -lzxF "PCM_JOB=$1" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/environ}
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = heat2d_pcm ] && echo "$p"
  done
  return 0
}

one() {  # one WAY MIB K
  local way=$1 mib=$2 k=$3 job=pre-$1-$2-$3 signals=TERM,USR1,USR2 t0 t1 it v rc ranks
  [ "$way" = kill ] && signals=none
  # shellcheck disable=SC2046
  PCM_STOP_SIGNALS=$signals PCM_JOB=$job setsid mpiexec -n 2 "$heat" $(grid "$mib") \
    >"$tmp/$job.out" 2>&1 </dev/null &
  bench_mpi=$!
  # Past two of its own versions, at an iteration between two.
  "$ctl" wait "$job" --iteration $((2 * every + every / 2)) --timeout 900 >/dev/null
  ranks=$(rank_pids "$job")
  t0=$(now)
  # shellcheck disable=SC2086
  kill -TERM "$bench_mpi" $ranks 2>/dev/null || true
  rc=0
  wait "$bench_mpi" || rc=$?
  t1=$(now)
  bench_mpi=
  # The last PCM_Status call rank 0 told pcmd of (its polls: every 50 ms); a version of iteration
  # k holds k of them done (the loop resumes at k): it - 1 - k were lost.
  it=$(($(iteration "$job") - 1))
  if [ "$way" = stop ]; then
    # Each rank exits 75; hydra's own exit status, itself sent SIGTERM, is 75 or 0.
    [ "$(grep -o "heat2d: stopped" "$tmp/$job.out" | wc -l)" = 2 ] || {
      echo "preempt: $job: not both ranks stopped (mpiexec exited $rc)" >&2
      cat "$tmp/$job.out" >&2
      exit 1
    }
    v=$(newest "$job")
    echo "$mib,stop,$(python3 -c "print(f'{$(stop_time "$job") - $t0:.3f}')"),$(python3 -c "print(f'{$t1 - $t0:.3f}')"),$((it > v ? it - v : 0)),$every" >>"$csv"
  else
    # A failed run: its processes may be gone before pcmd looks; the version is what counts.
    v=$(newest "$job")
    echo "$mib,kill,,$(python3 -c "print(f'{$t1 - $t0:.3f}')"),$((it > v ? it - v : 0)),$every" >>"$csv"
  fi
  rm -rf "$tmp/data/checkpoints/$job"
}

echo "== SIGTERM to mpiexec and both ranks at once: PCM's stop against none; $reps times each"
for mib in $sizes; do
  for k in $(seq "$reps"); do
    for way in stop kill; do
      one "$way" "$mib" "$k"
      echo "  $mib MiB, $way, $k of $reps: $(tail -n 1 "$csv")"
    done
  done
done
bench_keep_csv "$csv"
bench_table preempt "$csv"
